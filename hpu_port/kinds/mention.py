"""Kind ``mention``: the last resort, a line that still mentions CUDA.

Identifiers (``use_cuda``, ``self._cuda_graph_check``, ``from .cuda import x``)
and string text (``"CUDA required"``, f-strings) containing one of the
``words`` (any case) are reported, but only on lines where no other rule
reported anything, and once per line: it catches what the specific rules do
not know, without repeating what they said. Comments and docstrings are prose
and are not read.
"""

from __future__ import annotations

import re

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import text_trigger


@register_kind
class Mention(Kind):
    name = "mention"
    KEYS = {"words": (list, True)}
    MESSAGE_FIELDS = frozenset({"name"})
    FALLBACK = True

    def build_params(self, table):
        words = string_list(table["words"], "words")
        if not words:
            raise ValueError("'words' must not be empty")
        pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
        return {"words": words, "pattern": pattern}

    def triggers(self, rule):
        variants = {v for w in rule.params["words"] for v in (w.lower(), w.upper(), w.capitalize())}
        return [text_trigger(v) for v in sorted(variants)]

    def visitor(self, rules, ctx):
        return _MentionVisitor(ctx, rules[0]) if rules else None


class _MentionVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        self.pattern = rule.params["pattern"]

    def _check(self, node, text: str) -> None:
        match = self.pattern.search(text)
        if match:
            shown = text if len(text) <= 60 else text[:57] + "..."
            message = self.rule.message.format(name=shown)
            self.ctx.report(self.rule, node, message)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node, node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self.ctx.docstring_depth:
            self._check(node, node.value)

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        if not self.ctx.docstring_depth:
            self._check(node, node.value)
