"""Per-file results kept between runs, so that a run over an unchanged tree parses nothing.

A result is stored under the hash of the file's bytes, in a table named after
everything else it depends on: the hpu-port version and code, the options,
the selected rules' data and whether fixes were applied. Changing any of them
starts a new table; a file that changes gets a new hash. The cache lives in
the user's cache directory, never in the scanned tree unless asked, and is
safe to delete at any time.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from dataclasses import asdict, astuple, fields, is_dataclass
from pathlib import Path
from typing import Optional

from hpu_port import __version__, filetypes, sealed
from hpu_port._compat import blake2b
from hpu_port.project import ProjectFacts
from hpu_port.results import FileResult, Finding

CACHE_ENV = "HPU_PORT_CACHE_DIR"
FORMAT = 2  # entries: absolute path -> [day last used, digest of the bytes, result]
# Entries not used for this many days are dropped when a table is saved.
KEEP_DAYS = 30
# A table larger than this is not read (it would be someone else's file).
MAX_TABLE_BYTES = 1 << 30
_CLEAN = 0  # the entry of a file with no finding, no change and no error
# The project facts of each tree, one entry per tree (its files' common folder).
FACTS_SUBDIRECTORY = "facts"


def default_directory() -> Path:
    """$HPU_PORT_CACHE_DIR, else the platform's per-user cache directory."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "hpu-port"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "hpu-port" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "hpu-port"


