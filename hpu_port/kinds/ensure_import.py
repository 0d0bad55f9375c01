"""Kind ``ensure-import``: add an import, once, to files a fix made depend on it.

Files that a rule with ``hpu-runtime = true`` rewrote now use the HPU device,
which ``import habana_frameworks.torch.core`` registers with torch. With
``when-categories``, the import is added to files that a rule of one of those
categories rewrote instead (``distributed`` -> the HCCL backend module). The import
is added after the module docstring, ``__future__`` imports and the leading
import block, unless an equivalent import is already at module level.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list


@register_kind
class EnsureImport(Kind):
    name = "ensure-import"
    KEYS = {
        "module": (str, True),
        "alias": (str, False),
        "satisfied-by": (list, False),
        "when-categories": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        module = table["module"]
        if not all(part.isidentifier() for part in module.split(".")):
            raise ValueError(f"'module': {module!r} is not a dotted module name")
        alias = table.get("alias")
        if alias is not None and not alias.isidentifier():
            raise ValueError(f"'alias': {alias!r} is not a Python name")
        satisfied = string_list(table.get("satisfied-by", []), "satisfied-by")
        categories = string_list(table.get("when-categories", []), "when-categories")
        return {"module": module, "alias": alias, "satisfied-by": [module, *satisfied], "when-categories": set(categories)}

    def finish(self, rules, ctx):
        for rule in rules:
            categories = rule.params["when-categories"]
            needed = ctx.fixed_categories & categories if categories else ctx.hpu_runtime_used
            if needed and not _already_imported(ctx, rule.params["satisfied-by"]):
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
