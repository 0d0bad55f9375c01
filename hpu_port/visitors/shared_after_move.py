"""How the ``shared-after-move`` kind matches and fixes code (see ``hpu_port.kinds.shared_after_move``)."""

from __future__ import annotations

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import RulesVisitor, written


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _Visitor(ctx, [rule])


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
