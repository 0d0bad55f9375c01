"""A fast pre/post-order walk of a libcst tree that feeds several visitors at once.

libcst's own ``visit`` rebuilds every node it passes (as transformers need),
which costs about as much as parsing, and ``visit_batched`` inspects each
visitor on every call. Rules only read the tree, so this walk follows the
nodes' fields directly, skips whitespace and punctuation (no rule looks at
them), and dispatches through method tables computed once per visitor class.
Visitor methods are libcst's: ``visit_<Node>(node)`` before the children and
``leave_<Node>(node)`` after them.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Callable, Iterator, Sequence

import libcst as cst

# Fields holding only layout: whitespace, parentheses, commas, operators' spacing.
_LAYOUT_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "trailing_whitespace",
        "newline",
        "equal",
        "colon",
        "dot",
        "star",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "operator",
        "whitespace_before",
        "whitespace_after",
    }
)


@lru_cache(maxsize=None)
def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(
        f.name
        for f in dataclasses.fields(node_type)
        if f.name not in _LAYOUT_FIELDS and not f.name.startswith("whitespace")
    )


@lru_cache(maxsize=None)
def _methods_of(visitor_type: type) -> tuple[tuple[str, str], ...]:
    """(prefix, node type name) of each visit_/leave_ method a visitor class defines."""
    # Only the classes of hpu-port count: libcst's visitor bases define a
    # no-op method for every node type, and listing those costs a lot.
    names: set[str] = set()
    for klass in visitor_type.__mro__:
        if not klass.__module__.startswith("libcst") and klass is not object:
            names.update(vars(klass))
    found = []
    for name in sorted(names):
        for prefix in ("visit_", "leave_"):
            if name.startswith(prefix) and name[len(prefix):][:1].isupper() and "_" not in name[len(prefix):]:
                found.append((prefix, name[len(prefix):]))
    return tuple(found)


def _tables(visitors: Sequence[object]) -> tuple[dict, dict]:
    visits: dict[str, list[Callable]] = {}
    leaves: dict[str, list[Callable]] = {}
    for visitor in visitors:
        for prefix, node_name in _methods_of(type(visitor)):
            table = visits if prefix == "visit_" else leaves
            table.setdefault(node_name, []).append(getattr(visitor, prefix + node_name))
    return visits, leaves


def _is_node_type(value_type: type) -> bool:
    # CSTNode is an ABC: isinstance() on it goes through ABCMeta and costs
    # several times a dict lookup; the answer per type never changes.
    known = _NODE_TYPES.get(value_type)
    if known is None:
        known = _NODE_TYPES[value_type] = issubclass(value_type, cst.CSTNode)
    return known


_NODE_TYPES: dict[type, bool] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children that rules look at, in source order."""
    found = []
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            found.extend(item for item in value if _is_node_type(type(item)))
        elif _is_node_type(value_type):
            found.append(value)
    return found


def contains(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``node`` is ``tree`` or one of its descendants."""
    return any(current is node for current in descendants(tree))


def descendants(tree: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``tree`` and every node under it that rules look at."""
    stack = [tree]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def walk(root: cst.CSTNode, visitors: Sequence[object]) -> None:
    """Visit ``root`` and its descendants in source order, without recursion."""
    _walk(root, *_tables(visitors))


def walk_module(module: cst.Module, visitors: Sequence[object], on_statement: Callable) -> None:
    """Like ``walk``, calling ``on_statement`` with each top-level statement
    before its nodes are visited, and with None once the last one was."""
    visits, leaves = _tables(visitors)
    for method in visits.get("Module", ()):
        method(module)
    for statement in module.body:
        on_statement(statement)
        _walk(statement, visits, leaves)
    on_statement(None)
    for method in leaves.get("Module", ()):
        method(module)


def _walk(root: cst.CSTNode, visits: dict, leaves: dict) -> None:
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    pop, push = stack.pop, stack.append
    while stack:
        node, leaving = pop()
        name = type(node).__name__
        if leaving:
            for method in leaves[name]:
                method(node)
            continue
        for method in visits.get(name, ()):
            method(node)
        if name in leaves:
            push((node, True))
        for child in reversed(children(node)):
            push((child, False))
