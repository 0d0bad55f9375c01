"""What a class's methods share through `self`: the attributes one device arm sets and another method reads.

A class whose `__exit__` measures memory in a CUDA arm and whose
`print_stats` prints what it measured is one device choice spread over two
methods. When the measuring arm gets no HPU twin (its calls have no Gaudi
equivalent), an HPU arm added to the printing method would send Gaudi to
read attributes nothing set there.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from hpu_port.walk import descendants


def attributes_set(node: cst.CSTNode) -> set[str]:
    """Names of `self.<name>` that ``node`` assigns (plainly, augmented or annotated)."""
    found = set()
    for child in descendants(node):
        if isinstance(child, cst.AssignTarget):
            found.update(_self_attributes(child.target))
        elif isinstance(child, (cst.AugAssign, cst.AnnAssign)):
            found.update(_self_attributes(child.target))
    return found


def attributes_read(node: cst.CSTNode) -> set[str]:
    """Names of `self.<name>` that ``node`` mentions anywhere (f-strings too)."""
    return {child.attr.value for child in descendants(node) if _is_self_attribute(child)}


def unset_on_gaudi(arm: cst.If, fallback: Optional[cst.CSTNode], elsewhere: set[str]) -> set[str]:
    """The attributes that only ``arm`` (a CUDA arm left without an HPU twin)
    sets: not in the chain's ``fallback`` (its `else`, which Gaudi takes),
    nor ``elsewhere`` in the class."""
    unset = attributes_set(arm.body) - elsewhere
    return unset - attributes_set(fallback) if fallback is not None else unset


def set_outside(tree: ast.AST, name: str, lines: tuple[int, int], chain: tuple[int, int]) -> set[str]:
    """The `self` attributes the class ``name`` whose `class` line lies in
    ``lines`` assigns outside the ``chain``'s lines. Read from the standard
    parser's tree of the whole file: `check` gives libcst only the methods
    rules act on, and `__init__` is rarely one of them."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name and lines[0] <= node.lineno <= lines[1]:
            for child in ast.walk(node):
                for target in _assigned(child):
                    if not chain[0] <= target.lineno <= chain[1]:
                        found.update(_self_attribute_names(target))
            break
    return found


def _assigned(node: ast.AST) -> list:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def _self_attribute_names(target: ast.AST) -> set[str]:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return {target.attr}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for element in target.elts for name in _self_attribute_names(element)}
    return set()


def _self_attributes(target: cst.BaseExpression) -> set[str]:
    if _is_self_attribute(target):
        return {target.attr.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _self_attributes(element.value)}
    return set()


def _is_self_attribute(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
