"""How the ``string-literal`` kind matches and fixes code (see ``hpu_port.kinds.string_literal``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import written


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _StringLiteralVisitor(ctx, rules)


class _StringLiteralVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules
        self.dict_keys: set[cst.CSTNode] = set()

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.dict_keys.add(node.key)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.ctx.docstring_depth or "b" in node.prefix.lower():
            return
        value = node.raw_value
        for rule in self.rules:
            if rule.params["dict-keys-only"] and node not in self.dict_keys:
                continue
            new = rule.params["replace"].get(value)
            if new is not None:
                if self.ctx.claim(node):
                    message = rule.message.format(name=written(node), replacement=new)
                    edit = lambda u, new=new: u.with_changes(value=u.prefix + u.quote + new + u.quote)
                    self.ctx.report(rule, node, message, self.ctx.replace(node, edit))
                return
            if any(p.fullmatch(value) for p in rule.params["match"]) and self.ctx.claim(node):
                self.ctx.report(rule, node, rule.message.format(name=written(node), replacement=""))
                return
