"""Module-level functions and classes that only held code uses (for the
``other-backend`` kind).

`StaticBufferLoader` fills the input buffers of a CUDA-graph wrapper that is
held for CUDA's internals. Ported alone, such a helper hands HPU tensors and
streams to the CUDA code that is its only user, so it is held with it; so is
a helper of that helper (`copy_tensors_in_struct`, used only by
`StaticBufferLoader`).

Uses are counted in the file's text as read, top-level statement by
statement (`check` stubs out code no rule acts on, and both commands must
agree): a name mentioned anywhere else (another function, `__all__`, a
comment) may be used on Gaudi, and its definition is ported as usual. A class
named as the base of a held class is an interface other modules build on
too, not a helper.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.positions import statement_starts
from hpu_port.visitors._references import written


def mark_helpers_of_held_code(ctx: FileContext) -> None:
    units = ctx.other_backend.units
    if not any(statement in units for statement in ctx.module.body):
        return
    statements = {node: Counter(_IDENTIFIER.findall(text)) for node, text in _statement_texts(ctx).items()}
    in_file = Counter(_IDENTIFIER.findall(ctx.source or b""))
    helpers: dict[cst.CSTNode, str] = {}
    changed = True
    while changed:
        changed = False
        held = lambda statement: statement in units or statement in helpers
        fixtures = {f.name.value for f in statements if isinstance(f, cst.FunctionDef) and held(f) and _is_fixture(f)}
        for node in statements:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node not in units and node not in helpers:
                user = _only_user(node, statements, in_file, held)
                taken = _fixture_taken(node, fixtures)
                if user is not None:
                    helpers[node] = f"only `{user}`, which is not ported, uses it: ported alone, it would hand the HPU's values to that CUDA code"
                elif taken is not None:
                    helpers[node] = f"it takes the fixture `{taken}`, which is not ported: it tests that CUDA code"
                changed = changed or node in helpers
    for node, why in helpers.items():
        ctx.other_backend.mark(node, why)


def _is_fixture(function: cst.FunctionDef) -> bool:
    """`@pytest.fixture` (or `@fixture(scope=...)`)."""
    return any(written(d.decorator).split("(")[0].split(".")[-1] == "fixture" for d in function.decorators)


def _fixture_taken(node, fixtures: set) -> Optional[str]:
    """The held fixture a test function asks for by its parameter's name."""
    if not isinstance(node, cst.FunctionDef) or not fixtures:
        return None
    params = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
    return next((p.name.value for p in params if p.name.value in fixtures), None)


# A name as code mentions it: not an attribute (`x.name`), not part of a longer word.
_IDENTIFIER = re.compile(rb"(?<![\w.])[A-Za-z_]\w*")


def _statement_texts(ctx: FileContext) -> dict[cst.CSTNode, bytes]:
    """Each top-level statement's lines in the source as read."""
    starts = ctx.statement_starts
    if starts is None and ctx.tree is not None and ctx.source:
        starts = statement_starts(ctx.module, ctx.tree)
    if not starts:
        return {}
    lines = ctx.source.splitlines(keepends=True)
    return {statement: b"".join(lines[start - 1:node.end_lineno]) for statement, (start, node) in starts.items()}


def _only_user(node, statements: dict, in_file: Counter, held) -> Optional[str]:
    """The name of a held statement that uses ``node``, when every use of it
    outside its own definition is in held statements (``statements`` and
    ``in_file``: how often each name occurs in each statement and the file)."""
    name = node.name.value.encode()
    elsewhere = in_file[name] - statements[node][name]
    if elsewhere <= 0:
        return None
    users = [(s, counts[name]) for s, counts in statements.items() if s is not node and held(s)]
    if sum(count for _, count in users) != elsewhere:
        return None
    if any(isinstance(s, cst.ClassDef) and any(_names(base.value, node.name.value) for base in s.bases) for s, _ in users):
        return None
    return next((s.name.value for s, count in users if count and hasattr(s, "name")), "code kept for CUDA")


def _names(expr: cst.BaseExpression, name: str) -> bool:
    return written(expr).split(".")[-1] == name
