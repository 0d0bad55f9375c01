"""How the ``drop-call`` kind matches and fixes code (see ``hpu_port.kinds.drop_call``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.branches import Held
from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.names import dotted_name
from hpu_port.visitors._references import ReferenceVisitor, written


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _DropCallVisitor(ctx, rules)


class _DropCallVisitor(ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.by_name = {}
        for rule in rules:
            for name in set().union(*rule.params.values()):
                self.by_name.setdefault(name, rule)
        super().__init__(ctx, set(self.by_name))

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if isinstance(call, cst.Call):
            hit = self._hit(call.func, "calls")
            if hit:
                self._drop(node, call.func, hit)
            elif self._hit(call.func, "harmless"):
                self._leave_alone(node, call.func, self._hit(call.func, "harmless"))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        hit = self._hit(target, "attributes")
        if hit:
            self._drop(node, target, hit)
            return
        harmless = self._hit(target, "harmless")
        if harmless:
            self._leave_alone(node, target, harmless)
            return
        if isinstance(node.value, cst.Call):
            hit = self._hit(node.value.func, "identity-calls")
            if hit and _assigns_its_own_arguments(target, node.value):
                self._drop(node, node.value.func, hit)

    def _hit(self, expr, key):
        found = self.ctx.qualify(expr)
        if found is None:
            return None
        rule = self.by_name.get(found[0])
        if rule is None or found[0] not in rule.params[key]:
            return None
        return rule, found

    def _drop(self, statement, named, hit) -> None:
        rule, (qualified, binding) = hit
        if not self.ctx.claim(named):
            return
        message = rule.message.format(name=written(named))
        # Removing a use of `import torch` does not make the import removable
        # (see _drop_fully_rewritten_imports); a dotted one does.
        self.ctx.report(rule, statement, message, lambda plan: plan.remove_statement(statement), binding=binding)

    def _leave_alone(self, statement, named, hit) -> None:
        rule = hit[0]
        if self.ctx.claim(named):
            why = "it does nothing where CUDA is absent and breaks nothing: left as it is"
            self.ctx.report(rule, statement, rule.message.format(name=written(named)), kept=Held("harmless", why, quiet=True))

    def on_reference(self, node, qualified, binding) -> None:
        rule = self.by_name[qualified]
        message = rule.message.format(name=written(node))
        self.ctx.report(rule, node, message + " (used here in a way hpu-port cannot remove: edit by hand)")


def _assigns_its_own_arguments(target, call: cst.Call) -> bool:
    names = [dotted_name(e.value) for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [dotted_name(target)]
    positional = [dotted_name(a.value) for a in call.args if a.keyword is None and not a.star]
    return None not in names and names == positional[: len(names)]
