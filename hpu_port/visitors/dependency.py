"""How the ``dependency`` kind matches and fixes code (see ``hpu_port.kinds.dependency``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.kinds import get_kind
from hpu_port.model import Rule
from hpu_port.visitors._references import RulesVisitor, literal_value
from hpu_port.walk import walk


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _SetupVisitor(ctx, rules) if any(rule.params["keywords"] for rule in rules) else None


SETUP_FUNCTIONS = {"setuptools.setup", "distutils.core.setup"}


class _SetupVisitor(RulesVisitor):
    def visit_Call(self, node: cst.Call) -> None:
        hit = self.ctx.qualify(node.func)
        if hit is None or hit[0] not in SETUP_FUNCTIONS:
            return
        for arg in node.args:
            for rule in self.rules:
                if arg.keyword is not None and arg.keyword.value in rule.params["keywords"]:
                    self._check_strings(rule, arg.value)

    def _check_strings(self, rule, value) -> None:
        collector = _Strings()
        walk(value, [collector])
        for string in collector.found:
            requirement = literal_value(string.value)
            advice = get_kind(rule.kind).advice(rule, requirement) if isinstance(requirement, str) else None
            if advice is not None:
                self.ctx.report(rule, string, rule.message.format(name=requirement, file="setup.py", advice=advice))


class _Strings:
    def __init__(self) -> None:
        self.found: list = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.found.append(node)
