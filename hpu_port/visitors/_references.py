"""Matching references to imported names (``torch.cuda.synchronize``, ``tc.sync``, ``sync``).

Shared by the kinds that act on a qualified name wherever it is used: as a
call, a decorator, a context manager, or a value passed around.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Optional

import libcst as cst

from hpu_port.names import ImportBinding


class RulesVisitor(cst.BatchableCSTVisitor):
    """A kind's visitor: the file's context and the rules of the kind that apply."""

    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules


class ReferenceVisitor(cst.BatchableCSTVisitor):
    """Calls ``on_reference`` for each Name/Attribute chain whose qualified name is wanted.

    Once a chain matched, the names inside it are not offered again.
    """

    def __init__(self, ctx, wanted: set[str]) -> None:
        super().__init__()
        self.ctx = ctx
        # `pynvml.*` stands for every name under pynvml (but not pynvml itself).
        # Longest first, so that the most specific wildcard answers
        # (`apex.contrib.*` before `apex.*`), the same in every run.
        self.prefixes = tuple(sorted((name[:-1] for name in wanted if name.endswith(".*")), key=lambda p: (-len(p), p)))
        self.wanted = {name for name in wanted if not name.endswith(".*")}
        self.last_parts = {name.rsplit(".", 1)[-1] for name in self.wanted}
        self._inside: Optional[cst.CSTNode] = None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._inside is None and (self.prefixes or node.attr.value in self.last_parts):
            self._check(node)

    def leave_Attribute(self, node: cst.Attribute) -> None:
        if node is self._inside:
            self._inside = None

    def visit_Name(self, node: cst.Name) -> None:
        if self._inside is None and self.ctx.is_reference(node):
            self._check(node)

    def _check(self, node) -> None:
        hit = self.ctx.qualify(node)
        if hit is None or not self.is_wanted(hit[0]):
            return
        if not self.ctx.claim(node):
            return
        if isinstance(node, cst.Attribute):
            self._inside = node
        self.on_reference(node, hit[0], hit[1])

    def is_wanted(self, qualified: str) -> bool:
        return qualified in self.wanted or (bool(self.prefixes) and qualified.startswith(self.prefixes))

    def wildcard_for(self, qualified: str) -> Optional[str]:
        for prefix in self.prefixes:
            if qualified.startswith(prefix):
                return prefix + "*"
        return None

    def on_reference(self, node, qualified: str, binding: ImportBinding) -> None:
        raise NotImplementedError


def last_name(node: cst.CSTNode) -> str:
    """`dtype` for `dtype`, `self.dtype` and `x.to`; "" for other expressions."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


def written(node: cst.CSTNode) -> str:
    """The source text of a node, as the user wrote it."""
    # Names, dotted names and strings are most of what rules ask about:
    # spelled out directly, without generating code (the same text).
    if type(node) is cst.SimpleString and not node.lpar:
        return node.value
    dotted = _dotted(node)
    if dotted is not None:
        return dotted
    # Several rules read the same tests (`if torch.cuda.is_available():`):
    # each is generated once. Nodes are keys by identity.
    text = _WRITTEN.get(node)
    if text is None:
        text = _WRITTEN[node] = cst.Module([]).code_for_node(node)
    return text


_WRITTEN: dict = {}


def forget_written() -> None:
    """Drop the texts of the nodes of the file ported last (they keep its tree alive)."""
    _WRITTEN.clear()


def _dotted(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` as written when it is only names and tight dots; None otherwise."""
    kind = type(node)
    if kind is cst.Name:
        return None if node.lpar else node.value
    if kind is cst.Attribute and not node.lpar and _tight(node.dot):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def _tight(dot: cst.Dot) -> bool:
    """A dot with no space or line break around it."""
    before, after = dot.whitespace_before, dot.whitespace_after
    return (
        type(before) is cst.SimpleWhitespace and not before.value
        and type(after) is cst.SimpleWhitespace and not after.value
    )


NOT_A_LITERAL = object()


@lru_cache(maxsize=4096)  # the same strings recur; and each evaluation leaves a reference cycle behind
def literal_value(code: str):
    """The value of a Python literal written as ``code`` ('x' and "x" are equal),
    or ``NOT_A_LITERAL`` for any other expression (callers must not change it)."""
    try:
        return ast.literal_eval(code)
    except (ValueError, SyntaxError):
        return NOT_A_LITERAL


def same_literal(a, b) -> bool:
    """Equal literals of one type: Python finds ``1 == True`` and ``1 == 1.0``,
    but ``padding=1`` is not ``padding=True``."""
    return type(a) is type(b) and a == b


def shown_briefly(code: str, limit: int = 60) -> str:
    """Code on one line, cut to ``limit`` characters, for a one-line message."""
    line = " ".join(code.split()).replace("( ", "(").replace(" )", ")")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"`: a script's entry block, not a choice the code makes."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return False
    sides = [test.left, target.comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and literal_value(s.value) == "__main__"]
    return len(names) == 1 and len(strings) == 1


def whole_tree(ctx) -> Optional[ast.Module]:
    """The standard parser's tree of the file as read (None if it does not
    parse): `check` stubs out the functions no rule acts on before the rules
    walk libcst's, so what a rule reads of other functions is read here."""
    if ctx.tree is not None:
        return ctx.tree
    try:
        return ast.parse(ctx.source) if ctx.source else None
    except (SyntaxError, ValueError):
        return None
