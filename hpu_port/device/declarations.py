"""What a project declares about its devices: its device enums and its own
HPU probes.

A project that serves several devices often names them in an enum
(`class DeviceType(Enum): CUDA = "cuda"; NPU = "npu"`) and keys its tables
by its members (`{DeviceType.CUDA: "nccl", DeviceType.NPU: "hccl"}`). The
HPU entry such a table gains is `DeviceType.HPU`, which only works when the
enum has that member; these facts say which members each enum has.

A project may also have its own test for Gaudi (`def is_hpu_available():`),
which an HPU arm added to its code should use: it is how the project already
decides, and, unlike a helper of another library, it cannot be missing from
the version the user has installed.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from hpu_port.ast_nodes import breadth_first

# Needles for the files worth parsing (an enum's also holds `Enum`).
ENUM_NEEDLES = (b" CUDA =", b" cuda =", b" Cuda =")
PROBE_NEEDLES = (b"hpu_available", b"habana_available", b"gaudi_available")
# A function that tests whether Gaudi is there (`is_hpu_available`,
# `is_torch_hpu_available`, `is_habana_available`).
HPU_PROBE_NAME = re.compile(r"is_\w*(hpu|habana|gaudi)\w*_available$", re.IGNORECASE)


def device_enums(trees: Iterable[ast.Module]) -> tuple:
    """(enum name, its members) for each enum class of ``trees`` with a
    CUDA member; where two enums share a name, the members both have."""
    found: dict = {}
    for tree in trees:
        for node in breadth_first(tree):
            if isinstance(node, ast.ClassDef) and _is_enum(node):
                members = _members(node)
                if any(member.lower() == "cuda" for member in members):
                    found[node.name] = found[node.name] & members if node.name in found else members
    return tuple(sorted((name, tuple(sorted(members))) for name, members in found.items()))


def hpu_probes(trees: Iterable[tuple[str, ast.Module]]) -> tuple:
    """The qualified names of the module-level functions of ``trees`` (module
    name, tree) that test for Gaudi and take no argument."""
    found = []
    for module, tree in trees:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and HPU_PROBE_NAME.match(node.name) and _takes_no_argument(node.args):
                found.append(f"{module}.{node.name}" if module else node.name)
    return tuple(sorted(found))


def _is_enum(node: ast.ClassDef) -> bool:
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if isinstance(name, str) and name.endswith("Enum"):
            return True
    return False


def _members(node: ast.ClassDef) -> frozenset:
    names = set()
    for statement in node.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        names.update(target.id for target in targets if isinstance(target, ast.Name))
    return frozenset(names)


def _takes_no_argument(args: ast.arguments) -> bool:
    required = len(args.posonlyargs) + len(args.args) - len(args.defaults)
    return required == 0 and all(default is not None for default in args.kw_defaults)
