"""Kind ``drop-call``: remove statements that have no meaning on Gaudi.

Removed: an expression statement that is just a call of one of the ``calls``
(``torch.cuda.empty_cache()``); an assignment to one of the ``attributes``
(``torch.backends.cudnn.benchmark = True``); and, for calls listed in
``identity-calls``, an assignment whose targets are the call's own first
arguments (``model, optimizer = amp.initialize(model, optimizer, ...)``), which
would be a no-op without the call. Other uses are reported for a person. The
comments above a removed statement stay; an emptied block gets ``pass``.
"""

from __future__ import annotations

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds._references import ReferenceVisitor, written
from hpu_port.names import dotted_name
from hpu_port.triggers import name_trigger


@register_kind
class DropCall(Kind):
    name = "drop-call"
    KEYS = {"calls": (list, False), "attributes": (list, False), "identity-calls": (list, False)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        params = {key: set(string_list(table.get(key, []), key)) for key in self.KEYS}
        if not any(params.values()):
            raise ValueError("needs 'calls', 'attributes' or 'identity-calls'")
        return params

    def describe(self, rule):
        names = sorted(set().union(*rule.params.values()))
        return "Removed or reported: " + ", ".join(f"`{n}`" for n in names) + ".\n"

    def triggers(self, rule):
        return [name_trigger(n) for n in sorted(set().union(*rule.params.values()))]

    def visitor(self, rules, ctx):
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

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        hit = self._hit(target, "attributes")
        if hit:
            self._drop(node, target, hit)
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

    def on_reference(self, node, qualified, binding) -> None:
        rule = self.by_name[qualified]
        message = rule.message.format(name=written(node))
        self.ctx.report(rule, node, message + " (used here in a way hpu-port cannot remove: edit by hand)")


def _assigns_its_own_arguments(target, call: cst.Call) -> bool:
    names = [dotted_name(e.value) for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [dotted_name(target)]
    positional = [dotted_name(a.value) for a in call.args if a.keyword is None and not a.star]
    return None not in names and names == positional[: len(names)]
