"""How the ``report`` kind matches and fixes code (see ``hpu_port.kinds.report``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import ReferenceVisitor, written


TYPE_TESTS = frozenset({"isinstance", "issubclass"})


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _ReportVisitor(ctx, rules)


class _ReportVisitor(ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table = {}
        for rule in rules:
            for name, advice in rule.params["names"].items():
                self.table.setdefault(name, (rule, advice))
        super().__init__(ctx, set(self.table))
        self.type_tests: set[cst.CSTNode] = set()

    def visit_Call(self, node: cst.Call) -> None:
        # The classes in `isinstance(x, A)` / `issubclass(C, (A, B))`.
        func = node.func
        if isinstance(func, cst.Name) and func.value in TYPE_TESTS and len(node.args) == 2:
            tested = node.args[1].value
            classes = [e.value for e in tested.elements] if isinstance(tested, cst.Tuple) else [tested]
            self.type_tests.update(classes)

    def leave_Module(self, node) -> None:
        for binding in self.ctx.scopes.bindings:
            module = binding.module_path
            for name, (rule, advice) in self.table.items():
                unused = rule.params["report-unused-imports"] and binding.uses == 0
                if not (rule.params["report-imports"] or unused):
                    continue
                base = name[:-2] if name.endswith(".*") else name
                if (module == base or module.startswith(base + ".")) and self.ctx.claim(binding.alias):
                    message = rule.message.format(name=f"import {module}", qualified=module, advice=advice)
                    self.ctx.report(rule, binding.alias, message.strip())
                    break

    def on_reference(self, node, qualified, binding) -> None:
        rule, advice = self.table.get(qualified) or self.table[self.wildcard_for(qualified)]
        if node in self.type_tests and not rule.params["type-checks"]:
            return
        message = rule.message.format(name=written(node), qualified=qualified, advice=advice)
        self.ctx.report(rule, node, message.strip())
