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
        # Each key of a dict display -> the literal keys of its dict.
        self.dict_keys: dict[cst.CSTNode, frozenset] = {}

    def visit_Dict(self, node: cst.Dict) -> None:
        elements = [e for e in node.elements if isinstance(e, cst.DictElement)]
        keys = frozenset(e.key.raw_value for e in elements if isinstance(e.key, cst.SimpleString))
        for element in elements:
            self.dict_keys[element.key] = keys

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.ctx.docstring_depth or "b" in node.prefix.lower():
            return
        value = node.raw_value
        for rule in self.rules:
            siblings = self.dict_keys.get(node)
            if rule.params["dict-keys-only"] and (siblings is None or not _companions_present(rule, siblings)):
                continue
            new = rule.params["replace"].get(value)
            if new is not None:
                if self.ctx.claim(node):
                    message = rule.message.format(name=written(node), replacement=new)
                    if siblings is not None and new in siblings:
                        self.ctx.report(rule, node, message + f" (not rewritten: the dict has a {new!r} key already)")
                        return
                    edit = lambda u, new=new: u.with_changes(value=u.prefix + u.quote + new + u.quote)
                    self.ctx.report(rule, node, message, self.ctx.replace(node, edit))
                return
            if any(p.fullmatch(value) for p in rule.params["match"]) and self.ctx.claim(node):
                self.ctx.report(rule, node, rule.message.format(name=written(node), replacement=""))
                return


def _companions_present(rule, siblings: frozenset) -> bool:
    wanted = rule.params["dict-with-keys"]
    return not wanted or bool(wanted & siblings)
