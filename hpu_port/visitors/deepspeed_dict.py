"""How the ``deepspeed-dict`` kind matches and fixes code (see ``hpu_port.kinds.deepspeed_dict``)."""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import RulesVisitor


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _DeepSpeedDictVisitor(ctx, rules)


class _DeepSpeedDictVisitor(RulesVisitor):
    def visit_Dict(self, node: cst.Dict) -> None:
        keys = _string_keys(node)
        for rule in self.rules:
            params = rule.params
            section = keys.get(params["section"])
            if section is None or not params["documents"] & set(keys):
                continue
            members = _string_keys(section.value) if isinstance(section.value, cst.Dict) else None
            if members is not None and _switched_off(members.get("enabled")):
                continue  # off, or the trainer's own flag decides
            message = rule.message.format(name=params["section"], replacement=params["rename-to"])
            if params["rename-to"] in keys or members is None or not _all_known(section.value, members, params):
                self.ctx.report(rule, section.key, message)
                continue
            self.ctx.report(rule, section.key, message, lambda plan, s=section, p=params: plan.replace(s, lambda updated: _renamed(updated, p)))


def _string_keys(node: cst.Dict) -> dict:
    """Each element keyed by a string literal, by its key's value."""
    found = {}
    for element in node.elements:
        if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
            found.setdefault(element.key.evaluated_value, element)
    return found


def _switched_off(enabled: Optional[cst.DictElement]) -> bool:
    """No `"enabled"` (DeepSpeed's default is off), `"enabled": False`, or
    `"auto"` (Hugging Face's trainer decides from its own flag)."""
    if enabled is None:
        return True
    try:
        value = ast.literal_eval(cst.Module([]).code_for_node(enabled.value))
    except (ValueError, SyntaxError):
        return False
    return value is False or (isinstance(value, str) and value.lower() in ("false", "auto"))


def _all_known(section: cst.Dict, members: dict, params: dict) -> bool:
    return len(members) == len(section.elements) and set(members) <= params["keep"] | params["drop"]


def _renamed(section: cst.DictElement, params: dict) -> cst.DictElement:
    """The section under its new key, in the same quotes, without the members only fp16 has."""
    key = section.key
    new_key = key.with_changes(value=f"{key.prefix}{key.quote}{params['rename-to']}{key.quote}")
    body = section.value
    kept = []
    for element in body.elements:
        if element.key.evaluated_value not in params["drop"]:
            kept.append(element)
        elif kept and element is body.elements[-1]:
            # The last member goes: the one before takes its comma (or its
            # absence), so the closing brace keeps its own line and indent.
            kept[-1] = kept[-1].with_changes(comma=element.comma)
    return section.with_changes(key=new_key, value=body.with_changes(elements=kept))
