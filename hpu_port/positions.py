"""Line and column of chosen nodes, from a code-generation pass over the
statements that hold them.

libcst's PositionProvider generates the whole module and records a position
for every node, which costs more than parsing it. Findings need positions only
for the few nodes they are about, so this records just those, and generates
only the top-level statements that hold them, each from the line the standard
parser's tree says it starts on.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Iterable, Optional

import libcst as cst

from hpu_port.walk import children
from libcst._position import CodePosition, CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState

_UNWANTED = contextlib.nullcontext()


class _Recorder:
    """Stands in for a metadata provider: only its ``_computed`` dict is used."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


class _ChosenPositions(PositionProvidingCodegenState):
    __slots__ = ("wanted",)

    # Only line and column matter here, not the generated text, so tokens
    # are counted rather than kept, and only those with a line break are split.
    def add_token(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            self._update_position(value)
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column) if node in self.wanted else None)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if start is not None and node not in self.provider._computed:
            self.provider._computed[node] = CodeRange(CodePosition(*start), CodePosition(self.line, self.column))

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if node not in self.wanted:
            return _UNWANTED
        # The node's range may be its children's (a block ends where its body
        # ends); they are generated inside this context, so record them too.
        self.wanted.update(n for n in (start_node, end_node) if n is not None)
        return super().record_syntactic_position(node, start_node=start_node, end_node=end_node)


def positions_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict:
    """Start and end (``CodeRange``) of each of ``nodes``, as libcst reports them."""
    recorder = _Recorder()
    state = _state(module, recorder, set(nodes))
    module._codegen(state)
    return recorder._computed


def positions_in_statements(module: cst.Module, wanted: dict, starts: dict) -> dict:
    """Like ``positions_of``, for ``wanted``: top-level statement -> nodes in
    it, generating only those statements; ``starts`` from ``statement_starts``."""
    recorder = _Recorder()
    for statement, nodes in wanted.items():
        state = _state(module, recorder, set(nodes))
        state.line = starts[statement]
        statement._codegen(state)
    return recorder._computed


def _state(module: cst.Module, recorder: _Recorder, wanted: set) -> _ChosenPositions:
    state = _ChosenPositions(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=recorder,
    )
    state.wanted = wanted
    return state


def statement_starts(module: cst.Module, tree: ast.Module) -> Optional[dict]:
    """The line each top-level statement of ``module`` starts on (its leading
    empty and comment lines included), from the standard parser's ``tree`` of
    the same lines; None when the two do not line up."""
    statements = tree.body
    starts: dict = {}
    index, previous = 0, 0
    for statement in module.body:
        if index >= len(statements):
            return None
        node = statements[index]
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        start = first - len(statement.leading_lines)
        if start <= previous:
            return None
        starts[statement] = previous = start
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return starts if index == len(statements) else None


def top_statements(module: cst.Module, nodes: set) -> dict:
    """Node -> the top-level statement holding it, found by searching the tree
    (for nodes reported after the walk, which no longer knows where it was)."""
    found: dict = {}
    remaining = set(nodes)
    for statement in module.body:
        stack = [statement]
        while stack and remaining:
            node = stack.pop()
            if node in remaining:
                found[node] = statement
                remaining.discard(node)
            stack.extend(children(node))
        if not remaining:
            break
    return found
