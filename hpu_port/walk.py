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

import collections.abc
import dataclasses
import typing
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
    node_type = type(node)
    lister = _LISTERS.get(node_type)
    if lister is None:
        lister = _LISTERS[node_type] = _lister(node_type)
    return lister(node)


_LISTERS: dict[type, Callable] = {}


def _lister(node_type: type) -> Callable:
    """A function listing the children of nodes of ``node_type``, written out
    field by field from the type's annotations: a walk lists the children of
    about a million nodes in a large tree, most of them names whose only
    field is a string."""
    hints = {f.name: f.type for f in dataclasses.fields(node_type)}
    lines = ["def list_children(node):", "    found = []"]
    for name in _child_fields(node_type):
        shape = _field_shape(hints[name])
        if shape == "text":
            continue
        if shape == "node":
            lines.append(f"    found.append(node.{name})")
        elif shape == "optional":
            lines += [f"    value = node.{name}", "    if value is not None:", "        found.append(value)"]
        elif shape == "nodes":
            lines.append(f"    found.extend(node.{name})")
        else:
            lines += [f"    found.extend(_any_nodes(node.{name}))"]
    lines.append("    return found")
    namespace = {"_any_nodes": _any_nodes}
    exec("\n".join(lines), namespace)  # noqa: S102 - the text is built above from field names
    return namespace["list_children"]


def _field_shape(hint) -> str:
    """How a field holds nodes, from its annotation: ``text`` (never a node),
    ``node`` (always one), ``optional`` (one or None), ``nodes`` (a sequence
    of nodes), or ``any`` (anything else: tested value by value)."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint in (str, int, bool) or origin is typing.Literal:
        return "text"
    if isinstance(hint, type) and issubclass(hint, cst.CSTNode):
        return "node"
    if origin is typing.Union and len(arguments) == 2 and type(None) in arguments:
        other = next(a for a in arguments if a is not type(None))
        if isinstance(other, type) and issubclass(other, cst.CSTNode):
            return "optional"
    if origin in (collections.abc.Sequence, list, tuple) and len(arguments) == 1:
        item = arguments[0]
        if isinstance(item, type) and issubclass(item, cst.CSTNode):
            return "nodes"
    return "any"


def _any_nodes(value) -> list:
    value_type = type(value)
    if value_type is tuple or value_type is list:
        return [item for item in value if _is_node_type(type(item))]
    return [value] if _is_node_type(value_type) else []


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
    # The stack holds nodes to visit, and (node,) for nodes to leave once
    # their children were visited.
    stack: list = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    methods: dict = {}  # node type -> (its visit methods, its leave methods)
    while stack:
        node = pop()
        node_type = type(node)
        if node_type is tuple:
            node = node[0]
            for method in methods[type(node)][1]:
                method(node)
            continue
        found = methods.get(node_type)
        if found is None:
            name = node_type.__name__
            found = methods[node_type] = (visits.get(name, ()), leaves.get(name, ()))
        for method in found[0]:
            method(node)
        if found[1]:
            push((node,))
        extend(reversed(children(node)))
