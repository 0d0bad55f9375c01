"""Kind ``call-rewrite``: a call becomes a call of another function with adjusted arguments.

Each entry of ``[rewrites."<qualified name>"]`` may give:

- ``to``: the new callable (qualified name);
- ``positional``: the old callable's positional parameter names, so that
  positional arguments can be passed as keywords to the new one;
  ``keep-positional``: how many leading positional arguments stay as they are;
- ``prepend``: keywords put first (``device_type = '"hpu"'``);
- ``as-positional``: keyword -> default, in order: these arguments are passed
  by position to the new callable (which may take no keywords, as
  ``autograd.Function.apply`` does), with the default where the call gave
  none; trailing defaults are left out;
- ``set``: keywords added or replaced; ``drop``: keywords removed;
- ``require``: keyword -> accepted values; a call passing another value is
  left alone (``device = ['"cuda"']`` for ``torch.amp.GradScaler``);
- ``switch-keyword`` and ``switch``: pick another target by that keyword's
  literal value (``adam_w_mode = False`` -> ``torch.optim.Adam``); a value that
  is not a literal cannot be decided and is reported instead.

A bare decorator (``@torch.cuda.amp.custom_fwd``) becomes a call. A use that is
not a call (passing the function around) is reported for a person.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list, string_table
from hpu_port.kinds._references import NOT_A_LITERAL, ReferenceVisitor, literal_value, written
from hpu_port.triggers import name_trigger

ENTRY_KEYS = {"to", "positional", "keep-positional", "prepend", "as-positional", "set", "drop", "require", "switch-keyword", "switch"}


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

    def visitor(self, rules, ctx):
        return _CallRewriteVisitor(ctx, rules)


def _entry(name: str, entry: dict) -> dict:
    where = f"rewrites.{name}"
    for key in ("prepend", "set", "switch", "as-positional"):
        table = string_table(entry.get(key, {}), f"{where}.{key}")
        for code in table.values() if key != "switch" else ():  # as-positional holds defaults
            _check_expression(code, f"{where}.{key}")
    require = entry.get("require", {})
    if not isinstance(require, dict):
        raise ValueError(f"'{where}.require' must be a table")
    for keyword, values in require.items():
        string_list(values, f"{where}.require.{keyword}")
    return {
        "to": entry["to"],
        "positional": string_list(entry.get("positional", []), f"{where}.positional"),
        "keep-positional": entry.get("keep-positional", 0),
        "prepend": entry.get("prepend", {}),
        "as-positional": entry.get("as-positional", {}),
        "set": entry.get("set", {}),
        "drop": set(string_list(entry.get("drop", []), f"{where}.drop")),
        "require": require,
        "switch-keyword": entry.get("switch-keyword"),
        "switch": entry.get("switch", {}),
    }


def _check_expression(code: str, where: str) -> None:
    try:
        cst.parse_expression(code)
    except cst.ParserSyntaxError:
        raise ValueError(f"'{where}': {code!r} is not a Python expression") from None


def example_call(entry: dict) -> str:
    keywords = [f"{k}={v}" for k, v in {**entry["prepend"], **entry["set"]}.items()]
    return f"{entry['to']}({', '.join(keywords + ['...'])})"


class _CallRewriteVisitor(ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table = {}
        for rule in rules:
            for name, entry in rule.params["rewrites"].items():
                self.table.setdefault(name, (rule, entry))
        super().__init__(ctx, set(self.table))

    def visit_Call(self, node: cst.Call) -> None:
        hit = self.ctx.qualify(node.func)
        if hit is None or hit[0] not in self.table or not self.ctx.claim(node.func):
            return
        rule, entry = self.table[hit[0]]
        arguments = _arguments(node, entry["positional"])
        if arguments is None or not _required(arguments, entry["require"]):
            return
        target = _target(arguments, entry)
        message = rule.message.format(name=written(node.func), replacement=target or entry["to"])
        if target is None:
            self.ctx.report(rule, node, message + f" (not rewritten: `{entry['switch-keyword']}` is not a literal)")
            return
        spelling = self.ctx.spell(target, from_imports=rule.params["from-import"])
        if spelling is None:
            return
        new_call = _new_call(node, arguments, entry, spelling.code)
        if written(new_call) == written(node):
            return
        self._apply(rule, node, message, spelling, hit[1], lambda updated: _new_call(
            updated, _arguments(updated, entry["positional"]), entry, spelling.code
        ))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if isinstance(node.decorator, cst.Call):
            return
        hit = self.ctx.qualify(node.decorator)
        if hit is None or hit[0] not in self.table or not self.ctx.claim(node.decorator):
            return
        rule, entry = self.table[hit[0]]
        spelling = self.ctx.spell(entry["to"], from_imports=rule.params["from-import"])
        if spelling is None:
            return
        message = rule.message.format(name=written(node.decorator), replacement=entry["to"])
        call = cst.Call(func=node.decorator)
        self._apply(rule, node, message, spelling, hit[1], lambda updated: updated.with_changes(
            decorator=_new_call(call, {}, entry, spelling.code)
        ))

    def _apply(self, rule, node, message, spelling, binding, edit) -> None:
        self.ctx.report(rule, node, message, self.ctx.replace(node, edit), spelling, binding)

    def on_reference(self, node, qualified, binding) -> None:
        rule, entry = self.table[qualified]
        message = rule.message.format(name=written(node), replacement=entry["to"])
        self.ctx.report(rule, node, message + " (used as a value here: rewrite it by hand)")


def _arguments(call: cst.Call, positional: list[str]) -> Optional[dict[str, cst.Arg]]:
    """Arguments by parameter name; None when they cannot be named (*args, too many)."""
    named: dict[str, cst.Arg] = {}
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(positional):
                return None
            named[positional[index]] = arg
            index += 1
        else:
            named[arg.keyword.value] = arg
    return named


def _required(arguments, require) -> bool:
    for keyword, accepted in require.items():
        arg = arguments.get(keyword)
        if arg is not None and literal_value(written(arg.value)) not in [literal_value(v) for v in accepted]:
            return False
    return True


def _target(arguments, entry) -> Optional[str]:
    keyword = entry["switch-keyword"]
    if keyword is None or keyword not in arguments:
        return entry["to"]
    value = literal_value(written(arguments[keyword].value))
    if value is NOT_A_LITERAL:
        return None
    for code, target in entry["switch"].items():
        if literal_value(code) == value:
            return target
    return entry["to"]


def _new_call(call: cst.Call, arguments, entry, func_code: str) -> cst.Call:
    """The rewritten call; existing keyword arguments keep their own layout."""
    skip = entry["drop"] | set(entry["prepend"]) | set(entry["set"])
    if entry["switch-keyword"]:
        skip.add(entry["switch-keyword"])
    kept = entry["positional"][: entry["keep-positional"]]
    args = [arguments[name] for name in kept if name in arguments and arguments[name].keyword is None]
    args += _as_positional(arguments, entry["as-positional"])
    skip |= set(entry["as-positional"])
    args += [_keyword_arg(k, cst.parse_expression(v)) for k, v in entry["prepend"].items()]
    for name, arg in arguments.items():
        if name in skip or any(arg is a for a in args):
            continue
        args.append(arg if arg.keyword is not None else _keyword_arg(name, arg.value, arg.comma))
    args += [_keyword_arg(k, cst.parse_expression(v)) for k, v in entry["set"].items()]
    args = _fix_commas(args, call.args[-1].comma if call.args else cst.MaybeSentinel.DEFAULT)
    return call.with_changes(func=cst.parse_expression(func_code), args=args)


def _as_positional(arguments, defaults: dict) -> list:
    given = [name for name in defaults if name in arguments]
    if not given:
        return []
    last = list(defaults).index(given[-1])
    return [
        cst.Arg(value=arguments[name].value if name in arguments else cst.parse_expression(defaults[name]))
        for name in list(defaults)[: last + 1]
    ]


def _keyword_arg(name: str, value, comma=cst.MaybeSentinel.DEFAULT) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        comma=comma,
    )


def _fix_commas(args: list, last_comma) -> list:
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    fixed = []
    for index, arg in enumerate(args):
        if index == len(args) - 1:
            fixed.append(arg.with_changes(comma=last_comma))
        elif not isinstance(arg.comma, cst.Comma):
            fixed.append(arg.with_changes(comma=separator))
        else:
            fixed.append(arg)
    return fixed
