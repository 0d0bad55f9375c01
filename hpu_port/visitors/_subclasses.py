"""The classes a module defines on top of classes a rule knows by name
(`class Wrapper(DistributedDataParallel)`), so that the rule follows their
calls too. Only the module's own definitions are known: files are ported one
at a time."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from hpu_port.names import ScopeIndex, qualify
from hpu_port.visitors._definitions import classes


def local_subclasses(module: cst.Module, scopes: ScopeIndex, is_known: Callable[[str], bool]) -> set[tuple]:
    """The classes the module defines (at any depth) with a base whose
    qualified name ``is_known``, or with a base among these classes: each as
    (name, the node of the scope that binds it)."""
    defined: dict[tuple, list[str]] = {}  # (name, scope node) -> names of its other bases
    found: set[tuple] = set()
    for node in classes(module.body):
        own = scopes.scope_for(node)
        where = own.parent if own is not None and own.parent is not None else scopes.module
        key = (node.name.value, where.node)
        names = defined.setdefault(key, [])
        for base in node.bases:
            if base.keyword is not None:
                continue  # `metaclass=...`
            hit = qualify(base.value, where)
            if hit is not None and is_known(hit[0]):
                found.add(key)
            elif isinstance(base.value, cst.Name):
                names.append(base.value.value)
    # `class A(DDP)`, `class B(A)`: B is one too, in whatever order they come.
    grew = True
    while grew:
        found_names = {name for name, _ in found}
        grew = False
        for key, parents in defined.items():
            if key not in found and any(parent in found_names for parent in parents):
                found.add(key)
                grew = True
    return found

