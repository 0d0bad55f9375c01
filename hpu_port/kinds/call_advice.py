"""Kind ``call-advice``: a call whose arguments decide whether, and how, advice applies (report only).

``calls`` maps each qualified name to a table saying what to advise about its
calls; the name ``"*"`` stands for a call of anything else (a tokenizer,
whose type no import tells), and needs ``only-if``. Each table takes:

- ``advice``: the text; ``{parameter}`` is replaced by the argument as the
  call writes it (``<parameter>`` when the call does not pass it);
- ``signature``: the parameter names in order, so that positional arguments
  count like keywords;
- ``only-if``: parameter -> values; the call must pass one of them;
- ``pattern``: a regular expression the file's code must match for the
  file to be parsed for this call (`Tensor(..., device=`): a name
  in most files (`Tensor`) is screened by the form of the call instead;
- ``skip-when``: parameter -> values; a call passing one of them already does
  what the advice asks, or the advice does not apply (``"<any>"``: any value
  but ``None``);
- ``skip-unless``: parameter -> values; a call passing a literal that is not
  one of them is left alone (an expression is advised on, with its note);
- ``notes``: parameter -> ``{ text = "...", unless = [values] }``, added to
  the message when the call passes the parameter with another value: how an
  argument the advised code does not take is carried over, so that none is
  dropped silently;
- ``only-in-files-with``: qualified names, or ``.method`` for a method call
  (``.backward``): the file must use one of them (a training script);
- ``or-in-cuda-projects``: with ``only-in-files-with``, a file without them
  is advised on too when another Python file of the project uses CUDA
  (`.cuda(`, `torch.cuda.`; a project fact);
- ``aliases``: other qualified names of the same callable (the module it is
  defined in), advised on alike.

A name without a dot stands for a function the module itself defines
(``rotate_half``): its calls by that bare name are advised on.

Values are compared as Python literals (``'x'`` equals ``"x"``), other code
by its text; ``<any>`` is any value but ``None``, ``<expression>`` any code
that is not a literal. A call that unpacks ``**mapping`` is left alone unless it
passes every parameter the decision needs, and so is a call in the body of
an ``if`` whose test names another accelerator (``npu``, ``xla``, ``mps``...).
``unless-used`` lists qualified names whose use anywhere in the file means
the advice is not for it: it already does what the rule asks, or does
something the advice does not fit (parameters sharded by FSDP). With
``unless-used-in = "function"`` only a use in the same outermost function as
the call counts (or, for a call outside any function, a use outside any):
`torch.save` in a script's own loop says it resumes what it saved, while a
`save_weights` method beside `load_weights` says nothing of where the loaded
weights come from.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import string
from functools import lru_cache
from typing import Optional

from hpu_port.kinds import Kind, name_context, register_kind, string_list, word_context
from hpu_port.shapes import written
from hpu_port.triggers import Trigger, name_trigger

ANY_CALL = "*"
ANY_VALUE = "<any>"
EXPRESSION = "<expression>"
_ENTRY_KEYS = {"aliases", "advice", "signature", "only-if", "skip-when", "skip-unless", "notes", "only-in-files-with", "or-in-cuda-projects", "pattern"}


@register_kind
class CallAdvice(Kind):
    name = "call-advice"
    KEYS = {"calls": (dict, True), "unless-used": (list, False), "unless-used-in": (str, False)}
    MESSAGE_FIELDS = frozenset({"name", "advice"})

    def build_params(self, table):
        calls = {}
        for name, entry in table["calls"].items():
            calls[name] = _entry(name, entry)
            for alias in string_list(entry.get("aliases", []), f"calls.{name}.aliases"):
                calls[alias] = calls[name]
        if not calls:
            raise ValueError("'calls' must not be empty")
        scope = table.get("unless-used-in", "file")
        if scope not in ("file", "function"):
            raise ValueError(f"'unless-used-in' must be \"file\" or \"function\", not {scope!r}")
        return {"calls": calls, "unless-used": set(string_list(table.get("unless-used", []), "unless-used")), "unless-used-in": scope}

    def handled_names(self, rule):
        return {name for name in rule.params["calls"] if name != ANY_CALL}

    def describe(self, rule):
        lines = ["| call | advice | no advice when it passes |", "|---|---|---|"]
        described = set()
        for name, entry in rule.params["calls"].items():
            if id(entry) in described:
                continue  # an alias
            described.add(id(entry))
            shown = "any call passing " + _values_text(entry["only-if"]) if name == ANY_CALL else f"`{name}`"
            lines.append(f"| {shown} | {entry['advice']} | {_skips_text(entry) or '-'} |")
        return "\n".join(lines) + "\n"

    def triggers(self, rule):
        found = []
        for name, entry in rule.params["calls"].items():
            triggers = _any_call_triggers(entry) if name == ANY_CALL else [name_trigger(name, *_keywords_written(entry))]
            if entry["pattern"] is not None:
                triggers = [dataclasses.replace(t, pattern=entry["pattern"]) for t in triggers]
            markers = [] if entry["or-in-cuda-projects"] else _marker_triggers(entry["only-in-files-with"])
            found += [dataclasses.replace(t, alongside=tuple(markers)) for t in triggers] if markers else triggers
        return found

    def screen(self, rule, view):
        # `padding` is a word of most model files (convolutions, attention
        # masks): only a call that passes a value the advice is about, in a
        # file with one of the markers, needs the full parse.
        named = {
            name.rsplit(".", 1)[-1] for name, entry in rule.params["calls"].items()
            if name != ANY_CALL and (entry["pattern"] is None or entry["pattern"].search(view.text))
        }
        if any(name.encode() in view.text for name in named):
            if named & _imported_originals(view):
                return True
            calls = view.nodes_on_lines(ast.Call, view.lines_matching(written(tuple(sorted(named)))))
            if named & _called_names(calls):
                return True
        entry = rule.params["calls"].get(ANY_CALL)
        if entry is None or not _has_marker(entry["only-in-files-with"], view.text):
            return False
        wanted = {parameter: {_shape(v) for v in values} for parameter, values in entry["only-if"].items()}
        calls = view.nodes_on_lines(ast.Call, view.lines_matching(written(tuple(sorted(wanted)))))
        keywords = [keyword for call in calls for keyword in call.keywords if keyword.arg in wanted]
        if any(ast.dump(keyword.value) in wanted[keyword.arg] or wanted[keyword.arg] & _ANY_SHAPES for keyword in keywords):
            return True
        # `padding=self.padding` in a class whose field defaults to a value the advice is about.
        fields = {keyword.value.attr: keyword.arg for keyword in keywords if _is_self_attribute(keyword.value)}
        return bool(fields) and any(
            ast.dump(value) in wanted[fields[name]] for name, value in _class_field_defaults(view) if name in fields
        )

    def context(self, rule):
        # What the file uses elsewhere decides: the fused version already in
        # use, or the training code that makes a file a training script.
        markers = {m for entry in rule.params["calls"].values() for m in entry["only-in-files-with"]}
        # A method passing a field of its class (`padding=self.padding`): the value is the field's default.
        fields = [Trigger(words=frozenset({keyword.encode(), b"self"})) for keyword in rule.params["calls"].get(ANY_CALL, {}).get("only-if", ())]
        return name_context(rule.params["unless-used"]) + _marker_triggers(markers) + fields


def _marker_triggers(markers) -> list:
    """A file's markers (`torch.cuda.is_available`, `.cuda` for a method
    called), as triggers: a file with none of them gets no advice."""
    methods = {m[1:] for m in markers if m.startswith(".")}
    return name_context({m for m in markers if not m.startswith(".")}) + word_context(methods)


def _keywords_written(entry: dict) -> list:
    """The parameters a call must pass that it can only pass by keyword (not
    in the entry's ``signature``): each is a word of any file the advice is for."""
    return [parameter for parameter in entry["only-if"] if parameter not in entry["signature"]]


def _any_call_triggers(entry: dict) -> list:
    """A call of anything counts only with a keyword given one of the values:
    each pair's words must all be there (`padding` alone is a word of most
    model files). The file's markers must occur alongside, anywhere in the
    file, and are context (``Kind.context``): not words of the call."""
    return [
        Trigger(words=frozenset(w.encode() for w in (keyword, *([] if value in (ANY_VALUE, EXPRESSION) else re.findall(r"[A-Za-z_]\w*", value)))))
        for keyword, values in entry["only-if"].items()
        for value in values
    ]


def _is_self_attribute(node) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _class_field_defaults(view):
    """(name, default) of the fields classes of the file give a default
    (`padding: str = "longest"`, `padding = True`, `field(default=...)`)."""
    for node in view.nodes(ast.ClassDef):
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
                name, value = statement.target.id, statement.value
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
                name, value = statement.targets[0].id, statement.value
            else:
                continue
            if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) == "field":
                value = next((keyword.value for keyword in value.keywords if keyword.arg == "default"), None)
            if value is not None:
                yield name, value


