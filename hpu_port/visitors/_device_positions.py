"""Where a call takes a device: ``device=``, ``map_location=``, ``.to(x)``, ``torch.device(x)``.

An integer there is a CUDA GPU index on NVIDIA (``x.to(local_rank)`` means
``cuda:<local_rank>``); on Gaudi the same place wants ``"hpu"``. Shared by the
kinds that rewrite such values, so that they agree on what a device position is.
"""

from __future__ import annotations

import libcst as cst

from hpu_port.visitors._references import written
from hpu_port.walk import descendants

KEYWORDS = frozenset({"device", "map_location"})
# `eval_device=`, `train_device=`: a device too, under another name; but
# DistributedDataParallel's `output_device` is an index.
KEYWORD_SUFFIX = "_device"
INDEX_KEYWORDS = frozenset({"output_device"})
METHODS = frozenset({"to"})
CALLS = frozenset({"torch.device"})


def device_values(call: cst.Call, ctx, keywords=KEYWORDS, methods=METHODS, calls=CALLS) -> list[cst.BaseExpression]:
    """The values ``call`` takes as a device (not as an index)."""
    values = [
        arg.value
        for arg in call.args
        if arg.keyword is not None and _names_a_device(arg.keyword.value, keywords) and not _device_api(call.func, ctx)
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
    elif isinstance(func, cst.Name) and keywords is KEYWORDS:
        # `SFTMetric(torch.cuda.current_device())` where the module's own
        # `SFTMetric.__init__(self, device)` takes it as its device.
        names = _module_signatures(ctx).get(func.value, ())
        values += [arg.value for arg, name in zip(positional, names) if _names_a_device(name, keywords)]
    return values


def _module_signatures(ctx) -> dict:
    """The positional parameters of the module's own top-level functions and
    classes (their `__init__`'s, without `self`), by name; found once per file."""
    found = getattr(ctx, "_module_signatures", None)
    if found is None:
        # The standard parser's tree is of the whole file, where `check` may
        # have given libcst a class without its body.
        found = _signatures_in_tree(ctx.tree) if ctx.tree is not None else _signatures_in_module(ctx.module)
        ctx._module_signatures = found
    return found


def _signatures_in_tree(tree) -> dict:
    import ast

    found = {}
    for statement in tree.body:
        function = statement
        if isinstance(statement, ast.ClassDef):
            function = next((n for n in statement.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
            found[statement.name] = params[1:] if function is not statement else params
    return found


def _signatures_in_module(module: cst.Module) -> dict:
    found = {}
    for statement in module.body:
        function = statement
        if isinstance(statement, cst.ClassDef):
            function = next((n for n in statement.body.body if isinstance(n, cst.FunctionDef) and n.name.value == "__init__"), None)
        if isinstance(function, cst.FunctionDef):
            params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
            found[statement.name.value] = params[1:] if function is not statement else params
    return found


def _names_a_device(keyword: str, keywords) -> bool:
    if keyword in keywords:
        return True
    return keywords is KEYWORDS and keyword.endswith(KEYWORD_SUFFIX) and keyword not in INDEX_KEYWORDS


def _qualified(func, ctx) -> str:
    hit = ctx.qualify(func)
    return hit[0] if hit is not None else written(func)


def _device_api(func, ctx) -> bool:
    # `torch.cuda.synchronize(device=i)` and its HPU twin take an index there.
    return _qualified(func, ctx).startswith(("torch.cuda.", "torch.hpu."))


def used_as_a_device(scope: cst.CSTNode, name: str, ctx) -> bool:
    """Whether ``name`` is read in ``scope`` where a device goes (`.to(device)`,
    `device=device`) and nowhere an index goes: a CUDA or HPU API's argument
    (`torch.cuda.get_device_properties(device)`), `torch.device("cuda", device)`,
    a format string, arithmetic, a comparison, a subscript. A value only
    handed on (a positional argument of the project's own function) says
    neither."""
    as_device = False
    for node in descendants(scope):
        for value in _index_places(node, ctx):
            if _is_name(value, name):
                return False
        if isinstance(node, cst.Call) and any(_is_name(value, name) for value in device_values(node, ctx)):
            as_device = True
    return as_device


def used_as_a_rank(scope: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` is read in ``scope`` as the process's number: in
    arithmetic that picks its share of the work (`idx * slice_size`, a slice
    bound). A process's device index is that number only on CUDA."""
    for node in descendants(scope):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SHARE_OPERATORS):
            if _is_name(node.left, name) or _is_name(node.right, name):
                return True
        if isinstance(node, cst.Slice) and any(_is_name(bound, name) for bound in (node.lower, node.upper)):
            return True
    return False


_SHARE_OPERATORS = (cst.Multiply, cst.FloorDivide, cst.Modulo)


def _index_places(node: cst.CSTNode, ctx) -> list:
    if isinstance(node, cst.Call):
        if _device_api(node.func, ctx) or (_qualified(node.func, ctx) == "torch.device" and len(node.args) > 1):
            return [arg.value for arg in node.args]
        return []
    if isinstance(node, cst.FormattedStringExpression):
        return [node.expression]
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right]
    if isinstance(node, cst.Comparison):
        return [node.left, *(target.comparator for target in node.comparisons)]
    if isinstance(node, cst.Index):
        return [node.value]
    return []


def _is_name(value: cst.CSTNode, name: str) -> bool:
    return isinstance(value, cst.Name) and value.value == name
