"""Kind ``step-loop-without``: a training step loop in a file that never uses any of ``names`` (report only).

``names`` are qualified names (``torch.autocast``, ``torch.bfloat16``); if
the file refers to one of them anywhere, it is taken as handled. Otherwise the
first step loop (the innermost loop calling ``.backward()``) is reported once.
With ``only-with`` (qualified names too), only files that refer to one of
those count (advice about how a file compiles is for files that compile).
"""

from __future__ import annotations

from hpu_port.kinds import Kind, name_context, register_kind, string_list
from hpu_port.triggers import text_trigger


@register_kind
class StepLoopWithout(Kind):
    name = "step-loop-without"
    KEYS = {"names": (list, True), "only-with": (list, False)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        return {
            "names": set(string_list(table["names"], "names")),
            "only-with": set(string_list(table.get("only-with", []), "only-with")),
        }

    def triggers(self, rule):
        return [text_trigger(".backward(")]

    def context(self, rule):
        # One use of a name anywhere in the file is enough.
        return name_context(rule.params["names"] | rule.params["only-with"])
