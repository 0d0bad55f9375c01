"""Module-level functions and classes that only code held for CUDA uses (for
the ``other-backend`` kind).

`StaticBufferLoader` fills the input buffers of a CUDA-graph wrapper that is
held for CUDA's internals; `_fused_adan_multi_tensor` runs only in a branch
kept for a CUDA kernel. Ported alone, such a helper hands HPU tensors and
streams to the CUDA code that is its only user, so it is held with it.

Uses are counted in the file's text (the source as read, which `check` does
not stub): a name mentioned anywhere else (another function, `__all__`, a
comment) may be used on Gaudi, and its definition is ported as usual. A
definition is judged when the walk reaches it, against the units held by
then, so the helpers of helpers are held too (`copy_tensors_in_struct`, used
only by `StaticBufferLoader`).
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from hpu_port.branches import OtherBackendCode
from hpu_port.walk import contains


class HelpersOfHeldCode:
    """The definition watcher: holds a module-level definition whose every
    use lies inside a held unit."""

    def __init__(self, module: cst.Module, source: bytes, other_backend: OtherBackendCode) -> None:
        self.module = module
        self.source = source
        self.other_backend = other_backend
        self.definitions = [s for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        self._top_level = set(self.definitions)
        self._judged_with = -1
        self._helpers: dict[cst.CSTNode, str] = {}

    def __call__(self, node: cst.CSTNode) -> None:
        if node not in self._top_level or node in self.other_backend.units:
            return
        units = self.other_backend.units
        if len(units) != self._judged_with:
            self._judged_with = len(units)
            self._helpers = self._find_helpers()
        user = self._helpers.get(node)
        if user is not None:
            self.other_backend.mark(
                node, f"only {user}, which is not ported, uses it: ported alone, it would hand the HPU's values to that CUDA code"
            )

    def _find_helpers(self) -> dict[cst.CSTNode, str]:
        """Each definition used only inside held units (or other such
        definitions), with the name of one of those users."""
        held = [unit for unit in self.other_backend.units if unit is not self.module]
        if not held:
            return {}
        helpers: dict[cst.CSTNode, str] = {}
        changed = True
        while changed:
            changed = False
            users = _outermost([*held, *helpers])
            for node in self.definitions:
                if node in helpers or node in self.other_backend.units:
                    continue
                user = self._only_user(node, users)
                if user is not None:
                    helpers[node] = user
                    changed = True
        return helpers

    def _only_user(self, node, users: list) -> Optional[str]:
        name = node.name.value
        pattern = re.compile(rb"(?<![\w.])" + re.escape(name.encode()) + rb"\b")
        elsewhere = len(pattern.findall(self.source)) - _count(pattern, self.module.code_for_node(node))
        if elsewhere <= 0:
            return None
        inside = [(user, _count(pattern, self.module.code_for_node(user))) for user in users if user is not node]
        if sum(count for _, count in inside) != elsewhere:
            return None
        return next(self._unit_name(user) for user, count in inside if count)

    def _unit_name(self, unit: cst.CSTNode) -> str:
        if unit in self.other_backend.names:
            return self.other_backend.names[unit][0]
        name = getattr(unit, "name", None)
        return f"`{name.value}`" if isinstance(name, cst.Name) else "code kept for CUDA"


def _count(pattern: re.Pattern, code: str) -> int:
    return len(pattern.findall(code.encode()))


def _outermost(units: list) -> list:
    return [unit for unit in units if not any(other is not unit and contains(other, unit) for other in units)]
