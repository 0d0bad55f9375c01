"""Loaded rules kept between runs, in the result cache's directory.

An entry is named after everything the loaded rules depend on: hpu-port's
version and code, and the path, size and modification time of every rule
file. A rule file that changes, or an edited checkout, gets a new entry; a
damaged or unreadable entry is ignored and the rules are loaded again.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Optional

from hpu_port import __version__, tempfiles
from hpu_port._compat import blake2b
from hpu_port.cache import code_stamp

SUBDIRECTORY = "rules"
# Entries from other versions and rule files pile up; a few are enough.
KEEP_ENTRIES = 8


def key(paths: list[Path]) -> Optional[str]:
    """The entry for these rule files; None if one cannot be read (the loader then says why)."""
    digest = blake2b(f"{__version__}\n{code_stamp()}\n".encode())
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        digest.update(f"{os.path.abspath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def read(directory: Path, name: Optional[str]) -> Optional[list]:
    if name is None:
        return None
    try:
        with open(directory / SUBDIRECTORY / f"{name}.pickle", "rb") as handle:
            rules = pickle.load(handle)
    except Exception:  # missing, damaged, or written by another version: load afresh
        return None
    return rules if isinstance(rules, list) else None


def write(directory: Path, name: Optional[str], rules: list) -> None:
    if name is None:
        return
    directory = directory / SUBDIRECTORY
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfiles.mkstemp(directory, ".tmp-", ".pickle")
        with os.fdopen(handle, "wb") as out:
            pickle.dump(rules, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, directory / f"{name}.pickle")
        _prune(directory)
    except OSError:
        return  # a cache that cannot be written is skipped


def _prune(directory: Path) -> None:
    entries = sorted(directory.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in entries[KEEP_ENTRIES:]:
        stale.unlink(missing_ok=True)
