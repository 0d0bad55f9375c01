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
        # Per function, and the module's, the names assigned a device name
        # (`cuda_device = 'cuda' if ... else 'cpu'`): named like an index, they
        # hold a string, which the device-string rules port where it is written.
        self.named_devices: list[set[str]] = [_names_given_strings(ctx.module.body)]

    def visit_FunctionDef(self, node) -> None:
        self.scopes.append({})
        self.named_devices.append(set())

    def leave_FunctionDef(self, node) -> None:
        self.scopes.pop()
        self.named_devices.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        for name in names:
            if len(node.targets) == 1 and self._rank_like(node.value):
                self.scopes[-1][name] = node.value
            else:
                self.scopes[-1].pop(name, None)
            if _holds_a_string(node.value):
                self.named_devices[-1].add(name)

    def visit_Call(self, node: cst.Call) -> None:
        params = self.params
        positional = node.args[0].value if node.args and node.args[0].keyword is None else None
        for value in device_values(node, self.ctx, params["keywords"], params["methods"], params["calls"]):
            # A literal index only where the triggers look for one: `.to(0)`, `torch.device(0)`.
            self._check(value, literal_counts=value is positional)

    def _rank_like(self, value: cst.BaseExpression) -> bool:
        """A rank or GPU index (`local_rank`, `args.gpu`, `rank % n_gpus`)."""
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo):
            value = value.left
        last = _last_name(value)
        return last is not None and bool(self.params["words"] & name_parts(last))

    def _check(self, value: cst.BaseExpression, literal_counts: bool = False) -> None:
        if isinstance(value, cst.Name) and any(value.value in names for names in self.named_devices):
            return  # a device name kept in a variable named like an index
        tensor = _index_of_tensor(value, self.params["index-methods"])
        if tensor is not None and self.ctx.claim(value):
            # `x.to(y.get_device())`: the index of y's device, which an integer names
            # as CUDA's; `y.device` names y's device on every backend.
            fix = self.ctx.replace(value, replace_expression(f"{written(tensor)}.device"))
            self.ctx.report(self.rule, value, self.rule.message.format(name=written(value)) + f" (use `{written(tensor)}.device`)", fix)
            return
        literal = literal_counts and self.params["integer-literals"] and isinstance(value, cst.Integer)
        if (literal or self._rank_like(value)) and self.ctx.claim(value):
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


def _index_of_tensor(value: cst.BaseExpression, methods: frozenset) -> Optional[cst.BaseExpression]:
    """``y`` of `y.get_device()`, the index of a tensor's device."""
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) and value.func.attr.value in methods:
        return value.func.value
    return None


def _names_given_strings(body) -> set[str]:
    """The module-level names some statement assigns a value holding a string."""
    found = set()
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and _holds_a_string(small.value):
                found.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return found


def _holds_a_string(value: cst.BaseExpression) -> bool:
    """`"cuda"`, `f"cuda:{rank}"`, `"cuda" if ... else "cpu"`, `torch.device("cuda")`."""
    if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.IfExp):
        return _holds_a_string(value.body) or _holds_a_string(value.orelse)
    if isinstance(value, cst.Call) and value.args:
        return written(value.func).endswith("device") and _holds_a_string(value.args[0].value)
    return False

