"""Kind ``report``: a use of a qualified name that a person must deal with."""

from __future__ import annotations

import dataclasses
import re

from hpu_port.kinds import Kind, name_context, markdown_table, register_kind, string_list, string_table
from hpu_port.shapes import ImportOf, top_module
from hpu_port.triggers import Trigger, name_trigger


@register_kind
class Report(Kind):
    """``[names]`` maps each qualified name to the advice shown for it (may be empty).

    A name ending in ``.*`` stands for every name under it that no other rule
    rewrote (``"pynvml.*"``). With ``report-imports``, importing one of the
    modules is reported too (``import flash_attn``), even if nothing uses it;
    with ``report-unused-imports``, only an import nothing in the file uses
    (``import apex_C`` for its side effects) or one under a condition or in a
    function (``try: from apex... import``, an optional dependency): the uses
    of the others are reported one by one.
    With ``type-checks = false``, a name used only to test a type
    (``isinstance(model, nn.DataParallel)``) is not reported.
    With ``once-per-file``, only the first use in a file is reported, saying
    how many there are. ``unless-used`` lists qualified names whose use
    anywhere in the file means it already does what the rule asks (no
    finding). ``skip-under`` is a regular expression: uses inside an ``if``
    whose condition matches it are left alone (``(?i)lazy``: the source
    already switches on a lazy-mode flag of its own).
    """

    name = "report"
    KEYS = {
        "names": (dict, True),
        "report-imports": (bool, False),
        "report-unused-imports": (bool, False),
        "once-per-file": (bool, False),
        "unless-used": (list, False),
        "skip-under": (str, False),
        "type-checks": (bool, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "qualified", "advice"})

    def build_params(self, table):
        names = string_table(table["names"], "names")
        if not names:
            raise ValueError("'names' must not be empty")
        skip_under = table.get("skip-under")
        try:
            skip = re.compile(skip_under) if skip_under is not None else None
        except re.error as exc:
            raise ValueError(f"'skip-under' is not a valid regular expression: {exc}") from None
        return {
            "names": names,
            "report-imports": table.get("report-imports", False),
            "report-unused-imports": table.get("report-unused-imports", False),
            "once-per-file": table.get("once-per-file", False),
            "unless-used": set(string_list(table.get("unless-used", []), "unless-used")),
            "skip-under": skip,
            "type-checks": table.get("type-checks", True),
        }

    def context(self, rule):
        # One use of such a name anywhere in the file is enough.
        return name_context(rule.params["unless-used"])

    def describe(self, rule):
        return markdown_table(("name", "what to do"), rule.params["names"], code_values=False)

    def triggers(self, rule):
        return [_imported_trigger(name) for name in rule.params["names"]]

    def screen(self, rule, view):
        # The words of a name (`torch`, `masked`) are in most model files; a
        # use of the name needs an import that makes some name refer to it.
        return view.may_reference(frozenset(name[:-2] if name.endswith(".*") else name for name in rule.params["names"]))


def _imported_trigger(name: str):
    """The name's words, in a file that imports its module: the screen
    (``CodeView.may_reference``) asks for an import that reaches the name."""
    trigger = name_trigger(name)
    top = top_module(name)
    return dataclasses.replace(trigger, alongside=(Trigger(pattern=ImportOf(top)),)) if top else trigger
