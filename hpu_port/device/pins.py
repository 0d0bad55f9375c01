"""The versions of its dependencies a project pins.

Advice may depend on them: from transformers 4.50 on, the plain `Trainer`
runs on Gaudi, and before it only optimum-habana's Gaudi trainer does. They
are read as text from requirements files (one requirement a line), from the
list items of a conda `environment.yml` (its `pip:` list too) and from the
quoted requirement strings of `pyproject.toml`, `setup.cfg` and `setup.py`; a
requirement given without a version pins nothing.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Iterator, Optional

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_SPEC = r"(?:===|==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!-]+"
_SPECS = rf"{_SPEC}(?:\s*,\s*{_SPEC})*"
_LINE = re.compile(rf"^[ \t]*({_NAME})[ \t]*(?:\[[^\]\n]*\])?[ \t]*\(?({_SPECS})", re.MULTILINE)
# A conda environment file's list items (`  - trl==0.9.6`, under `pip:` too).
_LIST_ITEM = re.compile(rf"^[ \t]*-[ \t]*({_NAME})[ \t]*(?:\[[^\]\n]*\])?[ \t]*({_SPECS})", re.MULTILINE)
CONDA_ENVIRONMENT_FILES = frozenset({"environment.yml", "environment.yaml"})
_QUOTED = re.compile(rf"[\"']({_NAME})\s*(?:\[[^\]]*\])?\s*\(?({_SPECS})\)?\s*(?:;[^\"']*)?[\"']")
_ONE = re.compile(r"(===|==|!=|<=|>=|~=|<|>)\s*([A-Za-z0-9.*+!-]+)")


def pins_in(files: Iterable[tuple[str, bytes]]) -> tuple:
    """(normalized package name, its version specifiers as written) for each
    requirement with a version in ``files`` (path, bytes)."""
    found = set()
    for path, source in files:
        text = source.decode("utf-8", "replace")
        pattern = _LINE if _is_requirements(path) else _LIST_ITEM if os.path.basename(path) in CONDA_ENVIRONMENT_FILES else _QUOTED
        for match in pattern.finditer(text):
            found.add((normalized(match.group(1)), re.sub(r"\s+", "", match.group(2))))
    return tuple(sorted(found))


def project_pins(python_sources: dict, dependency_files: dict) -> tuple:
    """``pins_in`` the project's setup.py scripts and dependency files (path -> bytes)."""
    setup_scripts = [(path, source) for path, source in python_sources.items() if os.path.basename(path) == "setup.py" and isinstance(source, bytes)]
    return pins_in([*setup_scripts, *((path, source) for path, source in dependency_files.items() if isinstance(source, bytes))])


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_requirements(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith((".txt", ".in")) and not name.startswith("setup")


def always_before(specifiers: str, version: str) -> bool:
    """Whether every version ``specifiers`` admit is older than ``version``."""
    limit = _parts(version)
    for operator, value, bound in _bounds(specifiers):
        if operator in ("==", "===") and "*" not in value and bound < limit:
            return True
        if operator == "==" and value.endswith(".*") and _wildcard_ceiling(value) <= limit:
            return True  # `==0.9.*` admits 0.9 up to (not including) 0.10
        if operator == "<" and bound <= limit or operator == "<=" and bound < limit:
            return True
        if operator == "~=" and _compatible_ceiling(value) <= limit:
            return True
    return False


def always_from(specifiers: str, version: str) -> bool:
    """Whether every version ``specifiers`` admit is ``version`` or newer."""
    limit = _parts(version)
    return any(
        operator in ("==", "===", ">=", "~=", ">") and ("*" not in value or value.endswith(".*")) and bound >= limit
        for operator, value, bound in _bounds(specifiers)
    )


def _bounds(specifiers: str) -> Iterator[tuple[str, str, tuple]]:
    """(operator, version as written, version as numbers) of each specifier with a version."""
    for operator, value in _ONE.findall(specifiers):
        bound = _parts(value)
        if bound is not None:
            yield operator, value, bound


def _parts(value: str) -> Optional[tuple]:
    numbers = re.match(r"\d+(?:\.\d+)*", value)
    if numbers is None:
        return None
    parts = [int(part) for part in numbers.group().split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def _wildcard_ceiling(value: str) -> tuple:
    """`==0.9.*` admits up to (not including) 0.10; `==4.*` up to 5."""
    written = [int(part) for part in re.match(r"\d+(?:\.\d+)*", value).group().split(".")]
    written[-1] += 1
    return tuple(written + [0] * (3 - len(written)))


def _compatible_ceiling(value: str) -> tuple:
    """`~=4.38.2` admits up to (not including) 4.39; `~=4.38` up to 5."""
    written = [int(part) for part in re.match(r"\d+(?:\.\d+)*", value).group().split(".")]
    head = written[:-1] or written
    head[-1] += 1
    return tuple(head + [0] * (3 - len(head)))


def requirement_range(text: str) -> Optional[tuple]:
    """``name>=A,<B`` as (normalized name, A, B); None when ``text`` is not written so."""
    match = re.fullmatch(rf"({_NAME})\s*>=\s*([0-9.]+)\s*,\s*<\s*([0-9.]+)", text.strip())
    if match is None or _parts(match.group(2)) >= _parts(match.group(3)):
        return None
    return normalized(match.group(1)), match.group(2), match.group(3)


def pinned_within(specifiers: Iterable[str], lowest: str, below: str) -> bool:
    """Whether the project pins a release (some specifiers given) and every
    release each of them admits is ``lowest`` or newer and older than ``below``."""
    specifiers = tuple(specifiers)
    return bool(specifiers) and all(always_from(spec, lowest) and always_before(spec, below) for spec in specifiers)
