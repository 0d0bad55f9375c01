"""Kind ``device-index``: a device given as a bare index (``.to(local_rank)``) becomes ``"hpu"``.

On CUDA an integer device is a GPU index: ``x.to(local_rank)``,
``torch.device(rank)`` and ``device=args.gpu`` all mean ``cuda:<n>``. A name
or attribute in a device position (a keyword in ``keywords``, the first
argument of a method in ``methods`` or the only argument of a call in
``calls``) whose name has one of the ``words`` as a part, or such a value
modulo something (``rank % torch.cuda.device_count()``), becomes ``"hpu"``:
each process owns one Gaudi. A name the same function last assigned such a
value (``device = local_rank`` ... ``.to(device)``) is reported only, since
the name may be an index elsewhere. A call of one of ``index-methods``
(``y.get_device()``, the index of a tensor's device) in a device position
becomes the tensor's ``device``; with ``integer-literals``, a literal
integer given first (``torch.device(0)``, ``.to(0)``) becomes ``"hpu"``.
"""

from __future__ import annotations

import ast

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds.device_string import name_parts
from hpu_port.triggers import name_trigger, text_trigger


@register_kind
class DeviceIndex(Kind):
    name = "device-index"
    KEYS = {"words": (list, True), "keywords": (list, False), "methods": (list, False), "calls": (list, False),
            "index-methods": (list, False), "integer-literals": (bool, False)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        words = string_list(table["words"], "words")
        if not words:
            raise ValueError("'words' must not be empty")
        return {
            "words": frozenset(w.lower() for w in words),
            "keywords": frozenset(string_list(table.get("keywords", []), "keywords")),
            "methods": frozenset(string_list(table.get("methods", []), "methods")),
            "calls": frozenset(string_list(table.get("calls", []), "calls")),
            "index-methods": frozenset(string_list(table.get("index-methods", []), "index-methods")),
            "integer-literals": bool(table.get("integer-literals", False)),
        }

    def triggers(self, rule):
        triggers = [name_trigger(word) for word in sorted(rule.params["words"] | rule.params["index-methods"])]
        if rule.params["integer-literals"]:
            # `torch.device(0)`, `.to(0)`: written so, the literal is the whole argument.
            triggers += [text_trigger(f".{name.rsplit('.', 1)[-1]}(0") for name in sorted(rule.params["methods"] | rule.params["calls"])]
        return triggers

    def screen(self, rule, view):
        # `rank` and `gpu` are common words: only a call that passes one in a
        # device position needs the full parse.
        # A rank assigned to a name (`device = local_rank`) may reach one too.
        return any(_passes_an_index(call, rule.params) for call in view.nodes(ast.Call)) or any(
            _assigns_an_index(assign, rule.params) for assign in view.nodes(ast.Assign)
        )


def _assigns_an_index(assign: ast.Assign, params: dict) -> bool:
    value = assign.value.left if isinstance(assign.value, ast.BinOp) and isinstance(assign.value.op, ast.Mod) else assign.value
    part = _last_part(value)
    return bool(part) and bool(params["words"] & name_parts(part))


def _passes_an_index(call: ast.Call, params: dict) -> bool:
    values = [k.value for k in call.keywords if k.arg in params["keywords"]]
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    positional = None
    if call.args and (name in params["methods"] or any(c.rsplit(".", 1)[-1] == name for c in params["calls"])):
        positional = call.args[0]
        values.append(positional)
    literal = params["integer-literals"] and isinstance(positional, ast.Constant) and type(positional.value) is int
    return literal or any(
        _last_part(v) and params["words"] & name_parts(_last_part(v)) or _index_method(v) in params["index-methods"] for v in values
    )


def _index_method(value: ast.expr) -> str:
    """``get_device`` of `y.get_device()`."""
    if isinstance(value, ast.Call) and not value.args and isinstance(value.func, ast.Attribute):
        return value.func.attr
    return ""


def _last_part(value: ast.expr) -> str:
    if isinstance(value, ast.Attribute):
        return value.attr
    return value.id if isinstance(value, ast.Name) else ""
