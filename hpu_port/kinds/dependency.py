"""Kind ``dependency``: requirements that name one of ``packages`` (report only).

Read in `requirements*.txt` files, in `pyproject.toml` (`[project]`
dependencies and optional dependencies, Poetry dependencies) and in the
``keywords`` of a `setup()` call in Python (``install_requires``,
``extras_require``). Package names are compared as pip compares them
(case, ``-``, ``_`` and ``.`` do not matter).
"""

from __future__ import annotations

import re
from typing import Iterator

from hpu_port._compat import tomllib
from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import name_trigger

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(text: str):
    """The project a requirement line or string names (`torch>=2.1; ...` -> torch)."""
    if text.lstrip().startswith(("-", "git+", "http:", "https:", "file:")):
        return None
    match = _NAME.match(text)
    return normalized(match.group(1)) if match else None


@register_kind
class Dependency(Kind):
    name = "dependency"
    KEYS = {"packages": (list, True), "keywords": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "file"})
    READS_DEPENDENCY_FILES = True

    def build_params(self, table):
        return {
            "packages": {normalized(p) for p in string_list(table["packages"], "packages")},
            "keywords": set(string_list(table.get("keywords", []), "keywords")),
        }

    def triggers(self, rule):
        return [name_trigger(keyword) for keyword in sorted(rule.params["keywords"])]


    def scan_file(self, rule, file_name: str, text: str) -> Iterator[tuple[int, int, int, str]]:
        """(line, first column, end column, requirement) of each match, 1-based."""
        lines = text.splitlines()
        if file_name == "pyproject.toml":
            wanted = _pyproject_requirements(text)
            candidates = _quoted_strings(lines, wanted) if wanted else []
            candidates += _poetry_entries(lines)
        else:
            candidates = [(n, len(line) - len(line.lstrip()), line.split("#", 1)[0].strip()) for n, line in enumerate(lines, 1)]
        for number, column, requirement in candidates:
            if requirement and requirement_name(requirement) in rule.params["packages"]:
                yield number, column + 1, column + 1 + len(requirement), requirement


def _pyproject_requirements(text: str) -> set:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return set()
    project = data.get("project", {})
    found = set(project.get("dependencies", []) or [])
    for group in (project.get("optional-dependencies", {}) or {}).values():
        found |= set(group or [])
    return {r for r in found if isinstance(r, str)}


def _quoted_strings(lines: list, wanted: set) -> list:
    found = []
    for number, line in enumerate(lines, 1):
        for match in re.finditer(r"""(["'])(.*?)\1""", line):
            if match.group(2) in wanted:
                found.append((number, match.start(2), match.group(2)))
    return found


def _poetry_entries(lines: list) -> list:
    """`torch = "^2.1"` lines in [tool.poetry.dependencies] and its groups."""
    found, inside = [], False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.startswith("[tool.poetry") and "dependencies" in stripped
            continue
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=", line)
        if inside and match:
            found.append((number, match.start(1), stripped))
    return found
