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

from hpu_port.lint_config import DEFAULT_STYLE, ImportStyle

Place = tuple  # (index in the body, starts an existing section there, is a section of its own)


def sorted_place(body: list, end: int, statement: str, style: ImportStyle = DEFAULT_STYLE) -> Optional[Place]:
    """Where in ``body`` the plain one-line import ``statement`` keeps the
    imports of ``body[:end]`` sorted; None if there is no such place."""
    if not statement.startswith("import "):
        return None
    run = _third_party_section(body, end, style)
    if run is None:
        section_after = _section_after_third_party(body, end, style)
        return None if section_after is None else (section_after, False, True)
    first, last = run
    keys = [_key(body[i]) for i in range(first, last)]
    if None in keys:
        return None
    new = _statement_key(statement)
    by_type = keys == sorted(keys)
    by_module = [module for _, module in keys] == sorted(module for _, module in keys)
    if by_type and style.force_sort is not True:
        # `import x` before `from x import y`, each kind by module.
        before = sum(key < new for key in keys)
    elif by_module and style.force_sort is not False:
        before = sum(module < new[1] for _, module in keys)
    else:
        return None
    return first + before, before == 0, False


def in_sorted_order(statements: list[str]) -> list[str]:
    """One-line imports in isort's order (`import x` lines first, each kind by
    module); anything else keeps the order given."""
    keys = [_statement_key(code) for code in statements]
    if None in keys:
        return statements
    return [code for _, code in sorted(zip(keys, statements))]


def _statement_key(code: str) -> Optional[tuple[bool, str]]:
    words = code.split("#")[0].split()
    if len(words) >= 2 and (words[0] == "from" or words[0] == "import" and "," not in code.split("#")[0]):
        return words[0] == "from", _module_key(words[1])
    return None


def merged_from_imports(statements: list[str]) -> list[str]:
    """``from m import a`` and ``from m import b`` as one ``from m import a, b``,
    where the first of them stood, names in isort's order (constants, classes,
    then functions); statements with an alias or a comment stay as they are."""
    names: dict[str, list[str]] = {}
    for code in statements:
        module = _single_from_import(code)
        if module is not None:
            names.setdefault(module, []).append(code.rsplit(" import ", 1)[1].strip())
    merged = []
    for code in statements:
        module = _single_from_import(code)
        if module is None or len(names.get(module, ())) == 1:
            merged.append(code)
        elif module in names:  # the first of them: the others were merged into it
            ordered = sorted(set(names.pop(module)), key=lambda name: (not name.isupper(), not name[:1].isupper(), name.lower()))
            merged.append(f"from {module} import {', '.join(ordered)}")
    return merged


def _single_from_import(code: str) -> Optional[str]:
    words = code.split()
    if len(words) == 4 and words[0] == "from" and words[2] == "import" and words[3].isidentifier():
        return words[1]
    return None


def place_at(body: list, place: Place, new: list) -> list:
    """``body`` with ``new`` statements at ``place`` (``sorted_place``); a
    section's first statement hands its blank lines above to the new first
    one, and a section of their own is set apart by blank lines."""
    index, starts_section, own_section = place
    if own_section and new:
        if index > 0:
            new = [new[0].with_changes(leading_lines=[cst.EmptyLine()]), *new[1:]]
        if not body[index].leading_lines:
            body = [*body[:index], body[index].with_changes(leading_lines=[cst.EmptyLine()]), *body[index + 1:]]
        return [*body[:index], *new, *body[index:]]
    if starts_section and index < len(body) and new and body[index].leading_lines:
        lines = body[index].leading_lines
        new = [new[0].with_changes(leading_lines=lines), *new[1:]]
        body = [*body[:index], body[index].with_changes(leading_lines=[]), *body[index + 1:]]
    return [*body[:index], *new, *body[index:]]


def _third_party_section(body: list, end: int, style: ImportStyle = DEFAULT_STYLE) -> Optional[tuple[int, int]]:
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
        if not runs or not runs[-1] or (_blank_above(statement) and not _types_apart(body, index, style)):
            runs.append([])
        runs[-1].append(index)
    runs = [run for run in runs if run]
    chosen = None
    if not style.torch_own_section:
        chosen = next((run for run in runs if any(imports_torch(body[i]) for i in run)), None)
    if chosen is None:
        # torch's own section (when it has one) is not where a third-party import goes.
        third_party = [run for run in runs if all(_third_party(body[i], style) for i in run)]
        if style.torch_own_section:
            third_party = [run for run in third_party if not any(imports_torch(body[i]) for i in run)]
        chosen = next(iter(third_party), None)
    if chosen is None:
        return None
    first, last = chosen[0], chosen[-1] + 1
    if not all(is_import_line(body[i]) for i in range(last, end)):
        return None
    return first, last


def _section_after_third_party(body: list, end: int, style: ImportStyle) -> Optional[int]:
    """Where a new third-party section goes when the module has none: before
    the first section isort puts after third-party (the project's own modules,
    relative imports, torch's own section unless the order puts it first), or
    after torch's section when it is first and last; only where nothing but
    imports follows up to ``end``."""
    if not (style.first_party or style.torch_own_section):
        return None
    for index in range(end):
        if _after_third_party(body[index], style):
            return index if all(is_import_line(body[i]) for i in range(index, end)) else None
    if style.torch_before_third_party and end and is_import_line(body[end - 1]) and imports_torch(body[end - 1]):
        return end
    return None


def _after_third_party(statement, style: ImportStyle) -> bool:
    if not is_import_line(statement):
        return False
    if any(isinstance(small, cst.ImportFrom) and small.relative for small in statement.body):
        return True
    key = _key(statement)
    if key is None:
        return False
    if style.torch_own_section and not style.torch_before_third_party and imports_torch(statement):
        return True
    return key[1].split(".")[0] in _lowered(style.first_party)


def _third_party(statement, style: ImportStyle = DEFAULT_STYLE) -> bool:
    key = _key(statement)
    if key is None:
        return False
    top = key[1].split(".")[0]
    return top not in sys.stdlib_module_names and top != "__future__" and top not in _lowered(style.first_party)


def _lowered(modules: tuple) -> set:
    return {module.split(".")[0].lower() for module in modules}


def _types_apart(body: list, index: int, style: ImportStyle) -> bool:
    """Whether the blank lines above ``body[index]`` are the ones
    `lines-between-types` puts between a section's plain and `from` imports."""
    if not style.lines_between_types or index == 0:
        return False
    above, here = _key(body[index - 1]), _key(body[index])
    if above is None or here is None or above[0] or not here[0]:
        return False
    return _third_party(body[index - 1], style) == _third_party(body[index], style)


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
