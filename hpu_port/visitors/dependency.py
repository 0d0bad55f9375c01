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
    def __init__(self, ctx, rules) -> None:
        super().__init__(ctx, rules)
        self.keyword_values: list[tuple] = []  # (rule, the value of a keyword it reads)

    def visit_Call(self, node: cst.Call) -> None:
        hit = self.ctx.qualify(node.func)
        if hit is None or hit[0] not in SETUP_FUNCTIONS:
            return
        for arg in node.args:
            for rule in self.rules:
                if arg.keyword is not None and arg.keyword.value in rule.params["keywords"]:
                    self.keyword_values.append((rule, arg.value))

    def leave_Module(self, node: cst.Module) -> None:
        # Reported once the walk is over: a requirement may sit in a list
        # assigned before the `setup()` call, in a statement of its own.
        assigned = _module_assignments(node) if self.keyword_values else {}
        for rule, value in self.keyword_values:
            for string in _requirement_strings(value, assigned):
                requirement = literal_value(string.value)
                advice = get_kind(rule.kind).advice(rule, requirement) if isinstance(requirement, str) else None
                if advice is not None:
                    self.ctx.report(rule, string, rule.message.format(name=requirement, file="setup.py", advice=advice))


def _module_assignments(module: cst.Module) -> dict[str, list]:
    """The values assigned to each name at module level (`REQUIRED = [...]`)."""
    assigned: dict[str, list] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            else:
                continue
            for target in targets:
                if isinstance(target, cst.Name):
                    assigned.setdefault(target.value, []).append(small.value)
    return assigned


def _requirement_strings(value, assigned: dict[str, list]) -> list:
    """The string literals in a `setup()` keyword's value, and in the module-level
    lists it names (`extras_require={"gpu": gpu_requirements}`), each once."""
    collector = _Strings()
    pending, followed = [value], set()
    while pending:
        walk(pending.pop(), [collector])
        for name in collector.names:
            if name not in followed:
                followed.add(name)
                pending.extend(assigned.get(name, ()))
        collector.names.clear()
    return collector.found


class _Strings:
    def __init__(self) -> None:
        self.found: list = []
        self.names: list[str] = []
        self.keys: set = set()

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.keys.add(node.key)  # the name of an extra (`{"triton": [...]}`), not a requirement

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node not in self.keys:
            self.found.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)
