"""Kind ``call-rewrite``: a call becomes a call of another function with adjusted arguments.

Each entry of ``[rewrites."<qualified name>"]`` may give:

- ``to``: the new callable (qualified name);
- ``positional``: the old callable's positional parameter names, so that
  positional arguments can be passed as keywords to the new one;
  ``keep-positional``: how many leading positional arguments stay as they are;
- ``prepend``: keywords put first (``device_type = '"hpu"'``);
  ``prepend-positional``: expressions passed first, by position, before the
  call's own arguments (``['"hpu"']`` for a device-generic function such as
  ``torch.get_autocast_dtype("hpu")`` that takes the device type first);
- ``as-positional``: keyword -> default, in order: these arguments are passed
  by position to the new callable (which may take no keywords, as
  ``autograd.Function.apply`` does), with the default where the call gave
  none; trailing defaults are left out;
- ``set``: keywords added or replaced; ``drop``: keywords removed;
- ``defaults``: keywords added where the call does not pass them, so that
  the old callable's defaults hold where the new one's differ
  (``eps = "1e-8"``);
- ``require``: keyword -> accepted values; a call passing another value is
  left alone (``device = ['"cuda"']`` for ``torch.amp.GradScaler``); an empty
  list leaves alone every call that passes the keyword at all (it already
  names what the rewrite would add);
- ``report-unless``: keyword -> accepted values; a call passing another
  value is reported, not rewritten (an option the new callable cannot honour,
  such as apex's ``master_weights = True``);
- ``sequence``: arguments that must be written as a list, tuple or
  comprehension for the rewrite to apply; anything else is reported
  (``torch.cuda.ByteTensor(n)``: ``n`` may be a size, not data);
- ``fallback-of``: qualified names of the device-generic form; a call in a
  function (or at module level) that also calls one of them with arguments
  is left alone: it is that code's fallback for older versions, which already
  names its device (``try: torch.get_autocast_dtype(device) except
  TypeError: torch.get_autocast_gpu_dtype()``);
- ``switch-keyword`` and ``switch``: pick another target by that keyword's
  literal value (``adam_w_mode = False`` -> ``torch.optim.Adam``); a value that
  is not a literal cannot be decided and is reported instead.

- ``arms-agree = true``: where the rewrite changes what the call does (a
  disabled loss scaler), a call in one arm of a choice (``if``/``else``, a
  conditional expression, ``try``/``except``) whose other arm calls one of
  the rule's names that is left as it is (``torch.amp.GradScaler(device=device)
  if new else torch.cuda.amp.GradScaler()``) is reported: ported alone, the
  arms would disagree.
- ``done-when-set = true``: a call that already passes every ``set`` value
  (``GradScaler(enabled=False)``) is left as it is: it already does what the
  rewrite would make it do.
- ``kept-in-fp16-arm = true``: a call made only when the code picks float16
  over its own bfloat16 path (under a test that elsewhere chooses
  ``torch.float16 if fp16 else torch.bfloat16``) is reported, not rewritten:
  that arm still computes in float16 (a loss scaler it needs).

- ``quiet-as-value = true``: a use that is not a call is not reported: the
  calls of the name it is bound to say the device, and the device-string
  rule renames them (``aliased-role-calls``: ``scope = torch.autocast``).

A bare decorator (``@torch.cuda.amp.custom_fwd``) becomes a call. A use that is
not a call (passing the function around) is reported for a person.
"""

from __future__ import annotations

import ast

from hpu_port.kinds import Kind, register_kind, string_list, string_table
from hpu_port.triggers import name_trigger

ENTRY_KEYS = {
    "to", "positional", "keep-positional", "prepend", "prepend-positional", "as-positional", "set", "defaults", "done-when-set",
    "drop", "require", "report-unless", "sequence", "fallback-of", "switch-keyword", "switch", "arms-agree",
    "kept-in-fp16-arm", "quiet-as-value",
}


@register_kind
class CallRewrite(Kind):
    name = "call-rewrite"
    KEYS = {"rewrites": (dict, True), "from-import": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        rewrites = {}
        for name, entry in table["rewrites"].items():
            if not isinstance(entry, dict):
                raise ValueError(f"'rewrites.{name}' must be a table")
            unknown = set(entry) - ENTRY_KEYS
            if unknown:
                raise ValueError(f"unknown key 'rewrites.{name}.{sorted(unknown)[0]}'")
            if "to" not in entry:
                raise ValueError(f"'rewrites.{name}' needs 'to'")
            rewrites[name] = _entry(name, entry)
        return {"rewrites": rewrites, "from-import": set(string_list(table.get("from-import", []), "from-import"))}

    def describe(self, rule):
        lines = ["| call | becomes |", "|---|---|"]
        for name, entry in rule.params["rewrites"].items():
            lines.append(f"| `{name}(...)` | `{example_call(entry)}` |")
        return "\n".join(lines) + "\n"

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["rewrites"]]


def _entry(name: str, entry: dict) -> dict:
    where = f"rewrites.{name}"
    for key in ("prepend", "set", "defaults", "switch", "as-positional"):
        table = string_table(entry.get(key, {}), f"{where}.{key}")
        for code in table.values() if key != "switch" else ():  # as-positional holds defaults
            _check_expression(code, f"{where}.{key}")
    require = entry.get("require", {})
    if not isinstance(require, dict):
        raise ValueError(f"'{where}.require' must be a table")
    for keyword, values in require.items():
        string_list(values, f"{where}.require.{keyword}")
    report_unless = entry.get("report-unless", {})
    if not isinstance(report_unless, dict):
        raise ValueError(f"'{where}.report-unless' must be a table")
    for keyword, values in report_unless.items():
        string_list(values, f"{where}.report-unless.{keyword}")
    prepend_positional = string_list(entry.get("prepend-positional", []), f"{where}.prepend-positional")
    for code in prepend_positional:
        _check_expression(code, f"{where}.prepend-positional")
    return {
        "to": entry["to"],
        "positional": string_list(entry.get("positional", []), f"{where}.positional"),
        "keep-positional": entry.get("keep-positional", 0),
        "prepend": entry.get("prepend", {}),
        "prepend-positional": prepend_positional,
        "as-positional": entry.get("as-positional", {}),
        "set": entry.get("set", {}),
        "defaults": entry.get("defaults", {}),
        "drop": set(string_list(entry.get("drop", []), f"{where}.drop")),
        "require": require,
        "report-unless": report_unless,
        "sequence": set(string_list(entry.get("sequence", []), f"{where}.sequence")),
        "fallback-of": frozenset(string_list(entry.get("fallback-of", []), f"{where}.fallback-of")),
        "switch-keyword": entry.get("switch-keyword"),
        "switch": entry.get("switch", {}),
        "arms-agree": _flag(entry, "arms-agree", where),
        "done-when-set": _flag(entry, "done-when-set", where),
        "kept-in-fp16-arm": _flag(entry, "kept-in-fp16-arm", where),
        "quiet-as-value": _flag(entry, "quiet-as-value", where),
    }


def _flag(entry: dict, key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"'{where}.{key}' must be true or false")
    return value


def _check_expression(code: str, where: str) -> None:
    try:
        ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"'{where}': {code!r} is not a Python expression") from None


def example_call(entry: dict) -> str:
    keywords = [f"{k}={v}" for k, v in {**entry["prepend"], **entry["set"]}.items()]
    return f"{entry['to']}({', '.join(entry['prepend-positional'] + keywords + ['...'])})"
