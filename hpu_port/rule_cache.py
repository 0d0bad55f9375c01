"""Loaded rules kept between runs, in the result cache's folder.

An entry is named after everything the loaded rules depend on: hpu-port's
version and code, and the path, size and modification time of every rule
file. A rule file that changes, or an edited checkout, gets a new entry; a
damaged, planted or unreadable entry is ignored and the rules are loaded again.

Entries are JSON sealed with the user's key (``hpu_port.sealed``), never a
format that can run code: the rules they hold become the text written into
the user's files, so they are checked as carefully as code would be. Only the
types a loaded rule is made of are rebuilt (``_TYPES``, ``_decode``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Optional

from hpu_port import __version__, sealed
from hpu_port._compat import blake2b
from hpu_port.cache import code_stamp
from hpu_port.model import Example, ProjectHold, Rule, Screening
from hpu_port.shapes import ImportOf, TieOfMoved
from hpu_port.triggers import Trigger

SUBDIRECTORY = "rules"
# Entries from other versions and rule files pile up; a few are enough.
KEEP_ENTRIES = 8
_SUFFIX = ".json"
_MAX_ENTRY_BYTES = 64 << 20
FORMAT = 2

# The dataclasses a loaded rule is built of: the only classes an entry may name.
_TYPES = {cls.__name__: cls for cls in (Rule, Example, ProjectHold, Screening, Trigger, ImportOf, TieOfMoved)}


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
    secret = sealed.key()
    if name is None or secret is None:
        return None
    with sealed.Folder(directory / SUBDIRECTORY, create=False) as folder:
        data = folder.read(name + _SUFFIX, _MAX_ENTRY_BYTES) if folder is not None else None
    body = sealed.unseal(name, data, secret) if data is not None else None
    if body is None:
        return None
    try:
        stored = json.loads(body, object_hook=_decode)
        if not isinstance(stored, list) or len(stored) != 2 or stored[0] != FORMAT:
            return None
        rules = stored[1]
    except (KeyError, TypeError, ValueError, re.error, RecursionError):
        return None  # damaged, or written by another version: load afresh
    return rules if isinstance(rules, list) and all(isinstance(r, Rule) for r in rules) else None


def write(directory: Path, name: Optional[str], rules: list) -> None:
    secret = sealed.key()
    if name is None or secret is None:
        return
    # A list, not an object: every JSON object in an entry is an encoded value.
    body = json.dumps({"list": [FORMAT, _encode(rules)]}, separators=(",", ":")).encode()
    try:
        with sealed.Folder(directory, create=True) as cache:
            if cache is None:
                return
            cache.ensure_tag()
        with sealed.Folder(directory / SUBDIRECTORY, create=True) as folder:
            if folder is None:
                return
            folder.write(name + _SUFFIX, sealed.seal(name, body, secret))
            _prune(folder)
    except OSError:
        return  # a cache that cannot be written is skipped


def _prune(folder: sealed.Folder) -> None:
    entries = [name for name in folder.names() if name.endswith(_SUFFIX)]
    entries.sort(key=folder.modified, reverse=True)
    for stale in entries[KEEP_ENTRIES:]:
        folder.remove(stale)


# Every value that is not a JSON scalar is written as a one-key object naming
# its type (a dataclass's fields in their order), so that a tuple comes back a
# tuple and bytes come back bytes; the JSON parser hands each such object to
# ``_decode`` as it reads it, inner ones first.
def _encode(value):
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, frozenset) and value and all(isinstance(item, bytes) for item in value):
        # Trigger words: most of an entry, so written as plain strings.
        return {"frozenbytes": sorted(item.decode("latin-1") for item in value)}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return {type(value).__name__: [_encode(item) for item in items]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, bytes):
        return {"bytes": value.decode("latin-1")}
    if isinstance(value, (re.Pattern, LazyPattern)):
        return {"pattern": [_encode(value.pattern), value.flags]}
    if dataclasses.is_dataclass(value) and _TYPES.get(type(value).__name__) is type(value):
        return {type(value).__name__: [_encode(getattr(value, f.name)) for f in dataclasses.fields(value)]}
    raise TypeError(f"a loaded rule holds a {type(value).__name__}, which the rule cache cannot keep")


def _decode(tagged: dict):
    if len(tagged) != 1:
        raise ValueError("not an encoded value")
    (tag, payload), = tagged.items()
    return _DECODERS[tag](payload)  # KeyError: a type no loaded rule is made of


def _pairs(payload) -> dict:
    return {key: value for key, value in _as(payload, list)}


def _pattern(payload) -> "LazyPattern":
    pattern, flags = _as(payload, list)
    return LazyPattern(_as(pattern, (str, bytes)), _as(flags, int))


class LazyPattern:
    """A regular expression compiled when first used: most of a run's rules
    never look at a file, and compiling all their patterns would cost a
    pre-commit run more than the rest of reading the cache."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern, flags: int) -> None:
        self.pattern, self.flags, self._compiled = pattern, flags, None

    def __getattr__(self, name: str):
        # Only a pattern's own methods are looked up here; anything else
        # (pickle asks for __setstate__ before the slots are filled) is absent.
        if name.startswith("_"):
            raise AttributeError(name)
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return getattr(self._compiled, name)

    def __reduce__(self):
        # Sent to worker processes as its source, compiled there when used.
        return LazyPattern, (self.pattern, self.flags)

    def __eq__(self, other) -> bool:
        if isinstance(other, (LazyPattern, re.Pattern)):
            return (self.pattern, self.flags) == (other.pattern, other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"re.compile({self.pattern!r}, {self.flags})"


def _instance(cls):
    width = len(dataclasses.fields(cls))

    def build(payload):
        if len(_as(payload, list)) != width:
            raise ValueError(f"not a {cls.__name__}")
        return cls(*payload)

    return build


_DECODERS = {
    "list": lambda payload: _as(payload, list),
    "tuple": lambda payload: tuple(_as(payload, list)),
    "set": lambda payload: set(_as(payload, list)),
    "frozenset": lambda payload: frozenset(_as(payload, list)),
    "frozenbytes": lambda payload: frozenset(_as(item, str).encode("latin-1") for item in _as(payload, list)),
    "dict": _pairs,
    "bytes": lambda payload: _as(payload, str).encode("latin-1"),
    "pattern": _pattern,
    **{name: _instance(cls) for name, cls in _TYPES.items()},
}


def _as(value, expected):
    if not isinstance(value, expected):
        raise ValueError("unexpected value in a rule cache entry")
    return value
