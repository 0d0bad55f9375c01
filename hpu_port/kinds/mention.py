"""Kind ``mention``: the last resort, a line that still mentions CUDA.

Identifiers (``use_cuda``, ``self._cuda_graph_check``, ``from .cuda import x``)
and string text (``"CUDA required"``, f-strings) containing one of the
``words`` (any case, as a part of a name or a word of its own, not inside
another word such as ``barracuda``) are reported, but only on lines where no other rule
reported anything, and once per line: it catches what the specific rules do
not know, without repeating what they said. Comments and docstrings are prose
and are not read.
"""

from __future__ import annotations

import re

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import text_trigger


def word_pattern(words: list[str]) -> re.Pattern:
    """Each word, in any case, as a part of a name or text of its own:
    `use_cuda`, `useCuda`, `CUDAExtension`, `"CUDA required"`, but not the
    inside of another word (`barracuda`, the HTML entity `cudarrl;`)."""
    alternatives = "|".join(re.escape(w) for w in words)
    # Before: no letter, or a lower-case letter followed by the word capitalised
    # (camelCase). After: no lower-case letter (`cudaMalloc` and `CUDA_HOME` stay).
    return re.compile(rf"(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?i:{alternatives})(?![a-z])")


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
        return {"words": words, "pattern": word_pattern(words)}

    def triggers(self, rule):
        variants = {v for w in rule.params["words"] for v in (w.lower(), w.upper(), w.capitalize())}
        return [text_trigger(v) for v in sorted(variants)]
