"""How the ``device-index`` kind matches code (see ``hpu_port.kinds.device_index``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.kinds.device_string import name_parts
from hpu_port.model import Rule
from hpu_port.edits import replace_expression
from hpu_port.visitors._device_positions import device_values
from hpu_port.visitors._references import written


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _DeviceIndexVisitor(ctx, rule)


class _DeviceIndexVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        self.params = rule.params
        # Per function (None: module level), the names last assigned a rank:
        # `device = local_rank` ... `.to(device)`.
        self.scopes: list[dict[str, cst.BaseExpression]] = [{}]

    def visit_FunctionDef(self, node) -> None:
        self.scopes.append({})

    def leave_FunctionDef(self, node) -> None:
        self.scopes.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        for name in names:
            if len(node.targets) == 1 and self._rank_like(node.value):
                self.scopes[-1][name] = node.value
            else:
                self.scopes[-1].pop(name, None)

    def visit_Call(self, node: cst.Call) -> None:
        params = self.params
        for value in device_values(node, self.ctx, params["keywords"], params["methods"], params["calls"]):
            self._check(value)

    def _rank_like(self, value: cst.BaseExpression) -> bool:
        """A rank or GPU index (`local_rank`, `args.gpu`, `rank % n_gpus`)."""
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo):
            value = value.left
        last = _last_name(value)
        return last is not None and bool(self.params["words"] & name_parts(last))

    def _check(self, value: cst.BaseExpression) -> None:
        if self._rank_like(value) and self.ctx.claim(value):
            # Each process owns one Gaudi: the index becomes the process's device.
            fix = self.ctx.replace(value, replace_expression('"hpu"'))
            self.ctx.report(self.rule, value, self.rule.message.format(name=written(value)), fix)
            return
        held = self.scopes[-1].get(value.value) if isinstance(value, cst.Name) else None
        if held is not None and self.ctx.claim(value):
            self.ctx.report(self.rule, value, self.rule.message.format(name=f"{value.value} = {written(held)}"))


def _last_name(value) -> Optional[str]:
    if isinstance(value, cst.Name):
        return value.value
    if isinstance(value, cst.Attribute):
        return value.attr.value
    return None
