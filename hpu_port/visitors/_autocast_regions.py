"""Whether code runs in an autocast region that computes in bfloat16 on Gaudi.

On CUDA `autocast()` computes in float16 by default; the port moves it to the
HPU, where the default is bfloat16. A value of such a region handed to NumPy
(`.numpy()`) then fails: NumPy has no bfloat16.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.visitors._references import literal_value, written
from hpu_port.walk import descendants

AUTOCASTS = frozenset({"torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.cpu.amp.autocast"})
# Methods after which a tensor is no longer bfloat16: cast to a wider type, or integers.
_CAST = frozenset({"float", "double", "long", "int", "bool", "argmax", "argmin", "argsort", "nonzero", "round", "sign"})
_WIDE = ("float32", "float64", "torch.float", "torch.double", "torch.long", "torch.int", "torch.bool", "torch.uint8")


def in_bfloat16_autocast(around: list, ctx) -> bool:
    """Whether a `with` around the node enters such an autocast."""
    return any(
        _bfloat16_autocast(item.item, ctx)
        for node in around if isinstance(node, cst.With)
        for item in node.items
    )


def _bfloat16_autocast(expression: cst.BaseExpression, ctx) -> bool:
    if not isinstance(expression, cst.Call):
        return False
    if _autocast(expression.func, ctx) is None:
        return False
    device = next((a.value for a in expression.args if a.keyword is None or a.keyword.value == "device_type"), None)
    if isinstance(device, cst.SimpleString) and literal_value(written(device)) not in ("cuda", "hpu"):
        return False  # another device's autocast: the port leaves it
    dtype = next((a.value for a in expression.args if a.keyword is not None and a.keyword.value == "dtype"), None)
    if dtype is None:
        return True
    text = written(dtype)
    return "bfloat16" in text or "bf16" in text or (ctx.options.fp16_to_bf16 and ("float16" in text or "half" in text))


def _autocast(func: cst.BaseExpression, ctx) -> Optional[str]:
    """The autocast ``func`` names: itself, or a name the file binds to one
    (`precision_scope = autocast if opt.precision == "autocast" else nullcontext`)."""
    hit = ctx.qualify(func)
    if hit is not None:
        return hit[0] if hit[0] in AUTOCASTS else None
    return _names_of_autocasts(ctx).get(func.value) if isinstance(func, cst.Name) else None


def _names_of_autocasts(ctx) -> dict:
    """Name -> autocast, for each name an assignment of the file binds to an
    autocast or to a choice with one as an arm; found once per file."""
    found = getattr(ctx, "_names_of_autocasts", None)
    if found is None:
        found = {}
        for small in (n for n in descendants(ctx.module) if isinstance(n, cst.Assign) and len(n.targets) == 1):
            target = small.targets[0].target
            arms = [small.value.body, small.value.orelse] if isinstance(small.value, cst.IfExp) else [small.value]
            hits = [ctx.qualify(arm) for arm in arms if isinstance(arm, (cst.Name, cst.Attribute))]
            autocast = next((hit[0] for hit in hits if hit is not None and hit[0] in AUTOCASTS), None)
            if isinstance(target, cst.Name) and autocast is not None:
                found[target.value] = autocast
        ctx._names_of_autocasts = found
    return found


def may_be_bfloat16(receiver: cst.BaseExpression) -> bool:
    """Whether the tensor a method is called on may still be bfloat16: no
    cast to a wider type or to integers in its chain of calls."""
    node = receiver
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _CAST:
                return False
            if method in ("to", "type") and any(wide in written(a.value) for a in node.args for wide in _WIDE):
                return False
            node = node.func.value
        elif isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return True
