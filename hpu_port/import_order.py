"""Where isort (and ruff's `I` rules) would put a new third-party import.

A module whose imports are already sorted keeps them sorted: Gaudi's import
goes into the section that imports torch, at its place in that section's
order. ruff's default order puts every `import x` before the section's
`from x import y`; with `force-sort-within-sections` both kinds are sorted
together by module. A section that follows neither order (or a module with
no section importing torch) gives no place, and the import goes after the
import block as before.
"""

from __future__ import annotations

import sys
from typing import Optional

import libcst as cst


def sorted_place(body: list, end: int, statement: str) -> Optional[tuple[int, bool]]:
    """The index in ``body`` at which the plain one-line import ``statement``
    keeps the imports of ``body[:end]`` sorted, and whether it starts its
    section there; None if there is none."""
    run = _third_party_section(body, end)
    if run is None or not statement.startswith("import "):
        return None
    first, last = run
    keys = [_key(body[i]) for i in range(first, last)]
    if None in keys:
        return None
    new = _statement_key(statement)
    if keys == sorted(keys):
        # `import x` before `from x import y`, each kind by module.
        before = sum(key < new for key in keys)
    elif [module for _, module in keys] == sorted(module for _, module in keys):
        before = sum(module < new[1] for _, module in keys)
    else:
        return None
    return first + before, before == 0


def in_sorted_order(statements: list[str]) -> list[str]:
    """One-line imports in isort's order (`import x` lines first, each kind by
    module); anything else keeps the order given."""
    keys = [_statement_key(code) for code in statements]
    if None in keys:
        return statements
    return [code for _, code in sorted(zip(keys, statements))]


def _statement_key(code: str) -> Optional[tuple[bool, str]]:
    words = code.split("#")[0].split()
    if len(words) >= 2 and words[0] in ("import", "from") and "," not in code.split("#")[0]:
        return words[0] == "from", _module_key(words[1])
    return None


def place_at(body: list, place: tuple[int, bool], new: list) -> list:
    """``body`` with ``new`` statements at ``place`` (``sorted_place``); a
    section's first statement hands its blank lines above to the new first one."""
    index, starts_section = place
    if starts_section and index < len(body) and new and body[index].leading_lines:
        lines = body[index].leading_lines
        new = [new[0].with_changes(leading_lines=lines), *new[1:]]
        body = [*body[:index], body[index].with_changes(leading_lines=[]), *body[index + 1:]]
    return [*body[:index], *new, *body[index:]]


def _third_party_section(body: list, end: int) -> Optional[tuple[int, int]]:
    """(first, last) of the run of import lines in ``body[:end]`` where a
    third-party import goes: the one that imports torch, else the first of
    absolute imports outside the standard library. A run is what blank lines
    or other code set apart. None when there is none, or when something other
    than imports comes between it and ``end``: code there
    (`os.environ[...] = ...`) may have to run before Gaudi's modules load."""
    runs: list[list[int]] = []
    for index in range(end):
        statement = body[index]
        if not is_import_line(statement):
            runs.append([])
            continue
        if not runs or not runs[-1] or _blank_above(statement):
            runs.append([])
        runs[-1].append(index)
    runs = [run for run in runs if run]
    chosen = next((run for run in runs if any(imports_torch(body[i]) for i in run)), None)
    if chosen is None:
        chosen = next((run for run in runs if all(_third_party(body[i]) for i in run)), None)
    if chosen is None:
        return None
    first, last = chosen[0], chosen[-1] + 1
    if not all(is_import_line(body[i]) for i in range(last, end)):
        return None
    return first, last


def _third_party(statement) -> bool:
    key = _key(statement)
    return key is not None and key[1].split(".")[0] not in sys.stdlib_module_names and key[1] != "__future__"


def _key(statement) -> Optional[tuple[bool, str]]:
    """(is a `from` import, module) for a one-import line; None for others."""
    if len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Import):
        return False, _module_key(_dotted(small.names[0].name))
    if small.relative or small.module is None:
        return None
    return True, _module_key(_dotted(small.module))


def _module_key(module: str) -> str:
    return module.lower()


def _dotted(name) -> str:
    if isinstance(name, cst.Attribute):
        return f"{_dotted(name.value)}.{name.attr.value}"
    return name.value


def _blank_above(statement) -> bool:
    return any(line.comment is None for line in statement.leading_lines)


def is_import_line(statement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def imports_torch(statement) -> bool:
    """Whether an import line imports torch or one of its modules."""
    for small in statement.body:
        if isinstance(small, cst.Import):
            names = [alias.name for alias in small.names]
        else:
            names = [small.module] if small.module is not None and not small.relative else []
        if any(_dotted(name).split(".")[0] == "torch" for name in names):
            return True
    return False
