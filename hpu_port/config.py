"""Settings from `[tool.hpu-port]` in the nearest pyproject.toml, merged with the CLI.

Each file is ported with the settings of the nearest pyproject.toml above it
that has a `[tool.hpu-port]` table (so a monorepo's packages can differ);
options given on the command line override them. Unknown keys and bad values
are errors that stop the run before anything is read.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from hpu_port._compat import toml
from hpu_port.device.evidence import Evidence, EvidenceError, parse as parse_evidence
from hpu_port.lint_config import DEFAULT_STYLE, ImportStyle, import_style_for_directory

TABLE = "tool.hpu-port"


class ConfigError(Exception):
    """A configuration that cannot be used: one line per problem, each naming its file."""

    def __init__(self, problems) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Settings:
    """Everything that decides how a file is ported."""

    mode: str = "lazy"
    fp16_to_bf16: bool = False
    unsafe_fixes: bool = False
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    rules: tuple[str, ...] = ()
    max_file_size_mib: float = 4.0
    include_generated: bool = False
    port_shared_code: bool = False
    # Entries added to the device evidence (`[tool.hpu-port.device]`); None: none.
    device: Optional[Evidence] = None
    root: Optional[str] = None  # directory of the pyproject.toml, for relative patterns
    source: Optional[str] = None  # the pyproject.toml the settings came from
    # Patterns of the configurations this one extends, each relative to its own file.
    inherited: tuple["Inherited", ...] = ()
    # The import order the project's ruff or isort configuration asks for.
    import_style: ImportStyle = DEFAULT_STYLE

    def excluded(self, path: Path) -> bool:
        """Whether ``path`` matches `exclude` / `extend-exclude` (relative to the config)."""
        patterns = self.exclude + self.extend_exclude
        if patterns and _matches_any(_relative(path, self.root), patterns):
            return True
        return any(i.exclude and _matches_any(_relative(path, i.root), i.exclude) for i in self.inherited)

    def ignored_codes(self, path: Path) -> tuple[str, ...]:
        """Codes `per-file-ignores` switches off for ``path``."""
        pairs = [(self.root, self.per_file_ignores)] + [(i.root, i.per_file_ignores) for i in self.inherited]
        return tuple(
            code
            for root, table in pairs
            for pattern, codes in table
            if _matches_any(_relative(path, root), (pattern,))
            for code in codes
        )


@dataclass(frozen=True)
class Inherited:
    """The path patterns of an extended configuration, with the directory they are relative to."""

    root: str
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _relative(path: Path, root: Optional[str]) -> str:
    # The real directory, but not the file itself: a link (even a broken
    # or looping one) is matched where it is, by its own name.
    resolved = Path(os.path.realpath(path.parent)) / path.name
    if root:
        try:
            return resolved.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def _matches_any(relative: str, patterns) -> bool:
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(relative, pattern + "/*"):
            return True
        # A bare name ("legacy", "*_pb2.py") matches any path component.
        if "/" not in pattern and any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False


# key -> (type, attribute); lists become tuples.
KEYS: dict[str, tuple[type, str]] = {
    "mode": (str, "mode"),
    "fp16-to-bf16": (bool, "fp16_to_bf16"),
    "unsafe-fixes": (bool, "unsafe_fixes"),
    "select": (list, "select"),
    "ignore": (list, "ignore"),
    "extend-select": (list, "extend_select"),
    "exclude": (list, "exclude"),
    "extend-exclude": (list, "extend_exclude"),
    "per-file-ignores": (dict, "per_file_ignores"),
    "rules": (list, "rules"),
    "max-file-size": ((int, float), "max_file_size_mib"),
    "include-generated": (bool, "include_generated"),
    "port-shared-code": (bool, "port_shared_code"),
    "device": (dict, "device"),
}


def parse_table(table: dict, source: str, root: str) -> Settings:
    """Validate a `[tool.hpu-port]` table into Settings; every problem at once."""
    values, problems = _table_values(table, source, root)
    if problems:
        raise ConfigError(problems)
    return Settings(**values)


def _table_values(table: dict, source: str, root: str) -> tuple[dict, list[str]]:
    """The Settings fields a table sets (with its origin), and its problems,
    each a line naming the file."""
    problems: list[str] = []

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{source}: [{TABLE}] {problem}")

    values: dict[str, Any] = {"source": source, "root": root}
    for key, value in table.items():
        if key == "extend":
            continue  # read by the loader
        if key not in KEYS:
            problems.append(str(fail(f"unknown key {key!r}{_did_you_mean(key, [*KEYS, 'extend'])}")))
            continue
        expected, attribute = KEYS[key]
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            problems.append(str(fail(f"{key!r} must be {_describe(expected)}")))
            continue
        try:
            values[attribute] = _device_additions(value, source) if key == "device" else _convert(key, value, root, fail)
        except ConfigError as exc:
            problems.append(str(exc))
    if values.get("mode", "lazy") not in ("lazy", "eager"):
        problems.append(str(fail("'mode' must be \"lazy\" or \"eager\"")))
    if values.get("max_file_size_mib", 1) <= 0:
        problems.append(str(fail("'max-file-size' must be a positive number of MiB")))
    return values, problems


def _device_additions(table: dict, source: str) -> Evidence:
    """Entries a project adds to ``rules/_device.toml``: the same sections and keys."""
    try:
        return parse_evidence(table, source, f"{TABLE}.device.")
    except EvidenceError as exc:
        raise ConfigError(str(exc)) from None


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (known: {', '.join(sorted(choices))})"


def _describe(expected) -> str:
    return {str: "a string", bool: "true or false", list: "a list of strings", dict: "a table"}.get(expected, "a number")


def _convert(key: str, value: Any, root: str, fail):
    if isinstance(value, list):
        if not all(isinstance(item, str) for item in value):
            raise fail(f"{key!r} must be a list of strings")
        if key == "rules":
            return tuple(str((Path(root) / item)) for item in value)
        return tuple(value)
    if key == "per-file-ignores":
        pairs = []
        for pattern, codes in value.items():
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                raise fail(f"'per-file-ignores.{pattern}' must be a list of rule codes")
            pairs.append((pattern, tuple(codes)))
        return tuple(pairs)
    return value


@lru_cache(maxsize=None)
def settings_for_directory(directory: str) -> Settings:
    """Settings of the nearest pyproject.toml with a [tool.hpu-port] table, or defaults."""
    found = _nearest_table(directory)
    if found is not None:
        candidate, table = found
        values, problems = _load(Path(candidate).resolve(), table, ())
        if problems:
            raise ConfigError(problems)
        return Settings(**values, import_style=import_style_for_directory(directory))
    return Settings(import_style=import_style_for_directory(directory))


@lru_cache(maxsize=None)
def _nearest_table(directory: str) -> Optional[tuple[str, dict]]:
    """(path, table) of the nearest pyproject.toml with a [tool.hpu-port]
    table at or above ``directory``: each folder looked at once per run."""
    folder = Path(directory)
    candidate = folder / "pyproject.toml"
    if candidate.is_file():
        table = _hpu_port_table(str(candidate))
        if table is not None:
            return str(candidate), table
    parent = folder.parent
    return None if parent == folder else _nearest_table(str(parent))


# Keys whose patterns are relative to their own file: an extending file keeps
# them apart (Settings.inherited) instead of taking them over.
_PATTERN_FIELDS = ("exclude", "extend_exclude", "per_file_ignores")


def _load(path: Path, table: dict, chain: tuple) -> tuple[dict, list[str]]:
    """The settings of ``path``'s table merged over those it `extend`s (the
    nearer file wins, key by key)."""
    values, problems = _table_values(table, str(path), str(path.parent))
    extend = table.get("extend")
    if extend is None:
        return values, problems
    where = f"{path}: [{TABLE}] 'extend'"
    if not isinstance(extend, str):
        return values, problems + [f"{where} must be a path to a pyproject.toml"]
    parent = (path.parent / extend).resolve()
    if parent == path or parent in chain:
        return values, problems + [f"{where}: {extend!r} extends itself (through {' -> '.join(map(str, chain + (path,)))})"]
    if not parent.is_file():
        return values, problems + [f"{where}: no such file {str(parent)!r}"]
    try:
        parent_table = _hpu_port_table(str(parent)) or {}
    except ConfigError as exc:
        return values, problems + [str(exc)]
    inherited_values, inherited_problems = _load(parent, parent_table, chain + (path,))
    return _merge(inherited_values, values), problems + inherited_problems


def _merge(parent: dict, child: dict) -> dict:
    merged = {key: value for key, value in parent.items() if key not in ("source", "root", "inherited", *_PATTERN_FIELDS)}
    merged.update({key: value for key, value in child.items() if key not in _PATTERN_FIELDS})
    for key in _PATTERN_FIELDS:
        if key in child:
            merged[key] = child[key]
    if parent.get("device") is not None and child.get("device") is not None:
        # Additions add up: the nearer file's come after the inherited ones.
        merged["device"] = parent["device"].extended(child["device"])
    # The parent's patterns stay relative to the parent; `exclude` and
    # `per-file-ignores` set here replace the parent's, `extend-exclude` adds.
    exclude = () if "exclude" in child else parent.get("exclude", ())
    pfi = () if "per_file_ignores" in child else parent.get("per_file_ignores", ())
    own = Inherited(parent["root"], exclude + parent.get("extend_exclude", ()), pfi)
    merged["inherited"] = ((own,) if own.exclude or own.per_file_ignores else ()) + parent.get("inherited", ())
    return merged


@lru_cache(maxsize=None)
def _hpu_port_table(path: str) -> Optional[dict]:
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from None
    if b"hpu-port" not in text:
        return None  # every spelling of the table names it; most pyproject.toml files do not
    tomllib = toml()
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc}") from None
    return data.get("tool", {}).get("hpu-port")


def settings_for(path: Path) -> Settings:
    directory = path if path.is_dir() else path.parent
    return settings_for_directory(_resolved(str(directory)))


@lru_cache(maxsize=4096)
def _resolved(directory: str) -> str:
    # The files of a tree share a few hundred folders: each is resolved once.
    return str(Path(directory).resolve())


@dataclass(frozen=True)
class Overrides:
    """Options given on the command line; None means "not given"."""

    mode: Optional[str] = None
    fp16_to_bf16: Optional[bool] = None
    unsafe_fixes: Optional[bool] = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    max_file_size_mib: Optional[float] = None
    exclude: tuple[str, ...] = field(default=())
    include_generated: Optional[bool] = None
    port_shared_code: Optional[bool] = None

    def apply(self, settings: Settings) -> Settings:
        changes: dict[str, Any] = {}
        for name in ("mode", "fp16_to_bf16", "unsafe_fixes", "max_file_size_mib", "include_generated", "port_shared_code"):
            value = getattr(self, name)
            if value is not None:
                changes[name] = value
        if self.select:
            changes["select"] = self.select
            changes["extend_select"] = ()
        if self.ignore:
            changes["ignore"] = settings.ignore + self.ignore
        if self.extend_select:
            changes["extend_select"] = settings.extend_select + self.extend_select
        if self.rules:
            changes["rules"] = settings.rules + self.rules
        if self.exclude:
            changes["extend_exclude"] = settings.extend_exclude + self.exclude
        return replace(settings, **changes)


def render_settings(settings: Settings) -> str:
    """The effective settings, as a `[tool.hpu-port]` table with its origin."""
    origin = settings.source or "defaults (no pyproject.toml with [tool.hpu-port] found)"
    lines = [f"# from {origin}"]
    lines += [f"# extends patterns of {i.root}: exclude {_toml_list(i.exclude)}, per-file-ignores "
              f"{dict((p, list(c)) for p, c in i.per_file_ignores)}" for i in settings.inherited]
    lines.append(f"[{TABLE}]")
    for key, (_, attribute) in KEYS.items():
        value = getattr(settings, attribute)
        if key == "device":
            continue  # a table of its own, after the keys
        if key == "per-file-ignores":
            rendered = "{ " + ", ".join(f'"{p}" = {_toml_list(c)}' for p, c in value) + " }" if value else "{}"
        elif isinstance(value, tuple):
            rendered = _toml_list(value)
        elif isinstance(value, bool):
            rendered = "true" if value else "false"
        elif isinstance(value, str):
            rendered = f'"{value}"'
        else:
            rendered = f"{value:g}"
        lines.append(f"{key} = {rendered}")
    return "\n".join(lines + _device_lines(settings.device)) + "\n"


def _device_lines(additions: Optional[Evidence]) -> list[str]:
    """The project's additions to the device evidence, as the tables they came from."""
    if additions is None:
        return []
    lines: list[str] = []
    for section, entries in additions.as_table().items():
        lines.append(f"[{TABLE}.device.{section}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in entries.items()]
    return lines


def _toml_value(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{key}" = {_toml_value(item)}' for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml_value, value)) + "]"
    return f'"{value}"'


def _toml_list(values) -> str:
    return _toml_value(list(values))
