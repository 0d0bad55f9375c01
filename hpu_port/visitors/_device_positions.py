"""Where a call takes a device: ``device=``, ``map_location=``, ``.to(x)``, ``torch.device(x)``.

An integer there is a CUDA GPU index on NVIDIA (``x.to(local_rank)`` means
``cuda:<local_rank>``); on Gaudi the same place wants ``"hpu"``. Shared by the
kinds that rewrite such values, so that they agree on what a device position is.
"""

from __future__ import annotations

import libcst as cst

from hpu_port.visitors._references import written

KEYWORDS = frozenset({"device", "map_location"})
METHODS = frozenset({"to"})
CALLS = frozenset({"torch.device"})


def device_values(call: cst.Call, ctx, keywords=KEYWORDS, methods=METHODS, calls=CALLS) -> list[cst.BaseExpression]:
    """The values ``call`` takes as a device (not as an index)."""
    values = [
        arg.value
        for arg in call.args
        if arg.keyword is not None and arg.keyword.value in keywords and not _device_api(call.func, ctx)
    ]
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if not positional:
        return values
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in methods:
        values.append(positional[0].value)
    elif len(positional) == 1 and _qualified(func, ctx) in calls:
        # `torch.device("cuda", i)`: there the integer is an index, and stays one.
        values.append(positional[0].value)
    return values


def _qualified(func, ctx) -> str:
    hit = ctx.qualify(func)
    return hit[0] if hit is not None else written(func)


def _device_api(func, ctx) -> bool:
    # `torch.cuda.synchronize(device=i)` and its HPU twin take an index there.
    return _qualified(func, ctx).startswith(("torch.cuda.", "torch.hpu."))
