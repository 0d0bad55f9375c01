"""Line and column of chosen nodes, from one code-generation pass.

libcst's PositionProvider records a position for every node of the module,
which costs more than parsing it. Findings need positions only for the few
nodes they are about, so this records just those.
"""

from __future__ import annotations

import contextlib
from typing import Iterable

import libcst as cst
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
    state = _ChosenPositions(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=recorder,
    )
    state.wanted = set(nodes)
    module._codegen(state)
    return recorder._computed
