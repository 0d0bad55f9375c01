"""Branches and values that choose a device or a library (for the
``other-backend`` kind): the arm of an `if` or a conditional expression taken
only for another device, export format or NVIDIA-only library, an arm that
imports such a library itself, a "cuda" choice beside an "hpu" one, and the
CUDA entry of a per-device table."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst

from hpu_port.branches import string_value
from hpu_port.context import FileContext
from hpu_port.device.evidence import Evidence
from hpu_port.visitors._definitions import blocks_of, body_of, functions, imported_library, name_words
from hpu_port.visitors._references import shown_briefly, written


def mark_cuda_entry(ctx: FileContext, node: cst.Dict, devices: frozenset) -> None:
    """Hold the `"cuda"` entry of a table keyed by device names
    (`{"cuda": torch.cuda.synchronize, "xpu": torch.xpu.synchronize, "cpu": None}`):
    looked up by the device in use, it is never read on Gaudi, and ported it
    only repeats what an `"hpu"` entry of its own would hold."""
    if node in ctx.branches.chains:
        return  # it has, or gains (HPU620), an "hpu" entry of its own
    keys = [string_value(element.key) if isinstance(element, cst.DictElement) else None for element in node.elements]
    # Other keys may be set beside the devices (`"default": None`).
    if "cuda" not in keys or None in keys or not any(key in devices for key in keys if key != "cuda"):
        return
    entry = node.elements[keys.index("cuda")]
    ctx.other_backend.mark(
        entry,
        "it is CUDA's entry in a table with one entry per device, which is not read on Gaudi; add an `\"hpu\"` entry instead",
        name='the `"cuda"` entry of a per-device table',
    )


def mark_cuda_choices(ctx: FileContext) -> None:
    """Where one name gets "hpu" in one branch and "cuda" in another
    (`accelerator_name = "hpu"` ... `accelerator_name = "cuda"`, or two
    `return`s), the code already tells the devices apart: the "cuda" choice,
    with the `if` that leads to it, is CUDA's own."""
    for body in (ctx.module.body, *(body_of(f) for f in functions(ctx.module.body))):
        choices: dict[str, list] = {}
        for statement, branch in _statements_and_branches(body, None):
            for small in statement.body:
                choice = _chosen_device(small)
                if choice is not None:
                    choices.setdefault(choice[0], []).append((choice[1], statement, branch))
        for target, made in choices.items():
            if {value for value, _, _ in made} >= {"hpu", "cuda"}:
                for value, statement, branch in made:
                    if value == "cuda":
                        unit = branch if branch is not None and branch.orelse is None else statement
                        shown = shown_briefly(written(statement))
                        ctx.other_backend.mark(
                            unit,
                            f'`{target}` is set to "hpu" in another branch, so this one is for CUDA',
                            name=f"the CUDA choice `{shown}`",
                            at=unit.test if isinstance(unit, cst.If) else unit,
                        )


def _statements_and_branches(body, branch) -> Iterator[tuple[cst.SimpleStatementLine, Optional[cst.If]]]:
    """The simple statements of ``body`` (not of nested definitions), each
    with the `if` whose own body holds it directly (None elsewhere)."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield statement, branch
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(statement, cst.BaseCompoundStatement):
            if isinstance(statement, cst.If):
                yield from _statements_and_branches(body_of(statement), statement)
                orelse = statement.orelse
                if orelse is not None:
                    yield from _statements_and_branches([orelse] if isinstance(orelse, cst.If) else body_of(orelse), None)
            else:
                for block in blocks_of(statement):
                    yield from _statements_and_branches(block, None)


def _chosen_device(small) -> Optional[tuple[str, str]]:
    """(what is set, "cuda" or "hpu") for `name = "cuda"` and `return "hpu"`."""
    if isinstance(small, cst.Return):
        target, value = "return", small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = written(small.targets[0].target), small.value
    else:
        return None
    device = string_value(value) if value is not None else None
    return (target, device) if device in ("cuda", "hpu") else None


def mark_importing_arm(ctx: FileContext, node, evidence: Evidence) -> None:
    """Hold the arm of an `if` that imports an NVIDIA-only runtime (or another
    framework) itself (`elif engine:  import tensorrt as trt ...`): that arm
    is the library's."""
    if not isinstance(node, cst.If):
        return
    library = imported_library(body_of(node), evidence.unit_library)
    if library is not None:
        ctx.other_backend.mark(
            node.body,
            f"it imports `{library}`, {evidence.unit_library(library)}",
            name=f"the branch of `{shown_briefly(written(node.test))}`",
            at=node.test,
        )