class Cache:
    """Tables of results, loaded on first use and written back by ``save``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._tables: dict[str, dict] = {}
        self._dirty: set[str] = set()
        self._fingerprints: dict[int, tuple] = {}
        self._today = int(time.time() // 86400)

    def lookup(self, ruleset, apply: bool, path: str, source: bytes) -> Optional[FileResult]:
        table, key, digest = self._place(ruleset, apply, path, source)
        entry = self._table(table).get(key)
        if not isinstance(entry, list) or len(entry) != 3 or entry[1] != digest:
            return None  # never seen, or the file changed since
        if entry[0] != self._today:
            entry[0] = self._today
            self._dirty.add(table)
        try:
            result = _decode(entry[2], path, source)
        except (KeyError, TypeError, ValueError):
            return None  # an entry this version cannot read: port the file again
        result.from_cache = True
        return result

    def store(self, ruleset, apply: bool, result: FileResult) -> None:
        if result.error and result.error.startswith("internal error"):
            return  # may not happen again; never remember it
        table, key, digest = self._place(ruleset, apply, result.path, result.source)
        self._table(table)[key] = [self._today, digest, _encode(result)]
        self._dirty.add(table)

    def project_facts(self, key: str, name: str):
        """The project facts stored under ``name`` when they were found for
        ``key`` (the digest of everything they depend on); None otherwise."""
        secret = sealed.key()
        if secret is None:
            return None
        with sealed.Folder(self.directory / FACTS_SUBDIRECTORY, create=False) as folder:
            data = folder.read(f"facts-{name}.json", MAX_TABLE_BYTES) if folder is not None else None
        body = sealed.unseal(f"facts-{name}", data, secret) if data is not None else None
        if body is None:
            return None
        try:
            stored = json.loads(body)
            if not isinstance(stored, dict) or stored.get("format") != FORMAT or stored.get("key") != key:
                return None
            return facts_from_data(stored["facts"])
        except (KeyError, TypeError, ValueError):
            return None  # damaged, or written by another version: find them again

    def knows_project(self, name: str) -> bool:
        """Whether facts were kept for the project ``name`` (then most of its
        files are likely answered from the cache, whatever changed)."""
        return (self.directory / FACTS_SUBDIRECTORY / f"facts-{name}.json").is_file()

    def store_project_facts(self, key: str, name: str, facts) -> None:
        """Keep ``facts`` for the next run over the same files (one entry per project)."""
        secret = sealed.key()
        if secret is None:
            return
        body = json.dumps({"format": FORMAT, "key": key, "facts": facts_data(facts)}, separators=(",", ":")).encode()
        try:
            with sealed.Folder(self.directory, create=True) as cache:
                if cache is None:
                    return
                cache.ensure_tag()
            with sealed.Folder(self.directory / FACTS_SUBDIRECTORY, create=True) as folder:
                if folder is not None:
                    folder.write(f"facts-{name}.json", sealed.seal(f"facts-{name}", body, secret))
        except OSError:
            return  # a cache that cannot be written is skipped

    def save(self) -> None:
        """Write the changed tables; a cache that cannot be written is skipped."""
        secret = sealed.key()
        if secret is None:
            return  # no key to seal them with: nothing written could be trusted later
        with sealed.Folder(self.directory, create=True) as folder:
            if folder is None:
                return  # a link or a file where the cache folder should be: no cache
            folder.ensure_tag()
            for name in sorted(self._dirty):
                entries = {k: v for k, v in self._tables[name].items() if _used_since(v, self._today - KEEP_DAYS)}
                body = json.dumps({"format": FORMAT, "entries": entries}, separators=(",", ":")).encode()
                try:
                    folder.write(f"{name}.json", sealed.seal(name, body, secret))
                except OSError:
                    return
        self._dirty.clear()

    def _table(self, name: str) -> dict:
        if name not in self._tables:
            self._tables[name] = self._read(name)
        return self._tables[name]

    def _read(self, name: str) -> dict:
        """A table's entries; none when it is missing, damaged or not sealed with the user's key."""
        secret = sealed.key()
        if secret is None:
            return {}
        with sealed.Folder(self.directory, create=False) as folder:
            data = folder.read(f"{name}.json", MAX_TABLE_BYTES) if folder is not None else None
        body = sealed.unseal(name, data, secret) if data is not None else None
        if body is None:
            return {}
        try:
            data = json.loads(body)
        except ValueError:
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
            return {}
        return data["entries"]

    def _place(self, ruleset, apply: bool, path: str, source: bytes) -> tuple[str, str, str]:
        """The table, the entry (one per file: a file's new version replaces
        the old one, so a table grows with the files, not with their
        versions, and a hook's run reads and writes little) and the digest
        its bytes must have for the entry to answer."""
        table = self._fingerprint(ruleset, apply)
        # Files of different types (or names: `setup.py`, `environment.yml`)
        # with the same bytes are read differently.
        file_type = filetypes.detect(path, source[: filetypes.HEAD_SIZE]) or filetypes.PYTHON
        salt = f"{file_type}:{os.path.basename(path)}:".encode()
        return table, os.path.abspath(path), blake2b(salt + source, digest_size=16).hexdigest()

    def _fingerprint(self, ruleset, apply: bool) -> str:
        known = self._fingerprints.get(id(ruleset))
        if known is None or known[0] is not ruleset:
            known = (ruleset, fingerprint(ruleset))
            self._fingerprints[id(ruleset)] = known
        return known[1] + ("-fix" if apply else "-check")


def _used_since(entry, day: int) -> bool:
    return isinstance(entry, list) and bool(entry) and isinstance(entry[0], int) and entry[0] >= day


def fingerprint(ruleset) -> str:
    """A name for everything a file's result depends on, besides its bytes."""
    digest = blake2b()
    # The project facts (``hpu_port.project``): a change elsewhere in the
    # project can change a file's result.
    digest.update(f"{__version__}\n{code_stamp()}\n{_stable(ruleset.options)}\n{ruleset.facts.digest()}\n".encode())
    for rule in ruleset.rules:
        fields = (rule.code, rule.kind, rule.fix, rule.category, rule.message, rule.mode, rule.option,
                  rule.hpu_runtime, rule.remove_imports_of, rule.triggers, rule.items, rule.raw_params)
        digest.update(json.dumps(fields, sort_keys=True, default=repr).encode())
    return digest.hexdigest()[:24]


def _stable(options) -> str:
    """The options as text that is the same in every process: a set's repr
    follows the process's string hashing (`report_only`), so sets are sorted."""
    table = asdict(options) if is_dataclass(options) else options
    return json.dumps(table, sort_keys=True, default=lambda v: sorted(map(str, v)) if isinstance(v, (set, frozenset)) else repr(v))


_STAMP: Optional[str] = None


def code_stamp() -> str:
    """Sizes and times of hpu-port's own modules: an edited checkout starts afresh."""
    global _STAMP
    if _STAMP is None:
        package = os.path.dirname(os.path.abspath(__file__))
        _STAMP = blake2b(repr(sorted(_module_stats(package, ""))).encode()).hexdigest()[:16]
    return _STAMP


def _module_stats(directory: str, prefix: str):
    # os.scandir, not Path.rglob: every run pays for this walk.
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                yield from _module_stats(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".py"):
                stat = entry.stat()
                yield f"{prefix}{entry.name}", stat.st_size, stat.st_mtime_ns


def _encode(result: FileResult):
    if not (result.findings or result.new_source is not None or result.error or result.imports_changed
            or result.cell_changes or result.encoding != "utf-8" or result.regions):
        return _CLEAN
    return {
        "findings": [list(astuple(f)) for f in result.findings],
        "new": None if result.new_source is None else base64.b64encode(result.new_source).decode("ascii"),
        "error": result.error,
        "encoding": result.encoding,
        "imports_changed": result.imports_changed,
        "cells": [[cell, old, new] for cell, (old, new) in sorted(result.cell_changes.items())],
        "output": None if result.output_findings is None else [list(astuple(f)) for f in result.output_findings],
        "regions": result.regions,
    }


def _decode(payload, path: str, source: bytes) -> FileResult:
    """The result an entry holds; ValueError when it is not what ``_encode`` writes."""
    result = FileResult(path=path, source=source)
    if payload == _CLEAN:
        return result
    if not isinstance(payload, dict):
        raise ValueError("not an entry")
    result.findings = _findings(payload["findings"])
    result.new_source = None if payload["new"] is None else base64.b64decode(_typed(payload["new"], str), validate=True)
    result.error = _typed(payload["error"], (str, type(None)))
    result.encoding = _typed(payload["encoding"], str)
    result.imports_changed = _typed(payload["imports_changed"], bool)
    result.cell_changes = {}
    for cell in _typed(payload["cells"], list):
        number, old, new = _typed(cell, list)
        result.cell_changes[_typed(number, int)] = (_typed(old, str), _typed(new, str))
    output = payload.get("output")
    result.output_findings = None if output is None else _findings(output)
    result.regions = [_region(region) for region in _typed(payload.get("regions", []), list)]
    return result


def _region(region) -> list:
    action, first, last = _typed(region, list)
    return [_typed(action, str), _typed(first, int), _typed(last, int)]


_FINDING_TYPES = tuple(
    {"str": str, "int": int, "bool": bool, "Optional[int]": (int, type(None))}[f.type] for f in fields(Finding)
)


def _findings(items) -> list[Finding]:
    findings = []
    for item in _typed(items, list):
        if not isinstance(item, list) or len(item) != len(_FINDING_TYPES):
            raise ValueError("not a finding")
        for value, expected in zip(item, _FINDING_TYPES):
            _typed(value, expected)
        findings.append(Finding(*item))
    return findings


def _typed(value, expected):
    # bool is an int to isinstance: a finding's line must not be True.
    if isinstance(value, bool) and expected in (int, (int, type(None))) or not isinstance(value, expected):
        raise ValueError(f"unexpected {type(value).__name__}")
    return value


class NotACache(Exception):
    """A folder `clean` refuses to delete."""


def remove(directory: Path) -> bool:
    """Delete the cache folder; False when there was none. Raises NotACache,
    and deletes nothing, for a link or a folder without hpu-port's CACHEDIR.TAG
    (``$HPU_PORT_CACHE_DIR`` set to the wrong folder must not cost its contents)."""
    import shutil

    if not os.path.lexists(directory):
        return False
    if os.path.islink(directory):
        raise NotACache(f"{directory} is a symbolic link, not hpu-port's cache folder; nothing deleted")
    if not sealed.carries_tag(directory):
        raise NotACache(f"{directory} holds no CACHEDIR.TAG written by hpu-port; nothing deleted")
    shutil.rmtree(directory)
    return True


# The project facts as JSON data: each field's value, sets in sorted order.
def facts_data(facts: ProjectFacts) -> dict:
    """``facts`` as JSON data: each field's value, sets in sorted order."""
    return {f.name: _plain(getattr(facts, f.name)) for f in fields(facts) if f.compare}


def facts_from_data(data: dict) -> ProjectFacts:
    """The facts ``facts_data`` wrote; ValueError for anything else."""
    values = {}
    for f in fields(ProjectFacts):
        if not f.compare:
            continue
        if isinstance(f.default, (str, bool)):
            if type(data.get(f.name)) is not type(f.default):
                raise ValueError(f"project facts without {f.name}")
            values[f.name] = data[f.name]
            continue
        if not isinstance(data.get(f.name), list):
            raise ValueError(f"project facts without {f.name}")
        items = tuple(_frozen(item) for item in data[f.name])
        values[f.name] = frozenset(items) if isinstance(f.default, frozenset) else items
    return ProjectFacts(**values)


def _plain(value):
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(item) for item in value), key=repr)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a project fact holds a {type(value).__name__}")


def _frozen(value):
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value
