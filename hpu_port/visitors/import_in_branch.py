"""How the ``import-in-branch`` kind matches and fixes code (see ``hpu_port.kinds.import_in_branch``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import written
from hpu_port.walk import walk


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _Visitor(ctx, rules)


class _CallCollector:
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


class _ImportCollector:
    def __init__(self) -> None:
        self.imports: list[cst.CSTNode] = []

    def visit_Import(self, node) -> None:
        self.imports.append(node)

    def visit_ImportFrom(self, node) -> None:
        self.imports.append(node)


class _Visitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules

    def visit_If(self, node: cst.If) -> None:
        calls = _CallCollector()
        walk(node.test, [calls])
        for call in calls.calls:
            hit = self.ctx.qualify(call.func)
            rule = next((r for r in self.rules if hit and hit[0] in r.params["conditions"]), None)
            if rule is not None:
                self._report_imports(rule, node.body, written(call))
                return

    def _report_imports(self, rule, body, condition: str) -> None:
        imports = _ImportCollector()
        walk(body, [imports])
        for statement in imports.imports:
            if self.ctx.claim(statement):
                message = rule.message.format(name=written(statement), condition=condition)
                self.ctx.report(rule, statement, message)
