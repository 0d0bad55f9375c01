"""The evidence of what code is NVIDIA's and which devices there are.

Whether a CUDA check may be ported (HPU101, HPU110, HPU401), whether a class,
function, branch or file is another device's or an NVIDIA-only library's code
(HPU615), where advice about Gaudi has no place: every rule that asks reads
this one table, ``rules/_device.toml``, so that one entry teaches them all.

A project adds entries under ``[tool.hpu-port.device]`` in its pyproject.toml,
with the same sections and keys. Its additions reach the per-file core as
data, in ``Options.device``, so the result cache keys on them; the bundled
table is read once per process.

The table is typed: each key has one shape (a list of strings, a table of
lists by device or backend name, or the exceptions), and every problem is one
line naming the file, the key and what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Callable, Optional

from hpu_port._compat import blake2b, toml
from hpu_port.patterns import matches_any

FILE_NAME = "_device.toml"

# The shapes of the table's keys.
LIST = "a list of strings"
BY_NAME = "a table of lists of strings, by device or backend name"
EXCEPTIONS = "an array of tables, each with the strings 'name' and 'unless'"


class EvidenceError(Exception):
    """A table that cannot be used; the message is one line naming the file, the key and the problem."""


def _entry(section: str, key: str, shape: str = LIST):
    return field(default=(), metadata={"section": section, "key": key, "shape": shape})


@dataclass(frozen=True)
class Evidence:
    """The table's entries, as tuples in the table's order: strings; for
    ``BY_NAME`` keys (name, strings) pairs; for the exceptions (name, unless)
    pairs. The fields mirror the keys (see ``rules/_device.toml`` for what
    each means); what the rules ask of them is answered below."""

    libraries: tuple = _entry("nvidia-only", "libraries")
    runtimes: tuple = _entry("nvidia-only", "runtimes")
    extension_loaders: tuple = _entry("nvidia-only", "extension-loaders")
    ported_libraries: tuple = _entry("nvidia-only", "ported-libraries")
    library_names: tuple = _entry("nvidia-only", "library-names")
    flags: tuple = _entry("nvidia-only", "flags")
    names: tuple = _entry("nvidia-only", "names")
    statement_names: tuple = _entry("nvidia-only", "statement-names")
    internals: tuple = _entry("nvidia-only", "internals")
    internal_attributes: tuple = _entry("nvidia-only", "internal-attributes")
    kernel_decorators: tuple = _entry("nvidia-only", "kernel-decorators")
    class_bases: tuple = _entry("nvidia-only", "class-bases")
    words: tuple = _entry("nvidia-only", "words")
    strings: tuple = _entry("nvidia-only", "strings")
    errors: tuple = _entry("nvidia-only", "errors")
    keywords: tuple = _entry("nvidia-only", "keywords")
    switch_keywords: tuple = _entry("nvidia-only", "switch-keywords")
    kernel_switches: tuple = _entry("nvidia-only", "kernel-switches")
    harmless_switches: tuple = _entry("nvidia-only", "harmless-switches")
    exceptions: tuple = _entry("nvidia-only", "exception", EXCEPTIONS)
    cuda_checks: tuple = _entry("devices", "cuda-checks")
    port: tuple = _entry("devices", "port")
    other: tuple = _entry("devices", "other")
    pseudo: tuple = _entry("devices", "pseudo")
    formats: tuple = _entry("devices", "formats")
    setups: tuple = _entry("devices", "setups")
    flag_words: tuple = _entry("devices", "flag-words")
    accelerator_bases: tuple = _entry("devices", "accelerator-bases")
    tables: tuple = _entry("devices", "tables")
    registrations: tuple = _entry("devices", "registrations")
    own_devices: tuple = _entry("devices", "own-devices")
    kept_checks: tuple = _entry("devices", "kept-checks", BY_NAME)
    accelerator_queries: tuple = _entry("devices", "accelerator-queries", BY_NAME)
    taken_by: tuple = _entry("devices", "taken-by", BY_NAME)
    branch_strings: tuple = _entry("devices", "branch-strings", BY_NAME)
    foreign_frameworks: tuple = _entry("frameworks", "foreign")
    always_foreign_frameworks: tuple = _entry("frameworks", "always-foreign")
    device_free_names: tuple = _entry("frameworks", "device-free")

    def extended(self, additions: "Evidence") -> "Evidence":
        """These entries with ``additions``' (a project's) after them, each once."""
        changes = {}
        for item in fields(self):
            added = getattr(additions, item.name)
            if added:
                merge = _merge_by_name if item.metadata["shape"] == BY_NAME else _merge_lists
                changes[item.name] = merge(getattr(self, item.name), added)
        return replace(self, **changes) if changes else self

    def as_table(self) -> dict:
        """The entries as the table they are read from (empty keys left out)."""
        table: dict = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value:
                table.setdefault(item.metadata["section"], {})[item.metadata["key"]] = _as_read(value, item.metadata["shape"])
        return table

    def digest(self) -> str:
        """A name for the entries (the fields are tuples: their repr is stable)."""
        return blake2b(repr(self).encode(), digest_size=12).hexdigest()

    # -- what the code a CUDA check guards may use: the check stays CUDA's ------

    def guard(self, device: str = "") -> "Guard":
        """The evidence a check for ``device`` consults (a test for the NCCL
        backend also stays when its branch names the CUDA device)."""
        if device not in self._guards:
            self._guards[device] = Guard(
                names=self.guard_names,
                exceptions=self.exceptions,
                keywords=frozenset(self.keywords),
                words=self.words,
                strings=self.strings + by_name(self.branch_strings, device),
                errors=self.errors,
                tables=self.tables,
                harmless=self.harmless_switches,
            )
        return self._guards[device]

    @cached_property
    def _guards(self) -> dict:
        return {}

    @cached_property
    def guard_names(self) -> tuple:
        """Qualified-name patterns: torch's NVIDIA-only APIs, CUDA's internals,
        and every module of the NVIDIA-only libraries, ported in part or not."""
        return self.names + self.statement_names + self.internals + self._every_nvidia_library

    def nvidia_only_library(self, module: str) -> bool:
        """Whether ``module`` belongs to an NVIDIA-only library, ported in part or not."""
        return _matches_any(module, self._every_nvidia_library)

    @cached_property
    def _every_nvidia_library(self) -> tuple:
        return library_patterns(self.libraries + self.ported_libraries)

    # -- code that is not ported: another device's or an NVIDIA-only library's --

    def is_runtime(self, module: str) -> bool:
        """Whether ``module`` (or the package it is in) is an NVIDIA runtime a file is written around."""
        return _matches_any(module, self.runtimes) or _matches_any(module.split(".")[0], self.runtimes)

    def unit_library(self, module: str) -> Optional[str]:
        """What ``module`` is, when code built on it is not ported: an
        NVIDIA-only library no rule ports, or another framework."""
        if _matches_any(module, self._unported_libraries):
            return "which only runs on NVIDIA GPUs"
        if _matches_any(module, self._frameworks):
            return "another framework, which the port leaves alone"
        return None

    def device_free(self, name: str) -> bool:
        """Whether ``name`` (dotted, `tensorflow.logging.info`) is one of a
        framework's names that touch no device, or inside one."""
        return any(name == free or name.startswith(free + ".") for free in self.device_free_names)

    @cached_property
    def _unported_libraries(self) -> tuple:
        return library_patterns(self.libraries)

    @cached_property
    def _frameworks(self) -> tuple:
        return library_patterns(self.foreign_frameworks + self.always_foreign_frameworks)

    @cached_property
    def unit_words(self) -> frozenset:
        """Words of a class's, function's, file's or directory's name that say
        it is for another device, an NVIDIA-only library or another framework."""
        return frozenset(self.other + self.library_names + self.foreign_frameworks + self.always_foreign_frameworks)

    @cached_property
    def branch_names(self) -> frozenset:
        """What a branch taken only for another device, export format,
        set-up or NVIDIA-only library tests for."""
        return self.unit_words | frozenset(self.formats + self.setups + self.flags)

    @cached_property
    def unit_class_bases(self) -> tuple:
        return self.accelerator_bases + self.class_bases

    @cached_property
    def other_device_test(self) -> re.Pattern:
        """Another accelerator named in a test, as a word in any case (`device.type == "npu"`, `is_xla`)."""
        devices = "|".join(map(re.escape, self.other))
        return re.compile(rf"(?<![A-Za-z])({devices})(?![A-Za-z])", re.IGNORECASE)

    # -- device names -------------------------------------------------------------

    def siblings(self, device: str) -> frozenset:
        """The names beside which ``device`` in a list or a conditional is a device too."""
        return frozenset(self.port + self.other + self.pseudo) - {device}

    def has_own_devices(self, called: str) -> bool:
        """Whether a call (qualified) goes to a library that knows only its own devices."""
        return _matches_any(called, self.own_devices)

    def registers_code(self, called: str) -> bool:
        """Whether a call (qualified, or as written) registers code for a device."""
        return _matches_any(called, self.registrations)


