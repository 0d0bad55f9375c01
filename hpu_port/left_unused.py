"""Local names a rewrite leaves unused.

A rewrite can drop the last read of a local name (`torch.device("cuda",
local_rank)` becomes `torch.device("hpu", 0)`), leaving its assignment behind:
ruff and flake8 then report F841, and the assignment may still have side
effects (`int(os.environ["LOCAL_RANK"])` raises without the variable), so it
is reported, not removed. Only function scopes are judged, as F841 does: a
module's names may be imported by others.

Reads the two versions with the standard parser; no libcst, nothing printed.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Iterator, Optional

# Calls that read a scope's names by their text: a name may be used without a
# `Name` node. `vars(obj)` reads an object's attributes; only `vars()` reads the scope.
_DYNAMIC_READS = frozenset({"locals", "eval", "exec"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WORD = re.compile(rb"[A-Za-z_]\w*")
# A name assigned on an indented line: a local, perhaps.
_INDENTED_ASSIGNMENT = re.compile(rb"(?m)^[ \t]+([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")


def names_left_unused(old: bytes, new: bytes) -> list[tuple[str, int]]:
    """(name, line of its first assignment in ``old``) for each local that
    ``old`` reads in a function and ``new`` only assigns there."""
    if not _may_leave_unused(old, new):
        return []  # no assigned name is written fewer times: nothing to parse
    old_functions = _by_key(old)
    new_functions = _by_key(new)
    if old_functions is None or new_functions is None:
        return []
    left = []
    for key, function in new_functions.items():
        before = old_functions.get(key)
        if before is None or _reads_dynamically(function):
            continue
        read_before, assigned_before = _reads(before), _stores(before)
        reads, declared = _reads(function), _declared_outside(function)
        for name in _stores(function):
            if read_before[name] and not reads[name] and name in assigned_before and name not in declared and not name.startswith("_"):
                left.append((name, assigned_before[name]))
    return sorted(left, key=lambda pair: pair[1])


def _may_leave_unused(old: bytes, new: bytes) -> bool:
    """Whether some name assigned on an indented line of ``old`` occurs
    fewer times in ``new``: a cheap test that spares two parses of most
    rewritten files (a renamed call or string drops no local's read)."""
    assigned = set(_INDENTED_ASSIGNMENT.findall(old))
    if not assigned:
        return False
    before, after = Counter(_WORD.findall(old)), Counter(_WORD.findall(new))
    return any(after[name] < before[name] for name in assigned)


def _parse(source: bytes) -> Optional[ast.Module]:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _by_key(source: bytes) -> Optional[dict]:
    tree = _parse(source)
    return None if tree is None else dict(_functions(tree))


def _functions(tree: ast.AST, prefix: tuple = ()) -> Iterator[tuple[tuple, ast.AST]]:
    """Each function with a key that survives a rewrite: its nesting of names,
    numbered among namesakes (a rewrite moves lines, never renames functions)."""
    seen: Counter = Counter()
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            seen[node.name] += 1
            key = (*prefix, f"{node.name}#{seen[node.name]}")
            if isinstance(node, _FUNCTIONS):
                yield key, node
            yield from _functions(node, key)
        else:
            yield from _functions(node, prefix)


def _reads(function: ast.AST) -> Counter:
    """Every read of a name in ``function``, nested functions included (a closure reads its outer locals)."""
    return Counter(node.id for node in ast.walk(function) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store))


def _stores(function: ast.AST) -> dict[str, int]:
    """Names plainly assigned in ``function`` itself (not in nested scopes), with their first line."""
    stores: dict[str, int] = {}
    for node in _own_nodes(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    stores.setdefault(target.id, node.lineno)
    return stores


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _declared_outside(function: ast.AST) -> set[str]:
    return {name for node in ast.walk(function) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}


def _reads_dynamically(function: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and (node.func.id in _DYNAMIC_READS or node.func.id == "vars" and not node.args)
        for node in ast.walk(function)
    )
