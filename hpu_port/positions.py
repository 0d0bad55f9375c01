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
from typing import Iterable, Optional, Sequence

import libcst as cst

from hpu_port.triggers import first_line
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
    it, generating only the innermost statements that hold them (the lines
    of a block's body that hold a node, not the whole function or loop);
    ``starts`` from ``statement_starts``."""
    recorder = _Recorder()
    for statement, nodes in wanted.items():
        line, tree_node = starts[statement]
        _generate_innermost(module, recorder, statement, tree_node, nodes, line, [])
    return recorder._computed


def _generate_innermost(module, recorder, statement, tree_node, nodes: list, line: int, indent: list) -> None:
    members = _members(statement, tree_node, nodes)
    if members is None:
        _generate(module, recorder, statement, nodes, line, indent)
        return
    block_indent = statement.body.indent
    inner = [*indent, module.default_indent if block_indent is None else block_indent]
    for member, (member_line, member_tree, member_nodes) in members.items():
        _generate_innermost(module, recorder, member, member_tree, member_nodes, member_line, inner)


# Statements whose body is a block of statements in both trees, each with
# the standard parser's types it may be (``async`` ones included).
_BLOCKS = {
    cst.ClassDef: (ast.ClassDef,),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.If: (ast.If,),
    cst.Try: (ast.Try,),
}


def _members(statement: cst.CSTNode, tree_node: ast.AST, nodes: list) -> Optional[dict]:
    """For a statement with a block, the statements of its body that hold
    ``nodes``: member -> (its first line, the standard parser's node for it,
    its nodes); None when some node is not inside one (in the header, a base
    class, an `else` branch) or the two trees do not line up."""
    tree_types = _BLOCKS.get(type(statement))
    if tree_types is None or not isinstance(tree_node, tree_types) or not isinstance(statement.body, cst.IndentedBlock):
        return None
    starts = _starts(statement.body.body, tree_node.body)
    if starts is None:
        return None
    holders = holding_statements(statement.body.body, set(nodes))
    if len(holders) < len(nodes):
        return None
    members: dict = {}
    for node in nodes:
        member = holders[node]
        members.setdefault(member, (*starts[member], []))[2].append(node)
    return members


def _generate(module, recorder, statement, nodes, line: int, indent: list) -> None:
    state = _state(module, recorder, set(nodes))
    state.line = line
    state.indent_tokens = indent
    statement._codegen(state)


def _state(module: cst.Module, recorder: _Recorder, wanted: set) -> _ChosenPositions:
    state = _ChosenPositions(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=recorder,
    )
    state.wanted = wanted
    return state


def statement_starts(module: cst.Module, tree: ast.Module) -> Optional[dict]:
    """Top-level statement of ``module`` -> (the line it starts on, its leading
    empty and comment lines included; the standard parser's node for it), from
    that parser's ``tree`` of the same lines; None when the two do not line up."""
    return _starts(module.body, tree.body)


def _starts(statements: Sequence[cst.CSTNode], tree_statements: list) -> Optional[dict]:
    starts: dict = {}
    index, previous = 0, 0
    for statement in statements:
        if index >= len(tree_statements):
            return None
        node = tree_statements[index]
        start = first_line(node) - len(statement.leading_lines)
        if start <= previous:
            return None
        starts[statement] = (start, node)
        previous = start
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return starts if index == len(tree_statements) else None


def holding_statements(statements: Sequence[cst.CSTNode], nodes: set) -> dict:
    """Node -> the statement of ``statements`` holding it, found by searching
    their trees (for nodes reported after the walk, which no longer knows
    where it was)."""
    found: dict = {}
    remaining = set(nodes)
    for statement in statements:
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