def _called_names(calls) -> set:
    return {call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None) for call in calls}


def _imported_originals(view) -> set:
    """The names imported under another name (`import pad_sequence as pad`)."""
    return {alias.name.rsplit(".", 1)[-1] for node in view.nodes(ast.ImportFrom) for alias in node.names if alias.asname}


def _has_marker(markers: list, text: bytes) -> bool:
    return not markers or any(marker.rsplit(".", 1)[-1].encode() in text for marker in markers)


# Values the screen cannot tell from the standard parser's tree alone (`_shape`
# leaves them as they are: they do not parse): the visitor decides.
_ANY_SHAPES = frozenset({ANY_VALUE, EXPRESSION})


@lru_cache(maxsize=None)
def _shape(code: str) -> str:
    """A value as the standard parser sees it (quotes and spaces do not count)."""
    try:
        return ast.dump(ast.parse(code, mode="eval").body)
    except SyntaxError:
        return code


def _entry(name: str, entry) -> dict:
    if not isinstance(entry, dict):
        raise ValueError(f"'calls.{name}' must be a table")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise ValueError(f"'calls.{name}' has unknown keys: {', '.join(sorted(unknown))}")
    advice = entry.get("advice")
    if not isinstance(advice, str) or not advice:
        raise ValueError(f"'calls.{name}.advice' must be a non-empty string")
    signature = string_list(entry.get("signature", []), f"calls.{name}.signature")
    result = {
        "advice": advice,
        "signature": signature,
        "only-if": _value_table(entry.get("only-if", {}), f"calls.{name}.only-if"),
        "skip-when": _value_table(entry.get("skip-when", {}), f"calls.{name}.skip-when"),
        "skip-unless": _value_table(entry.get("skip-unless", {}), f"calls.{name}.skip-unless"),
        "notes": _notes(entry.get("notes", {}), f"calls.{name}.notes"),
        "only-in-files-with": string_list(entry.get("only-in-files-with", []), f"calls.{name}.only-in-files-with"),
        "or-in-cuda-projects": bool(entry.get("or-in-cuda-projects", False)),
        "pattern": _pattern(entry.get("pattern"), f"calls.{name}.pattern"),
    }
    if name == ANY_CALL and not result["only-if"]:
        raise ValueError("'calls.*' needs 'only-if': which calls of anything to advise on")
    known = set(signature) | {k for key in ("only-if", "skip-when", "skip-unless", "notes") for k in result[key]}
    for text in [advice, *(note["text"] for note in result["notes"].values())]:
        for _, field, _, _ in string.Formatter().parse(text):
            if field is not None and field not in known:
                raise ValueError(f"'calls.{name}': {{{field}}} names no parameter of the call")
    return result


