"""Kind ``keyword-args``: set, rename or drop keyword arguments of a matched call.

``calls`` lists the qualified names of the callables; ``drop`` the keywords to
remove, ``rename`` old -> new keyword names, ``set`` keyword -> Python expression
(added when missing, replaced when different). With ``set-when``, a keyword is
replaced only when its current value is one of those listed, and added only
when the list holds ``"<missing>"``; ``"*"`` stands for any value. ``only-if``
limits the rule to calls passing the given values (``pin_memory = ["True"]``;
``"*"``: any value but ``None``, by keyword or at its ``positions``);
``skip-when`` leaves alone the calls passing one of the given values
(``pin_memory = ["False"]`` beside ``only-if = { pin_memory = ["*"] }``);
``report-when`` reports calls passing the given values, without a fix
(``sparse = ["True"]``; ``"<not-literal>"``: a value the code computes, a
variable or an option, which a person checks). ``report-calls`` maps
patterns of callables to why their keywords must stay: such calls are
reported with that reason, never changed (a wrapper that uses the
keyword itself). With ``subclasses = true``, calls of the classes the
file itself defines on top of one of ``calls`` named exactly (``class
Wrapper(DDP)``, or on top of another such class) match too. A matched callable used as a
bare decorator (``@torch.compile``) becomes a call with the ``set`` keywords.
"""

from __future__ import annotations

import ast
from typing import Optional

from hpu_port.kinds import Kind, name_context, register_kind, string_list, string_table
from hpu_port.triggers import name_trigger


@register_kind
class KeywordArgs(Kind):
    name = "keyword-args"
    KEYS = {
        "calls": (list, True),
        "drop": (list, False),
        "rename": (dict, False),
        "set": (dict, False),
        "set-when": (dict, False),
        "positions": (dict, False),
        "only-if": (dict, False),
        "skip-when": (dict, False),
        "report-when": (dict, False),
        "subclasses": (bool, False),
        "report-calls": (dict, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "keywords"})

    def build_params(self, table):
        calls = string_list(table["calls"], "calls")
        drop = string_list(table.get("drop", []), "drop")
        rename = string_table(table.get("rename", {}), "rename")
        settings = string_table(table.get("set", {}), "set")
        report_when = table.get("report-when", {})
        if not (drop or rename or settings or report_when):
            raise ValueError("needs at least one of 'drop', 'rename', 'set' or 'report-when'")
        for keyword, code in settings.items():
            try:
                ast.parse(code.strip(), mode="eval")
            except SyntaxError:
                raise ValueError(f"'set.{keyword}': {code!r} is not a Python expression") from None
        set_when = table.get("set-when", {})
        for keyword, values in set_when.items():
            if keyword not in settings:
                raise ValueError(f"'set-when.{keyword}' names a keyword that 'set' does not set")
            string_list(values, f"set-when.{keyword}")
        positions = table.get("positions", {})
        if not all(isinstance(v, int) and v >= 0 for v in positions.values()):
            raise ValueError("'positions' maps keywords to argument positions (0, 1, ...)")
        return {
            "calls": set(calls),
            "drop": drop,
            "rename": rename,
            "set": settings,
            "set-when": set_when,
            "positions": positions,
            "only-if": table.get("only-if", {}),
            "skip-when": table.get("skip-when", {}),
            "report-when": report_when,
            "subclasses": table.get("subclasses", False),
            "report-calls": string_table(table.get("report-calls", {}), "report-calls"),
        }

    def context(self, rule):
        # A class defined on top of one of the calls (`class Wrapper(DDP):`)
        # decides what other code calls: it must not be stubbed out.
        return name_context(rule.params["calls"]) if rule.params["subclasses"] else []

    def triggers(self, rule):
        needed = [k for k in rule.params["only-if"] if k not in rule.params["positions"]]
        acting = _acting_keywords(rule.params)
        return [
            name_trigger(call, *needed, *extra)
            for call in sorted(rule.params["calls"])
            for extra in ([(k,) for k in acting] if acting is not None else [()])
        ]


def _acting_keywords(params) -> Optional[list[str]]:
    """Keywords one of which a call must pass for the rule to act on it;
    None when the rule can act on a call without any (it adds a keyword, or
    the keyword may be passed by position)."""
    acting = list(params["report-when"]) + list(params["drop"]) + list(params["rename"])
    for keyword in params["set"]:
        when = params["set-when"].get(keyword)
        if when is None or MISSING in when:
            return None
        acting.append(keyword)
    if any(k in params["positions"] for k in acting):
        return None
    return sorted(set(acting))


MISSING = "<missing>"
