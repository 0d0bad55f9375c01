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
        chains = _enclosing_statements(statement, set(nodes))
        _generate_innermost(module, recorder, _Holding(statement, tree_node, nodes, line, [], chains, 1))
    return recorder._computed


class _Holding:
    """A statement to generate for ``nodes``, or to look into: its first
    line, the standard parser's node for it, the indentation of its block,
    each node's enclosing statements and how deep this one is among them."""

    __slots__ = ("statement", "tree_node", "nodes", "line", "indent", "chains", "depth")

    def __init__(self, statement, tree_node, nodes: list, line: int, indent: list, chains: dict, depth: int) -> None:
        self.statement, self.tree_node, self.nodes, self.line = statement, tree_node, nodes, line
        self.indent, self.chains, self.depth = indent, chains, depth


def _generate_innermost(module, recorder, holding: _Holding) -> None:
    members = _members(holding)
    if members is None:
        _generate(module, recorder, holding.statement, holding.nodes, holding.line, holding.indent)
        return
    block_indent = holding.statement.body.indent
    inner = [*holding.indent, module.default_indent if block_indent is None else block_indent]
    for member, (member_line, member_tree, member_nodes) in members.items():
        deeper = _Holding(member, member_tree, member_nodes, member_line, inner, holding.chains, holding.depth + 1)
        _generate_innermost(module, recorder, deeper)


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


def _members(holding: _Holding) -> Optional[dict]:
    """For a statement with a block, the statements of its body that hold
    its nodes: member -> (its first line, the standard parser's node for it,
    its nodes); None when some node is not inside one (in the header, a base
    class, an `else` branch) or the two trees do not line up."""
    statement, tree_node = holding.statement, holding.tree_node
    tree_types = _BLOCKS.get(type(statement))
    if tree_types is None or not isinstance(tree_node, tree_types) or not isinstance(statement.body, cst.IndentedBlock):
        return None
    body = statement.body.body
    in_body = {id(member) for member in body}
    holders = {}
    for node in holding.nodes:
        chain = holding.chains.get(node, ())
        if len(chain) <= holding.depth or id(chain[holding.depth]) not in in_body:
            return None
        holders[node] = chain[holding.depth]
    starts = _starts(body, tree_node.body)
    if starts is None:
        return None
    members: dict = {}
    for node in holding.nodes:
        member = holders[node]
        members.setdefault(member, (*starts[member], []))[2].append(node)
    return members


def _enclosing_statements(statement: cst.CSTNode, nodes: set) -> dict:
    """Node of ``nodes`` -> the statements that hold it, ``statement`` first
    (the node itself last, if it is one), from one walk of ``statement``."""
    found: dict = {}
    stack = [(statement, (statement,))]
    while stack and len(found) < len(nodes):
        node, chain = stack.pop()
        if node in nodes:
            found[node] = chain
        for child in children(node):
            stack.append((child, (*chain, child) if _is_statement(type(child)) else chain))
    return found


def _is_statement(node_type: type) -> bool:
    known = _STATEMENT_TYPES.get(node_type)
    if known is None:
        known = _STATEMENT_TYPES[node_type] = issubclass(node_type, cst.BaseStatement)
    return known


_STATEMENT_TYPES: dict = {}


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
