"""How the ``string-literal`` kind matches and fixes code (see ``hpu_port.kinds.string_literal``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import written
from hpu_port.branches import Held


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _StringLiteralVisitor(ctx, rules)


class _StringLiteralVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules
        # Each key of a dict display -> the literal keys of its dict.
        self.dict_keys: dict[cst.CSTNode, frozenset] = {}
        # Each key of a dict display, and its value.
        self.dict_values: dict[cst.CSTNode, cst.BaseExpression] = {}
        # The first item of each list or tuple -> the other items, as literal
        # values (None for an item that is not a plain string literal).
        self.arguments: dict[cst.CSTNode, list] = {}

    def visit_List(self, node: cst.List) -> None:
        self._command(node)

    def visit_Tuple(self, node: cst.Tuple) -> None:
        self._command(node)

    def _command(self, node) -> None:
        items = [element.value for element in node.elements]
        if items:
            self.arguments[items[0]] = [
                item.raw_value if isinstance(item, cst.SimpleString) else None for item in items[1:]
            ]

    def visit_Dict(self, node: cst.Dict) -> None:
        elements = [e for e in node.elements if isinstance(e, cst.DictElement)]
        keys = frozenset(e.key.raw_value for e in elements if isinstance(e.key, cst.SimpleString))
        for element in elements:
            self.dict_keys[element.key] = keys
            self.dict_values[element.key] = element.value

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.ctx.docstring_depth or "b" in node.prefix.lower():
            return
        value = node.raw_value
        for rule in self.rules:
            siblings = self.dict_keys.get(node)
            if rule.params["dict-keys-only"] and (siblings is None or not _companions_present(rule, siblings)):
                continue
            new = rule.params["replace"].get(value)
            if new is not None:
                if self.ctx.claim(node):
                    message = rule.message.format(name=written(node), replacement=new)
                    if siblings is not None and new in siblings:
                        self.ctx.report(rule, node, message, kept=Held("name-taken", f"the dict has a {new!r} key already"))
                        return
                    extra = _keys_beyond(self.dict_values.get(node), rule.params["value-keys"])
                    if extra:
                        why = f"its section also sets {', '.join(extra)}, which the {new!r} section does not take: drop them with the rename"
                        self.ctx.report(rule, node, message, kept=Held("by-hand", why))
                        return
                    refused = self._refused_argument(rule, node)
                    if refused is not None:
                        self.ctx.report(rule, node, message, kept=Held("unclear", refused))
                        return
                    edit = lambda u, new=new: u.with_changes(value=u.prefix + u.quote + new + u.quote)
                    self.ctx.report(rule, node, message, self.ctx.replace(node, edit))
                return
            if any(p.fullmatch(value) for p in rule.params["match"]) and self.ctx.claim(node):
                self.ctx.report(rule, node, rule.message.format(name=written(node), replacement=""))
                return


    def _refused_argument(self, rule, node) -> Optional[str]:
        """Why a program name may not be renamed, if ``plain-args`` limits it."""
        accepted = rule.params["plain-args"]
        if accepted is None:
            return None
        arguments = self.arguments.get(node)
        if arguments is None:
            return "the command it is run with is built elsewhere"
        for argument in arguments:
            if argument is None:
                return "it is run with arguments built at run time"
            if argument not in accepted:
                return f"it is run with {argument!r}, which the new program does not take"
        return None


def _keys_beyond(value, allowed) -> list:
    """The keys, as written, of a dict display ``value`` that ``allowed`` lacks."""
    if allowed is None or not isinstance(value, cst.Dict):
        return []
    keys = [e.key for e in value.elements if isinstance(e, cst.DictElement)]
    return [written(k) for k in keys if not (isinstance(k, cst.SimpleString) and k.raw_value in allowed)]


def _companions_present(rule, siblings: frozenset) -> bool:
    wanted = rule.params["dict-with-keys"]
    return not wanted or bool(wanted & siblings)
