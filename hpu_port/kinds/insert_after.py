"""Kind ``insert-after``: call a function right after backward passes and optimizer steps.

Anchors are expression statements:

- any ``<expr>.<method>(...)`` for the ``after-methods`` (``loss.backward()``,
  ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``);
- calls to the ``after-calls`` (``torch.autograd.backward(...)``);
- ``<receiver>.<step-method>(...)`` when the receiver is known to be an
  optimizer: bound from one of the ``step-constructors`` in this file, or named
  like one (``step-names``), or when an argument is one (``scaler.step(opt)``).

Receivers named like the ``not-step-names`` (schedulers, environments, progress
bars, ...) or built by the ``not-step-constructors`` are never anchors. Where a
step's receiver cannot be told apart, and the function has a backward pass, the
rule reports it instead of guessing. An existing call right after the anchor,
in any spelling, is recognised, so a second run adds nothing.

Nothing is anchored inside a class deriving from one of the
``not-in-subclasses-of`` (``torch.autograd.Function``) or inside a function
whose first parameter is named ``not-in-functions-taking`` (``ctx``): a
backward pass there runs inside autograd's own, not at a step boundary.
Nor inside a function that calls one of the methods ``not-in-functions-calling``
(``manual_backward``: Lightning's manual optimization, whose strategy
already ends each optimizer step on Gaudi).
"""

from __future__ import annotations

import re
from typing import Optional

from hpu_port.kinds import Kind, name_context, register_kind, string_list, string_table
from hpu_port.triggers import text_trigger


@register_kind
class InsertAfter(Kind):
    name = "insert-after"
    KEYS = {
        "function": (str, True),
        "import-as": (dict, False),
        "after-methods": (list, False),
        "after-calls": (list, False),
        "step-method": (str, False),
        "step-constructors": (list, False),
        "not-step-constructors": (list, False),
        "step-names": (str, False),
        "not-step-names": (str, False),
        "unsure-message": (str, False),
        "not-in-subclasses-of": (list, False),
        "not-in-script-subclasses-of": (list, False),
        "not-in-functions-taking": (str, False),
        "not-in-functions-calling": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "call", "what"})

    def build_params(self, table):
        params = {
            "function": table["function"],
            "import-as": string_table(table.get("import-as", {}), "import-as"),
            "after-methods": set(string_list(table.get("after-methods", []), "after-methods")),
            "after-calls": set(string_list(table.get("after-calls", []), "after-calls")),
            "step-method": table.get("step-method"),
            "step-constructors": [_constructor(p) for p in string_list(table.get("step-constructors", []), "step-constructors")],
            "not-step-constructors": [_constructor(p) for p in string_list(table.get("not-step-constructors", []), "not-step-constructors")],
            "unsure-message": table.get("unsure-message", ""),
            "not-in-subclasses-of": string_list(table.get("not-in-subclasses-of", []), "not-in-subclasses-of"),
            "not-in-script-subclasses-of": string_list(table.get("not-in-script-subclasses-of", []), "not-in-script-subclasses-of"),
            "not-in-functions-taking": table.get("not-in-functions-taking"),
            "not-in-functions-calling": string_list(table.get("not-in-functions-calling", []), "not-in-functions-calling"),
        }
        for key in ("step-names", "not-step-names"):
            try:
                params[key] = re.compile(table[key]) if key in table else None
            except re.error as exc:
                raise ValueError(f"{key!r} is not a valid regular expression: {exc}") from None
        return params

    def triggers(self, rule):
        # Anchors are calls, so the name is always followed by "(".
        params = rule.params
        tokens = {f".{m}(" for m in params["after-methods"]}
        tokens |= {c.rsplit(".", 1)[-1] + "(" for c in params["after-calls"]}
        if params["step-method"]:
            tokens.add(f".{params['step-method']}(")
        return [text_trigger(token) for token in sorted(tokens)]

    def context(self, rule):
        # What `opt` in `opt.step()` is follows from where it was built,
        # often another method (`__init__`).
        constructors = [*rule.params["step-constructors"], *rule.params["not-step-constructors"]]
        return name_context(pattern for pattern, _ in constructors)


def _constructor(pattern: str) -> tuple[str, Optional[int]]:
    """``"deepspeed.initialize[0]"`` -> ("deepspeed.initialize", 0); ``"torch.optim.*"`` kept."""
    match = re.fullmatch(r"([\w.*]+)(?:\[(\d+)\])?", pattern)
    if not match:
        raise ValueError(f"{pattern!r} is not a constructor name (dotted, optional .* and [index])")
    return match.group(1), int(match.group(2)) if match.group(2) is not None else None
