"""The standard parser's nodes as the screens read them: the fields that hold
nodes (not names, numbers, or the `Load`/`Add` markers), and a walk in
``ast.walk``'s order over them."""

from __future__ import annotations

import ast
from functools import lru_cache


def child_nodes(node: ast.AST) -> list:
    """The nodes right under ``node``, as ``ast.iter_child_nodes`` gives them,
    without the context and operator markers."""
    found = []
    for name in node_fields(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def breadth_first(root: ast.AST) -> list:
    """``root`` and every node under it in the order of ``ast.walk``, without
    the context and operator markers (`Load`, `Add`), in a fraction of its time."""
    nodes = [root]
    for node in nodes:  # the list grows as it is read
        nodes.extend(child_nodes(node))
    return nodes


@lru_cache(maxsize=None)
def node_fields(kind: type) -> tuple:
    """The fields of a node type that hold nodes or lists of nodes: not names,
    numbers and flags, and not the context and operator markers (`Load`,
    `Add`), which nothing looks at."""
    leaves = _LEAF_FIELDS | _LEAF_FIELDS_OF.get(kind, frozenset())
    return tuple(name for name in kind._fields if name not in leaves)


# Fields whose values are strings, numbers, flags, or operator markers.
_LEAF_FIELDS = frozenset(
    {
        "ctx", "op", "ops", "id", "attr", "name", "arg", "asname", "module", "level", "kind",
        "type_comment", "is_async", "conversion", "simple", "tag", "rest", "kwd_attrs",
    }
)


# Fields that hold plain values in some node types only: `global` names, and
# the constant of `case None:` / `case True:`.
_LEAF_FIELDS_OF = {ast.Global: frozenset({"names"}), ast.Nonlocal: frozenset({"names"})}
if hasattr(ast, "MatchSingleton"):  # Python 3.10+
    _LEAF_FIELDS_OF[ast.MatchSingleton] = frozenset({"value"})


def called_name(func: ast.AST) -> str:
    """The name a call is made by: `fit` for `trainer.fit(...)`, `FSDP` for `FSDP(model)`."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def dotted(node: ast.AST) -> str:
    """`torch.onnx.export` for that chain of names, as written."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))
