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

from hpu_port.branches import chain_arms
from hpu_port.positions import positions_of
from hpu_port.visitors._references import whole_tree
from hpu_port.walk import descendants


class ClassChoices:
    """One class's device choices, as the walk finds them: the CUDA arms
    left without an HPU twin, and the HPU arms its methods would get."""

    def __init__(self, node: cst.ClassDef, depth: int) -> None:
        self.node = node
        self.depth = depth  # how many functions enclose the class: its methods are the next
        self.missing: list[tuple] = []  # (CUDA arm without an HPU twin, head of its chain)
        self.extensions: list[tuple] = []  # (method, node, message, fix)

    def unset_on_gaudi(self, ctx) -> set:
        """The attributes only the arms of ``missing`` set in the class."""
        if not self.missing or not self.extensions:
            return set()
        tree = whole_tree(ctx)
        if tree is None:
            return set()
        heads = [head if head is not None and arm in chain_arms(head) else arm for arm, head in self.missing]
        where = positions_of(ctx.module, [self.node, *heads])
        lines = (where[self.node].start.line, where[self.node].end.line)
        unset = set()
        for (arm, _), head in zip(self.missing, heads):
            chain = (where[head].start.line, where[head].end.line)
            arms = chain_arms(head)
            fallback = arms[-1].orelse if isinstance(arms[-1], cst.If) else None
            unset |= _unset_on_gaudi(arm, fallback, _set_outside(tree, self.node.name.value, lines, chain))
        return unset


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


def _unset_on_gaudi(arm: cst.If, fallback: Optional[cst.CSTNode], elsewhere: set[str]) -> set[str]:
    """The attributes that only ``arm`` (a CUDA arm left without an HPU twin)
    sets: not in the chain's ``fallback`` (its `else`, which Gaudi takes),
    nor ``elsewhere`` in the class."""
    unset = attributes_set(arm.body) - elsewhere
    return unset - attributes_set(fallback) if fallback is not None else unset


def _set_outside(tree: ast.AST, name: str, lines: tuple[int, int], chain: tuple[int, int]) -> set[str]:
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