@dataclass(frozen=True)
class Guard:
    """What keeps a check CUDA's when the code it guards uses it (see ``_guards``)."""

    names: tuple  # qualified-name patterns
    exceptions: tuple  # (name, unless): name counts only where unless is not used too
    keywords: frozenset
    words: tuple  # patterns of names (case matters)
    strings: tuple  # patterns of whole strings
    errors: tuple  # patterns of lower-cased exception messages
    tables: tuple  # devices checked against the module's own table of devices
    harmless: tuple = ()  # patterns of switches whose setting is no evidence (`cudnn.benchmark = True`)


def by_name(table: tuple, name: str) -> tuple:
    """The entries of a ``BY_NAME`` key for ``name`` (none: empty)."""
    return next((entries for key, entries in table if key == name), ())


def library_patterns(libraries: tuple) -> tuple:
    """Qualified-name patterns for modules: `triton` covers `triton` and
    `triton.language`; `flash_attn*` every module whose name starts so."""
    patterns: list[str] = []
    for library in libraries:
        patterns += [library] if library.endswith("*") else [library, library + ".*"]
    return tuple(patterns)


def _matches_any(name: str, patterns: tuple) -> bool:
    return matches_any(name, patterns)


def _as_read(value: tuple, shape: str):
    if shape == BY_NAME:
        return {name: list(entries) for name, entries in value}
    if shape == EXCEPTIONS:
        return [{"name": name, "unless": unless} for name, unless in value]
    return list(value)