def _pattern(value, key: str) -> Optional["re.Pattern"]:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{key}' must be a non-empty string")
    try:
        return re.compile(value.encode())
    except re.error as exc:
        raise ValueError(f"'{key}' is not a regular expression: {exc}") from None


def _value_table(value, key: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise ValueError(f"{key!r} must be a table of lists of strings")
    return {parameter: string_list(values, f"{key}.{parameter}") for parameter, values in value.items()}


def _notes(value, key: str) -> dict[str, dict]:
    if not isinstance(value, dict):
        raise ValueError(f"{key!r} must be a table")
    notes = {}
    for parameter, note in value.items():
        if not isinstance(note, dict) or not isinstance(note.get("text"), str) or set(note) - {"text", "unless"}:
            raise ValueError(f"'{key}.{parameter}' must be {{ text = \"...\", unless = [values] }}")
        notes[parameter] = {"text": note["text"], "unless": string_list(note.get("unless", []), f"{key}.{parameter}.unless")}
    return notes


def _skips_text(entry: dict) -> str:
    skips = [_values_text(entry["skip-when"])] if entry["skip-when"] else []
    skips += [f"`{parameter}` other than {', '.join(values)}" for parameter, values in entry["skip-unless"].items()]
    return "; ".join(skips)


def _values_text(table: dict) -> str:
    return " or ".join(
        f"`{parameter}` (not `None`)" if value == ANY_VALUE else f"`{parameter}={value}`"
        for parameter, values in table.items()
        for value in values
    )
