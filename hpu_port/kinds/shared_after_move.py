"""Kind ``shared-after-move``: tying parameters after the module was moved to the device (report only).

In a block of statements, once ``model.to(...)`` (or another of the
``move-methods``) was called on a name, an assignment of one attribute chain of
that name to another (``model.decoder.weight = model.encoder.weight``) is
reported: the tie should happen before the move, inside the module.
"""

from __future__ import annotations

import ast

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds._references import RulesVisitor, written
from hpu_port.triggers import ast_root, text_trigger


@register_kind
class SharedAfterMove(Kind):
    name = "shared-after-move"
    KEYS = {"move-methods": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "module"})

    def build_params(self, table):
        return {"move-methods": set(string_list(table["move-methods"], "move-methods"))}

    def triggers(self, rule):
        return [text_trigger(f".{m}(") for m in sorted(rule.params["move-methods"])]

    def screen(self, rule, view):
        # Some name has one attribute assigned another (a statement, so cheap
        # to find) and is moved (`m.to(...)`).
        tied = set()
        for node in view.nodes(ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and isinstance(node.value, ast.Attribute):
                root = ast_root(node.targets[0])
                if root is not None and root == ast_root(node.value):
                    tied.add(root)
        if not tied:
            return False
        methods = rule.params["move-methods"]
        return any(
            isinstance(call.func, ast.Attribute) and call.func.attr in methods and isinstance(call.func.value, ast.Name)
            and call.func.value.id in tied
            for call in view.nodes(ast.Call)
        )

    def visitor(self, rules, ctx):
        return _Visitor(ctx, rules)


class _Visitor(RulesVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__(ctx, rules)
        self.methods = set().union(*(r.params["move-methods"] for r in rules))

    def visit_Module(self, node: cst.Module) -> None:
        self._scan(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._scan(node.body)

    def _scan(self, statements) -> None:
        moved: set[str] = set()
        for statement in statements:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                tie = _tie(small)
                if tie is not None and tie in moved:
                    rule = self.rules[0]
                    self.ctx.report(rule, small, rule.message.format(name=written(small), module=tie))
                moved |= _moved_names(small, self.methods)


def _root(expr) -> str | None:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _tie(statement) -> str | None:
    """The module name in `m.a.weight = m.b.weight`, else None."""
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0].target, statement.value
    if not (isinstance(target, cst.Attribute) and isinstance(value, cst.Attribute)):
        return None
    root = _root(target)
    return root if root is not None and root == _root(value) else None


def _moved_names(statement, methods: set) -> set:
    """Names a statement moves: `model.to(dev)`, `model = model.to(dev)`."""
    value = statement.value if isinstance(statement, (cst.Expr, cst.Assign)) else None
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return set()
    if value.func.attr.value not in methods or not isinstance(value.func.value, cst.Name):
        return set()
    return {value.func.value.value}
