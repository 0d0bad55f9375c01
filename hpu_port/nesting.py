"""Python nested too deeply to port, told before libcst is asked to read it.

Python's own parser stops at 200 nested brackets, 100 levels of indentation
and a few thousand levels of anything else; code past those limits is not
Python any version runs. libcst's parser has no such limits: it reads 10,000
nested brackets for minutes while its memory grows by gigabytes. Within the
limits it copes, but each level of a long chain it builds bottom-up (`a.b.c`,
`x.f().g()`, `a + b + c`, `-(-(-x))`) costs it more than the one before:
2,000 levels take it seconds, 4,000 minutes.

So a file goes to libcst only when the standard parser read it, and no
expression in it is deeper than ``MAX_EXPRESSION_DEPTH``, and its deep
expressions together stay within ``DEEP_BUDGET``; else one line says which
limit it passed and where. The standard parser's tree is made anyway (see
hpu_port.triggers); measuring its depth costs a walk of the statements that
are long enough to be deep.
"""

from __future__ import annotations

import ast
import re
import warnings
from itertools import accumulate
from typing import Optional

from hpu_port.ast_nodes import child_nodes
from hpu_port.triggers import child_statements

# libcst reads an expression this deep in a few seconds (a chain of 1,500
# operators, as generated code holds, in one).
MAX_EXPRESSION_DEPTH = 2000
# Up to this depth libcst's time grows with the length of the code alone.
SHALLOW = 100
# What the levels past SHALLOW may add up to, squared, over the whole file:
# a few expressions near the limit, or many moderately deep ones.
DEEP_BUDGET = 4 * (MAX_EXPRESSION_DEPTH - SHALLOW) ** 2
# What Python's tokenizer and parser say when they reach their limits.
_PARSER_LIMITS = ("too many nested parentheses", "too many levels of indentation", "too complex")
MAX_BRACKETS = 200  # Python's tokenizer: "too many nested parentheses"


def python_nesting_problem(source: bytes, tree: Optional[ast.Module], stubbed: frozenset = frozenset()) -> Optional[str]:
    """Why libcst must not be given ``source``, or None. ``tree``: the
    standard parser's tree of it, None when that parser did not read it.
    ``stubbed``: the ids of the tree's statements whose code libcst is not
    given (hpu_port.narrow), which are not measured."""
    if tree is None:
        return _parser_limit(source)
    return _too_deep_for_libcst(tree, source, stubbed)


def _parser_limit(source: bytes) -> Optional[str]:
    """The limit of Python's parser that ``source`` passes, if that is why it
    does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as exc:
        if any(limit in str(exc.msg) for limit in _PARSER_LIMITS):
            return f"nested too deeply for the Python parser: {exc.msg} at line {exc.lineno}"
        # Syntax newer than this Python goes to libcst, which may read it; its
        # brackets must still be within every Python's limit.
        return _bracket_problem(source)
    except (MemoryError, RecursionError):
        return "nested too deeply for the Python parser: too complex to parse (more levels than its stack holds)"
    except ValueError:  # null bytes: libcst gives the error
        return None
    return None


# Comments and strings, whose brackets do not count, and the brackets. Each
# kind of string matches wherever it starts, closed or not (a string left
# open runs to the end of its line, or of the file when triple-quoted), so
# that the search never reads on from one start only to fail.
_BRACKET_TOKENS = re.compile(
    rb"#[^\r\n]*"
    rb"|[rRbBuUfF]{0,2}(?:"
    rb"'{3}[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'{3}|\Z)"
    rb'|"{3}[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"{3}|\Z)'
    rb"|'[^'\\\r\n]*(?:\\.[^'\\\r\n]*)*'?"
    rb'|"[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"?'
    rb")"
    rb"|[(\[{]|[)\]}]",
    re.DOTALL,
)


def _bracket_problem(source: bytes) -> Optional[str]:
    depth = 0
    for token in _BRACKET_TOKENS.finditer(source):
        bracket = token.group()
        if bracket in b"([{":
            depth += 1
            if depth > MAX_BRACKETS:
                line = source.count(b"\n", 0, token.start()) + 1
                return f"nested too deeply for the Python parser: more than {MAX_BRACKETS} nested brackets at line {line}"
        elif bracket in b")]}":
            depth = max(0, depth - 1)
    return None


def _too_deep_for_libcst(tree: ast.Module, source: bytes, stubbed: frozenset) -> Optional[str]:
    spent = 0
    spans = _Spans(source)
    stack = [statement for statement in tree.body if id(statement) not in stubbed]
    while stack:
        statement = stack.pop()
        children = child_statements(statement)
        if stubbed:
            children = [child for child in children if id(child) not in stubbed]
        stack.extend(children)
        if not _long_enough_to_be_deep(statement):
            continue
        depth = _expression_depth(statement, spans)
        if depth > MAX_EXPRESSION_DEPTH:
            return (
                f"nested too deeply for libcst, the parser hpu-port uses: an expression {depth} levels deep "
                f"at line {statement.lineno} (at most {MAX_EXPRESSION_DEPTH})"
            )
        spent += max(0, depth - SHALLOW) ** 2
        if spent > DEEP_BUDGET:
            return (
                f"too many deeply nested expressions for libcst, the parser hpu-port uses, to read in reasonable "
                f"time (the last at line {statement.lineno})"
            )
    return None


def _long_enough_to_be_deep(statement: ast.stmt) -> bool:
    # Each level takes at least a character: a statement on one line shorter
    # than SHALLOW cannot be deeper.
    return statement.end_lineno != statement.lineno or statement.end_col_offset - statement.col_offset > SHALLOW


def _expression_depth(statement: ast.stmt, spans: _Spans) -> int:
    """How deep the expressions of a statement nest (its inner statements
    left out), exactly when deeper than SHALLOW; at most SHALLOW otherwise."""
    # Level by level, over the fields that hold nodes (contexts and operators
    # are markers, no level of what libcst builds): a third of the cost of
    # walking node by node with a depth beside each. A node whose text is too
    # short to hold the levels still needed to pass SHALLOW is left behind.
    level = [child for child in _expression_children(statement) if spans.may_hold(child, SHALLOW)]
    depth = 0
    while level:
        depth += 1
        needed = SHALLOW - depth
        level = [child for node in level for child in _expression_children(node) if needed <= 0 or spans.may_hold(child, needed)]
    return depth


class _Spans:
    """How long a node's text is, in bytes, from its position in the file.

    Each level of an expression adds at least one byte to the text of the
    node above it (a bracket, a dot, an operator, a keyword), except the
    nodes without a position (a comprehension's clause, a lambda's
    arguments), which sit between two that have one: a node of ``n`` bytes
    holds fewer than ``2 * n`` levels."""

    def __init__(self, source: bytes) -> None:
        self._source = source
        self._line_starts: Optional[list] = None

    def may_hold(self, node: ast.AST, levels: int) -> bool:
        first = getattr(node, "lineno", None)
        if first is None or node.end_lineno is None:
            return True
        if node.end_lineno == first:
            length = node.end_col_offset - node.col_offset
        else:
            starts = self._starts()
            length = starts[node.end_lineno - 1] + node.end_col_offset - starts[first - 1] - node.col_offset
        return 2 * length >= levels

    def _starts(self) -> list:
        if self._line_starts is None:
            # Over-long only (a byte-order mark, indentation), which keeps more.
            self._line_starts = [0, *accumulate(map(len, self._source.splitlines(keepends=True)))]
        return self._line_starts


def _expression_children(node: ast.AST) -> list:
    return [child for child in child_nodes(node) if not isinstance(child, ast.stmt)]
