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
