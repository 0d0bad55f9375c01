"""Kind ``import-in-branch``: imports that only run when a condition holds (report only).

``if torch.cuda.is_available(): import my_cuda_kernels`` imports CUDA-only code
behind a capability check. Once the check is ported to HPU (or a runtime shim
makes it true) the branch runs on Gaudi and the import fails. Every import in
the body of an ``if`` whose test calls one of the ``conditions`` is reported.
"""

from __future__ import annotations

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds._references import written
from hpu_port.triggers import name_trigger
from hpu_port.walk import walk


@register_kind
class ImportInBranch(Kind):
    name = "import-in-branch"
    KEYS = {"conditions": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "condition"})

    def build_params(self, table):
        return {"conditions": set(string_list(table["conditions"], "conditions"))}

    def handled_names(self, rule):
        return set(rule.params["conditions"])

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["conditions"]]

    def visitor(self, rules, ctx):
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
