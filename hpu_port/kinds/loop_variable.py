"""Kind ``loop-variable``: a ``range`` loop's variable used as a constant of the graph (report only).

In ``for i in range(...)``, indexing a tensor with ``i`` (``steps[i]``) or
passing ``i`` to one of the ``calls`` (tensor factories such as
``torch.arange``) puts a different constant in the graph on every iteration.
A name counts as a tensor when it is assigned the result of a call of
something under one of the ``tensor-modules`` (``steps = torch.linspace(...)``)
in the same function, or in one that encloses it, or at module level.
"""

from __future__ import annotations

import ast
import re

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import Trigger, ast_root


# Between two tokens: spaces, line continuations, parentheses, comments.
_GAP = rb"(?:[\s\\()]|#[^\n]*)"
# A `for` statement over `range(...)`, which always starts a logical line,
# so its own (an optional byte order mark and indentation before it);
# comprehensions that are not so placed do not count.
RANGE_LOOP = re.compile(
    rb"^(?:\xef\xbb\xbf)?[ \t\f]*for" + _GAP + rb"+[A-Za-z_\x80-\xff][\w\x80-\xff]*" + _GAP + rb"*in\b" + _GAP + rb"*range\b" + _GAP + rb"*\(",
    re.MULTILINE,
)


@register_kind
class LoopVariable(Kind):
    name = "loop-variable"
    KEYS = {"calls": (list, True), "tensor-modules": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "variable"})

    def build_params(self, table):
        return {
            "calls": set(string_list(table["calls"], "calls")),
            "tensor-modules": tuple(m + "." for m in string_list(table["tensor-modules"], "tensor-modules")),
        }

    def triggers(self, rule):
        roots = {m.split(".")[0] for m in rule.params["tensor-modules"]}
        return [Trigger(words=frozenset({b"range", root.encode()}), pattern=RANGE_LOOP) for root in sorted(roots)]

    def screen(self, rule, view):
        return bool(self.places(rule, view))

    def places(self, rule, view):
        # Each `for <name> in range(...)` whose body indexes a torch-made
        # tensor with that name, or calls a factory named like one of the
        # `calls`; a tensor made anywhere in the file counts.
        return view.remembered(("loop-variable", rule.code), lambda: _loops_using_their_variable(rule, view))


def _loops_using_their_variable(rule, view) -> list[tuple[int, int]]:
    torch_names = view.imported_names({m.rstrip(".").split(".")[0] for m in rule.params["tensor-modules"]})
    # `B, C = torch.split(...)` binds tensors too, as the full parser's check sees it.
    tensors = {
        name.id
        for assign in view.nodes(ast.Assign)
        if isinstance(assign.value, ast.Call) and ast_root(assign.value.func) in torch_names
        for target in assign.targets
        for name in ast.walk(target)
        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store)
    }
    factories = {c.rsplit(".", 1)[-1] for c in rule.params["calls"]}
    return [
        (loop.lineno, loop.end_lineno)
        for loop in view.nodes(ast.For)
        if _is_range_loop(loop) and _uses_variable(loop, tensors, factories)
    ]


def _uses_variable(loop: ast.For, tensors: set, factories: set) -> bool:
    variable = loop.target.id
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                if node.value.id in tensors and _mentions(node.slice, variable):
                    return True
            elif isinstance(node, ast.Call) and _last_part(node.func) in factories:
                if any(_mentions(arg, variable) for arg in node.args):
                    return True
    return False


def _is_range_loop(loop: ast.For) -> bool:
    return (
        isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Name)
        and loop.iter.func.id == "range"
    )


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _last_part(func: ast.AST):
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None
