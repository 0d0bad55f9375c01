"""How the ``rename`` kind matches and fixes code (see ``hpu_port.kinds.rename``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.edits import replace_expression
from hpu_port.model import Rule
from hpu_port.visitors._references import ReferenceVisitor, written


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _RenameVisitor(ctx, rules)


class _RenameVisitor(ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table = {}
        for rule in rules:
            for old, new in rule.params["renames"].items():
                self.table.setdefault(old, (rule, new))
        super().__init__(ctx, set(self.table))

    def on_reference(self, node, qualified, binding) -> None:
        rule, target = self.table[qualified]
        message = rule.message.format(name=written(node), replacement=target)
        spelling = self.ctx.spell(target, rule.params["import-as"])
        if spelling is None:
            self.ctx.report(rule, node, message + f" (not rewritten: a local name hides `{target}`)")
            return
        self.ctx.report(
            rule, node, message, self.ctx.replace(node, replace_expression(spelling.code)), spelling, binding
        )