def mark_arm(ctx: FileContext, node, evidence: Evidence) -> Optional[bool]:
    """Hold the arm of ``node`` (an `if` or a conditional expression) that
    runs only for another device or export format (the evidence's
    ``branch_names``): the body of `if format == "coreml":`, the `else` of `if
    not is_npu_available():`, the first value of `"cuda" if
    is_torch_xla_available() else device.type`."""
    found = _names_another_device(node.test, evidence)
    if found is None:
        return
    name, positive = found
    if isinstance(node, cst.IfExp):
        arm = node.body if positive else node.orelse
    else:
        arm = node.body if positive else (node.orelse.body if isinstance(node.orelse, cst.Else) else None)
    if arm is None:
        return
    shown = shown_briefly(written(node.test))
    ctx.other_backend.mark(
        arm,
        f"it runs only for `{name}`, another device, export format, NVIDIA-only library or set-up",
        name=f"the branch of `{shown}`" if positive else f"the `else` branch of `{shown}`",
        at=node.test,
    )
    return True


def _names_another_device(test: cst.BaseExpression, evidence: Evidence) -> Optional[tuple[str, bool]]:
    """(the device or format, whether the test is true for it) when ``test``
    holds only for another device, export format or NVIDIA-only library."""
    names = evidence.branch_names
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _names_another_device(test.expression, evidence)
        return (inner[0], not inner[1]) if inner is not None else None
    if isinstance(test, cst.BooleanOperation):
        left, right = (_names_another_device(side, evidence) for side in (test.left, test.right))
        if isinstance(test.operator, cst.And):
            # True only for that device if either side is (`format == "coreml" and hasattr(F, ...)`).
            return next((side for side in (left, right) if side is not None and side[1]), None)
        # True only for other devices if both sides are (`is_tpu or coreml`).
        return left if left is not None and right is not None and left[1] and right[1] else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _compared_device(test, names)
    if isinstance(test, cst.Call):
        return _prefix_test(test, names) or _availability_probe(test.func, names)
    if isinstance(test, (cst.Name, cst.Attribute)):
        name = written(test).rsplit(".", 1)[-1]
        if name.lower() in names:
            return name.lower(), True  # a flag named for the format: `elif coreml:`
        words = name_words(name)
        device = next((w for w in words if w in names), None)
        # `is_npu`, `use_xla`, `on_tpu`: a flag that says the code runs on that device.
        return (device, True) if device is not None and words[0] in evidence.flag_words else None
    return None


def _compared_device(test: cst.Comparison, names: frozenset) -> Optional[tuple[str, bool]]:
    target = test.comparisons[0]
    operator = target.operator
    values = [_value(test.left), *_strings(target.comparator)] if isinstance(operator, (cst.In, cst.NotIn)) else [
        _value(test.left), _value(target.comparator)]
    compared = [value.split(":")[0].lower() for value in values if value is not None]
    if not compared or not all(value in names for value in compared):
        return None
    if isinstance(operator, (cst.Equal, cst.Is, cst.In)):
        return compared[0], True
    if isinstance(operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
        return compared[0], False
    return None


def _value(node) -> Optional[str]:
    """A string, or the member of an enum of devices or set-ups, lower-cased
    (`DistributedType.MULTI_GPU`: "multi_gpu")."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, (cst.Name, cst.Attribute)):
        member = node.attr.value
        return member.lower() if member.isupper() else None
    return string_value(node)


def _strings(node) -> list:
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        values = [_value(element.value) for element in node.elements]
        return values if all(value is not None for value in values) else [None]
    return [_value(node)]


def _prefix_test(test: cst.Call, names: frozenset) -> Optional[tuple[str, bool]]:
    """`opt_class.startswith("bitsandbytes.")`, `device.startswith("npu")`: true for that name."""
    func = test.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "startswith" and len(test.args) == 1):
        return None
    prefix = string_value(test.args[0].value)
    name = re.split(r"[.:_\-]", prefix.lower())[0] if prefix else None
    return (name, True) if name in names else None


def _availability_probe(func: cst.BaseExpression, names: frozenset) -> Optional[tuple[str, bool]]:
    """`is_torch_npu_available()`, `torch.backends.mps.is_available()`: true on that device."""
    parts = written(func).split(".")
    if not parts[-1].startswith("is_") or not parts[-1].endswith("available"):
        return None
    device = next((word for part in parts for word in name_words(part) if word in names), None)
    return (device, True) if device is not None else None
