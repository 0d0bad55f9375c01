"""Kind ``report``: a use of a qualified name that a person must deal with."""

from __future__ import annotations

from hpu_port.kinds import Kind, markdown_table, register_kind, string_table
from hpu_port.kinds._references import ReferenceVisitor, written
from hpu_port.triggers import name_trigger


@register_kind
class Report(Kind):
    """``[names]`` maps each qualified name to the advice shown for it (may be empty).

    A name ending in ``.*`` stands for every name under it that no other rule
    rewrote (``"pynvml.*"``). With ``report-imports``, importing one of the
    modules is reported too (``import flash_attn``), even if nothing uses it.
    """

    name = "report"
    KEYS = {"names": (dict, True), "report-imports": (bool, False)}
    MESSAGE_FIELDS = frozenset({"name", "qualified", "advice"})

    def build_params(self, table):
        names = string_table(table["names"], "names")
        if not names:
            raise ValueError("'names' must not be empty")
        return {"names": names, "report-imports": table.get("report-imports", False)}

    def describe(self, rule):
        return markdown_table(("name", "what to do"), rule.params["names"], code_values=False)

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["names"]]

    def visitor(self, rules, ctx):
        return _ReportVisitor(ctx, rules)


class _ReportVisitor(ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table = {}
        for rule in rules:
            for name, advice in rule.params["names"].items():
                self.table.setdefault(name, (rule, advice))
        super().__init__(ctx, set(self.table))

    def leave_Module(self, node) -> None:
        for binding in self.ctx.scopes.bindings:
            module = binding.module_path
            for name, (rule, advice) in self.table.items():
                if not rule.params["report-imports"]:
                    continue
                base = name[:-2] if name.endswith(".*") else name
                if (module == base or module.startswith(base + ".")) and self.ctx.claim(binding.alias):
                    message = rule.message.format(name=f"import {module}", qualified=module, advice=advice)
                    self.ctx.report(rule, binding.alias, message.strip())
                    break

    def on_reference(self, node, qualified, binding) -> None:
        rule, advice = self.table.get(qualified) or self.table[self.wildcard_for(qualified)]
        message = rule.message.format(name=written(node), qualified=qualified, advice=advice)
        self.ctx.report(rule, node, message.strip())
