"""How the ``unwrap-context`` kind matches and fixes code (see ``hpu_port.kinds.unwrap_context``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import written
from hpu_port.branches import Held


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _UnwrapVisitor(ctx, rules)


class _UnwrapVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            hit = self.ctx.qualify(call.func)
            rule = next((r for r in self.rules if hit and hit[0] in r.params["calls"]), None)
            if rule is not None and self.ctx.claim(call):
                self._unwrap(rule, node, item, call)

    def _unwrap(self, rule, node: cst.With, item: cst.WithItem, call: cst.Call) -> None:
        index = rule.params["value-argument"]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        usable = (
            len(node.items) == 1
            and isinstance(node.body, cst.IndentedBlock)
            and index < len(positional)
            and (item.asname is None or isinstance(item.asname.name, cst.Name))
        )
        value = positional[index].value if index < len(positional) else None
        message = rule.message.format(name=written(call.func), replacement=written(value) if value is not None else "")
        if not usable:
            self.ctx.report(rule, call, message, kept=Held("by-hand", "unwrap this block by hand"))
            return
        alias = item.asname.name.value if item.asname is not None else None
        self.ctx.report(rule, call, message, self.ctx.replace(node, lambda updated: _body_of(updated, alias, value)))


def _body_of(updated: cst.With, alias, value) -> cst.FlattenSentinel:
    statements = list(updated.body.body)
    if alias is not None:
        statements = [s.visit(_Substitute(alias, value)) for s in statements]
    if statements:
        first = statements[0]
        statements[0] = first.with_changes(leading_lines=[*updated.leading_lines, *first.leading_lines])
    return cst.FlattenSentinel(statements)


class _Substitute(cst.CSTTransformer):
    def __init__(self, name: str, value: cst.BaseExpression) -> None:
        super().__init__()
        self.name, self.value = name, value

    def leave_Name(self, original, updated):
        return self.value if updated.value == self.name else updated

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)  # `f(name=...)` keywords stay

    def leave_Attribute(self, original, updated):
        # Only the object of an attribute is a use of the name, never `.attr`.
        if original.attr.value == self.name:
            return updated.with_changes(attr=original.attr)
        return updated