def _merge_lists(first: tuple, second: tuple) -> tuple:
    return tuple(dict.fromkeys(first + second))


def _merge_by_name(first: tuple, second: tuple) -> tuple:
    merged = dict(first)
    for name, entries in second:
        merged[name] = _merge_lists(merged.get(name, ()), entries)
    return tuple(merged.items())


# -- reading a table -------------------------------------------------------------


def parse(data: Any, source: str, table: str = "") -> Evidence:
    """Validate a table: the bundled file, or a project's additions (then
    ``table`` is where its sections sit: `tool.hpu-port.device.`)."""
    _check_layout(data, source, table)
    values = {}
    for item in fields(Evidence):
        section, key, shape = item.metadata["section"], item.metadata["key"], item.metadata["shape"]
        if key in data.get(section, {}):
            values[item.name] = _READERS[shape](data[section][key], _failure(f"{source}: [{table}{section}] {key!r}"))
    return Evidence(**values)


def _check_layout(data: Any, source: str, table: str) -> None:
    """Only known sections, each a table of known keys: a misspelt key would
    otherwise be evidence silently lost."""
    if not isinstance(data, dict):
        raise EvidenceError(f"{source}: [{table.rstrip('.')}] must be a table")
    shapes = _keys_by_section()
    for section, keys in data.items():
        if section not in shapes:
            raise EvidenceError(f"{source}: unknown section [{table}{section}] (known: {', '.join(shapes)})")
        if not isinstance(keys, dict):
            raise EvidenceError(f"{source}: [{table}{section}] must be a table")
        for key in keys:
            if key not in shapes[section]:
                raise EvidenceError(f"{source}: [{table}{section}] unknown key {key!r} (known: {', '.join(shapes[section])})")


def _failure(where: str) -> Callable[[str], EvidenceError]:
    return lambda problem: EvidenceError(f"{where} {problem}")


def _keys_by_section() -> dict:
    sections: dict = {}
    for item in fields(Evidence):
        sections.setdefault(item.metadata["section"], []).append(item.metadata["key"])
    return sections


def _strings(value: Any, fail: Callable[[str], EvidenceError]) -> tuple:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise fail(f"must be {LIST} (none empty)")
    return tuple(dict.fromkeys(value))


def _strings_by_name(value: Any, fail: Callable[[str], EvidenceError]) -> tuple:
    if not isinstance(value, dict):
        raise fail(f"must be {BY_NAME}")
    return tuple((name, _strings(entries, lambda problem, name=name: fail(f"({name!r}) {problem}")))
                 for name, entries in value.items())


def _exceptions(value: Any, fail: Callable[[str], EvidenceError]) -> tuple:
    valid = isinstance(value, list) and all(
        isinstance(item, dict) and set(item) == {"name", "unless"} and all(isinstance(v, str) and v for v in item.values())
        for item in value
    )
    if not valid:
        raise fail(f"must be {EXCEPTIONS}")
    return tuple(dict.fromkeys((item["name"], item["unless"]) for item in value))


_READERS = {LIST: _strings, BY_NAME: _strings_by_name, EXCEPTIONS: _exceptions}


def load(path: Path) -> Evidence:
    tomllib = toml()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: cannot read the device evidence: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise EvidenceError(f"{path}: invalid TOML: {exc}") from None
    return parse(data, str(path))


def bundled_rules_dir() -> Path:
    """The rule packs shipped with hpu-port (inside the wheel, or rules/ in a checkout)."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "rules"
    return installed if installed.is_dir() else package.parent / "rules"


def bundled_file() -> Path:
    return bundled_rules_dir() / FILE_NAME


@lru_cache(maxsize=None)
def bundled() -> Evidence:
    """The table shipped with hpu-port, read once per process."""
    return load(bundled_file())


@lru_cache(maxsize=None)
def with_additions(additions: Optional[Evidence]) -> Evidence:
    """The bundled table plus a project's additions (None: none)."""
    return bundled() if additions is None else bundled().extended(additions)


def of_options(options) -> Evidence:
    """The evidence a file is ported with: the bundled table plus the
    project's additions its options carry (``Options.device``)."""
    return with_additions(getattr(options, "device", None))
