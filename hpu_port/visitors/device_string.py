"""How the ``device-string`` kind matches and fixes code (see ``hpu_port.kinds.device_string``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import written


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _DeviceStringVisitor(ctx, rules)


ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


class _DeviceStringVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules
        self.templates: set[cst.SimpleString] = set()

    # Strings whose role as a template is visible from the expression around them.
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Modulo, cst.Add)) and isinstance(node.left, cst.SimpleString):
            self.templates.add(node.left)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in ATTRIBUTE_FUNCTIONS and len(node.args) > 1:
            # getattr(x, "cuda"): the name of an attribute, not a device.
            if isinstance(node.args[1].value, cst.SimpleString):
                self.ctx.claim(node.args[1].value)
            return
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "format"
            and isinstance(func.value, cst.SimpleString)
        ):
            self.templates.add(func.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.ctx.docstring_depth or "b" in node.prefix.lower():
            return
        raw = node.raw_value
        for rule in self.rules:
            params = rule.params
            if params["exact"].fullmatch(raw) or (node in self.templates and params["template"].fullmatch(raw)):
                new_raw = params["replacement"] + raw[len(params["device"]):]
                self._report(rule, node, lambda updated: updated.with_changes(
                    value=updated.prefix + updated.quote + new_raw + updated.quote
                ))
                return

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if self.ctx.docstring_depth or not node.parts:
            return
        first, rest = node.parts[0], node.parts[1:]
        if not isinstance(first, cst.FormattedStringText):
            return
        for rule in self.rules:
            params = rule.params
            text = first.value
            exact = params["exact"].fullmatch(text) and not rest
            built = (
                text == params["device"] + ":"
                and len(rest) == 1
                and isinstance(rest[0], cst.FormattedStringExpression)
            )
            if exact or built:
                self._report(rule, node, _replace_first_part(params["replacement"] + text[len(params["device"]):]))
                return

    def _report(self, rule, node, edit) -> None:
        if not self.ctx.claim(node):
            return
        message = rule.message.format(name=written(node), replacement=rule.params["replacement"])
        self.ctx.report(rule, node, message, self.ctx.replace(node, edit))


def _replace_first_part(new_text: str):
    def edit(updated: cst.FormattedString) -> cst.FormattedString:
        parts = list(updated.parts)
        parts[0] = parts[0].with_changes(value=new_text)
        return updated.with_changes(parts=parts)

    return edit
