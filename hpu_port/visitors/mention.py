"""How the ``mention`` kind matches and fixes code (see ``hpu_port.kinds.mention``)."""

from __future__ import annotations

import libcst as cst

from hpu_port.branches import REASON, Held
from hpu_port.context import FileContext
from hpu_port.model import Rule


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _MentionVisitor(ctx, rule)


class _MentionVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        self.pattern = rule.params["pattern"]

    def _check(self, node, text: str) -> None:
        match = self.pattern.search(text)
        if match:
            shown = text if len(text) <= 60 else text[:57] + "..."
            message = self.rule.message.format(name=shown)
            # In another device's arm of a choice that has (or gains) an HPU
            # arm, the mention is right as it is: said nowhere, its region given.
            chain = self.ctx.branches.open[-1] if self.ctx.branches.open else None
            kept = Held("other-device", REASON, region=chain, quiet=True) if chain is not None else None
            self.ctx.report(self.rule, node, message, kept=kept)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node, node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self.ctx.docstring_depth:
            self._check(node, node.value)

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        if not self.ctx.docstring_depth:
            self._check(node, node.value)
