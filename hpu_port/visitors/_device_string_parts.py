"""What the ``device-string`` visitor reads off the code around a string:
the strings an expression evaluates to, the names and keys it mentions,
``Literal`` types, a module's named constants, and tests that stay tests for
the device."""

from __future__ import annotations

import re
from typing import Iterator, Optional

import libcst as cst

from hpu_port.patterns import matches_any
from hpu_port.visitors._references import literal_value, shown_briefly, written


class CudaCalls:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.found = False

    def visit_Call(self, node) -> None:
        hit = self.ctx.qualify(node.func)
        self.found |= hit is not None and hit[0].startswith("torch.cuda.")


# `import torch`, `import os, torch`, `import torch.nn` bind `torch`; `import torch.nn as nn`,
# `import torch as T` and `from torch import nn` do not.
_IMPORTS_TORCH = re.compile(
    rb"^[ \t]*import[ \t]+(?:[\w.]+(?:[ \t]+as[ \t]+\w+)?[ \t]*,[ \t]*)*torch(?:\.[\w.]+)?(?![\w.])(?![ \t]+as\b)",
    re.MULTILINE,
)


class UnresolvedCudaCalls:
    """The first call written as torch's CUDA API (`torch.cuda.is_available()`)
    whose name the module does not bind to torch (it reaches the module
    through a `*` import): the port cannot rename it, so the test stays CUDA's."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.found: Optional[str] = None
        # Only where the module never binds `torch` itself (an import under an `if` counts) and takes names through `*`.
        source = ctx.source
        self.unbound = b"import *" in source and not _IMPORTS_TORCH.search(source)

    def visit_Call(self, node) -> None:
        name = written(node.func)
        if self.unbound and self.found is None and name.startswith("torch.cuda.") and self.ctx.qualify(node.func) is None:
            self.found = name


class KeptTest:
    """Whether a test compares with a device string that is not renamed, or
    calls one of ``kept_checks`` (the device evidence's for the device)."""

    def __init__(self, ctx, params, kept_checks: tuple, renamed) -> None:
        self.ctx, self.params, self.kept_checks, self.renamed = ctx, params, kept_checks, renamed
        self.found = False

    def visit_SimpleString(self, node) -> None:
        value = literal_value(node.value)
        if self.renamed is None:
            return
        if isinstance(value, str) and self.params["exact"].fullmatch(value) and node not in self.renamed:
            self.found = True

    def visit_Call(self, node) -> None:
        hit = self.ctx.qualify(node.func)
        if hit is not None and matches_any(hit[0], self.kept_checks):
            self.found = True


def literal_aliases(statements) -> Iterator[tuple[str, tuple[str, frozenset]]]:
    """`RefitBackendName = Literal["nccl", "gloo", "nvshmem"]` at module level."""
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and target_name(small):
                    typed = literal_type(small.value)
                    if typed is not None:
                        yield target_name(small), typed


def literal_type(expr: cst.BaseExpression) -> Optional[tuple[str, frozenset]]:
    """(as written, the string values) for `Literal["a", "b"]` (or `typing.Literal`)."""
    if not isinstance(expr, cst.Subscript) or written(expr.value).split(".")[-1] != "Literal":
        return None
    values = [literal_value(written(element.slice.value)) for element in expr.slice if isinstance(element.slice, cst.Index)]
    if not values or not all(isinstance(value, str) for value in values):
        return None
    return shown_briefly(written(expr)), frozenset(values)


def outside_literal(name: str, typed: str, replacement: str) -> str:
    return f"`{name}` is typed `{typed}`, which does not allow {replacement!r}"


def replacement_taken(source: bytes, replacement: str, taken_by: tuple) -> Optional[str]:
    """The first of ``taken_by`` the module uses, when it also tests for
    ``replacement`` (`backend == "hccl"` before `import torch_npu`). Read
    from the text: `check` may not parse the function that holds the test."""
    used = next((name for name in taken_by if name.encode() in source), None)
    if used is None or replacement.encode() not in source:
        return None
    quoted = rf"""["']{re.escape(replacement)}["']"""
    test = re.compile(rf"(?:[=!]=|\bin)\s*{quoted}|{quoted}\s*(?:[=!]=|\bin\b|\bnot\s+in\b)".encode())
    return used if test.search(source) else None


def string_constants(statements) -> Iterator[tuple[str, str]]:
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.SimpleString):
                    target, value = target_name(small), small.value.evaluated_value
                    if target and isinstance(value, str):
                        yield target, value


def target_name(small: cst.Assign) -> str:
    target = small.targets[0].target if len(small.targets) == 1 else None
    return target.value if isinstance(target, cst.Name) else ""


def strings_in(expr: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The string literals an expression evaluates to: itself, the arms of a
    conditional, the operands of `or`/`and`, the items of a container."""
    if isinstance(expr, (cst.SimpleString, cst.FormattedString)):
        yield expr
    elif isinstance(expr, cst.IfExp):
        yield from strings_in(expr.body)
        yield from strings_in(expr.orelse)
    elif isinstance(expr, cst.BooleanOperation):
        yield from strings_in(expr.left)
        yield from strings_in(expr.right)
    elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        for element in expr.elements:
            yield from strings_in(element.value)
    elif isinstance(expr, cst.Call) and written(expr.func).split(".")[-1] == "field":
        # `field(default="fp16")`: a dataclass field's default.
        for arg in expr.args:
            if arg.keyword is not None and arg.keyword.value == "default":
                yield from strings_in(arg.value)


def names_and_keys(expr: cst.CSTNode) -> Iterator[str]:
    """Every name, attribute and string subscript key in ``expr``."""
    if isinstance(expr, cst.Name):
        yield expr.value
    elif isinstance(expr, cst.Attribute):
        yield expr.attr.value
        yield from names_and_keys(expr.value)
    elif isinstance(expr, cst.Subscript):
        yield from names_and_keys(expr.value)
        for element in expr.slice:
            index = getattr(element.slice, "value", None)
            if isinstance(index, cst.SimpleString):
                key = literal_value(written(index))
                if isinstance(key, str):
                    yield key
    elif isinstance(expr, cst.Call):
        yield from names_and_keys(expr.func)
        for arg in expr.args:
            yield from names_and_keys(arg.value)


def replace_first_part(new_text: str):
    def edit(updated: cst.FormattedString) -> cst.FormattedString:
        parts = list(updated.parts)
        parts[0] = parts[0].with_changes(value=new_text)
        return updated.with_changes(parts=parts)

    return edit
