"""Kind ``report``: a use of a qualified name that a person must deal with."""

from __future__ import annotations

from hpu_port.kinds import Kind, markdown_table, register_kind, string_table
from hpu_port.triggers import name_trigger


@register_kind
class Report(Kind):
    """``[names]`` maps each qualified name to the advice shown for it (may be empty).

    A name ending in ``.*`` stands for every name under it that no other rule
    rewrote (``"pynvml.*"``). With ``report-imports``, importing one of the
    modules is reported too (``import flash_attn``), even if nothing uses it;
    with ``report-unused-imports``, only an import nothing in the file uses
    (``import apex_C`` for its side effects): the uses of the others are
    reported one by one.
    With ``type-checks = false``, a name used only to test a type
    (``isinstance(model, nn.DataParallel)``) is not reported.
    """

    name = "report"
    KEYS = {
        "names": (dict, True),
        "report-imports": (bool, False),
        "report-unused-imports": (bool, False),
        "type-checks": (bool, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "qualified", "advice"})

    def build_params(self, table):
        names = string_table(table["names"], "names")
        if not names:
            raise ValueError("'names' must not be empty")
        return {
            "names": names,
            "report-imports": table.get("report-imports", False),
            "report-unused-imports": table.get("report-unused-imports", False),
            "type-checks": table.get("type-checks", True),
        }

    def describe(self, rule):
        return markdown_table(("name", "what to do"), rule.params["names"], code_values=False)

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["names"]]
