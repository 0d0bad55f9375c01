"""Kind ``ensure-import``: add an import, once, to files a fix made depend on it.

Files that a rule with ``hpu-runtime = true`` rewrote now use the HPU device,
which ``import habana_frameworks.torch.core`` registers with torch. The import
is added after the module docstring, ``__future__`` imports and the leading
import block, unless an equivalent import is already at module level.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list


@register_kind
class EnsureImport(Kind):
    name = "ensure-import"
    KEYS = {"module": (str, True), "alias": (str, False), "satisfied-by": (list, False)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        module = table["module"]
        if not all(part.isidentifier() for part in module.split(".")):
            raise ValueError(f"'module': {module!r} is not a dotted module name")
        alias = table.get("alias")
        if alias is not None and not alias.isidentifier():
            raise ValueError(f"'alias': {alias!r} is not a Python name")
        satisfied = string_list(table.get("satisfied-by", []), "satisfied-by")
        return {"module": module, "alias": alias, "satisfied-by": [module, *satisfied]}

    def finish(self, rules, ctx):
        if not ctx.hpu_runtime_used:
            return
        for rule in rules:
            if not _already_imported(ctx, rule.params["satisfied-by"]):
                statement = _import_statement(ctx, rule.params)
                message = rule.message.format(name=statement)
                ctx.report(rule, ctx.module, message, lambda plan, s=statement: plan.add_import(s))


def _already_imported(ctx, modules: list[str]) -> bool:
    for binding in ctx.scopes.module_imports():
        path = binding.module_path
        if any(path == m or path.startswith(m + ".") for m in modules):
            return True
    return False


def _import_statement(ctx, params) -> str:
    alias = params["alias"]
    if alias and ctx.scopes.module.lookup(alias) is None:
        return f"import {params['module']} as {alias}"
    return f"import {params['module']}"
