"""Kind ``in-step-loop``: calls that cost something on every training step (report only).

A step loop is the innermost ``for``/``while`` loop that calls ``.backward()``
itself (an epoch loop around it is not one). Inside it, including in loops
nested in it, the kind reports calls of the ``methods`` (``loss.item()``),
calls of the ``calls`` (qualified names such as ``torch.nonzero``, or
builtins such as ``print``) and, with ``comparison-subscripts``, indexing
with a comparison (``x[x > 0]``, or ``x[keep]`` after ``keep = y >= 0``: a
boolean mask, so a data-dependent shape).
With ``truth-tests`` (qualified names of functions that return a tensor
to test, such as ``torch.isnan``), a condition that tests such a tensor
(the test of an ``if``, ``while``, ``assert`` or conditional expression,
an operand of ``not``, ``and`` and ``or``) is reported: Python reads the
tensor's value on the host. Tensors to test are the results of those
functions, of the tensor-only methods ``isnan``, ``isinf`` and
``isfinite``, ``.any()`` and ``.all()`` of such results, comparisons
with them, and the names assigned one.
With ``loss-in-arguments`` a call counts only when one of its arguments
mentions the tensor ``.backward()`` was called on (``print(loss)``). With
``skip-throttled``, code under an ``if`` whose test uses ``%`` or a name
containing ``freq``, ``interval``, ``every`` or ``log_steps`` already runs
every N steps and is left alone.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import Trigger


# Methods that only tensors have (NumPy spells these as functions): their
# result is a tensor whatever they are called on.
TENSOR_ONLY_METHODS = ("isnan", "isinf", "isfinite")


@register_kind
class InStepLoop(Kind):
    name = "in-step-loop"
    KEYS = {
        "methods": (list, False),
        "calls": (list, False),
        "comparison-subscripts": (bool, False),
        "loss-in-arguments": (bool, False),
        "skip-throttled": (bool, False),
        "truth-tests": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        params = {
            "methods": set(string_list(table.get("methods", []), "methods")),
            "calls": set(string_list(table.get("calls", []), "calls")),
            "comparison-subscripts": table.get("comparison-subscripts", False),
            "loss-in-arguments": table.get("loss-in-arguments", False),
            "skip-throttled": table.get("skip-throttled", False),
            "truth-tests": set(string_list(table.get("truth-tests", []), "truth-tests")),
        }
        if not (params["methods"] or params["calls"] or params["comparison-subscripts"] or params["truth-tests"]):
            raise ValueError("needs 'methods', 'calls', 'comparison-subscripts' or 'truth-tests'")
        return params

    def triggers(self, rule):
        # A step loop calls `.backward(`; then one of the names must occur too,
        # except for mask indexing, which has no name of its own.
        names = set(rule.params["methods"]) | {c.rsplit(".", 1)[-1] for c in rule.params["calls"]}
        if rule.params["truth-tests"]:
            names |= {c.rsplit(".", 1)[-1] for c in rule.params["truth-tests"]} | set(TENSOR_ONLY_METHODS)
        extra_words = [(name.encode(),) for name in sorted(names)]
        if rule.params["comparison-subscripts"]:
            extra_words.append(())
        return [Trigger(words=frozenset({b"backward", *extra}), texts=frozenset({b".backward("})) for extra in extra_words]
