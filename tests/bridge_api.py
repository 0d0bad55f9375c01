"""The public Python API of Intel's Gaudi PyTorch bridge, as data.

``rules/gaudi_bridge_api.csv`` lists every public name of the bridge's
Python packages (`habana_frameworks.*`): module, name, kind and, for
functions and classes, the parameters they take. Tests check that every
Gaudi name and keyword a rule can write is in it. The table is made from a
checkout of the bridge's source (HabanaAI/gaudi-pytorch-bridge on GitHub):

    python -m tests.bridge_api <checkout>/python_packages > rules/gaudi_bridge_api.csv

Only the source is read (with `ast`); nothing of it is imported or run.
"""

from __future__ import annotations

import ast
import csv
import sys
from pathlib import Path

FIELDS = ["module", "name", "kind", "parameters"]
# Gaudi packages that ship beside the bridge, not in its source: Intel's media
# loader (`habana_frameworks.mediapipe`, the habana-media-loader package).
OTHER_PACKAGES = [
    {"module": "habana_frameworks.mediapipe", "name": "", "kind": "module", "parameters": ""},
    {"module": "habana_frameworks.mediapipe.mediapipe", "name": "", "kind": "module", "parameters": ""},
    {"module": "habana_frameworks.mediapipe.mediapipe", "name": "MediaPipe", "kind": "class", "parameters": "device prefetch_depth batch_size num_threads pipe_name"},
]
# `torch.hpu` is the bridge's `habana_frameworks.torch.hpu`, put on torch when the bridge loads.
ALIASES = {"torch.hpu": "habana_frameworks.torch.hpu", "htcore": "habana_frameworks.torch.core"}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _parameters(node) -> str:
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"), None)
        if init is None:
            return ""
        node = init
    arguments = node.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    if arguments.vararg:
        names.append("*" + arguments.vararg.arg)
    if arguments.kwarg:
        names.append("**" + arguments.kwarg.arg)
    return " ".join(names)


def _apply_parameters(node):
    """What `Name.apply(...)` takes, for an autograd Function: its `forward`'s parameters after `ctx`."""
    if not isinstance(node, ast.ClassDef):
        return None
    forward = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None or not forward.args.args or forward.args.args[0].arg != "ctx":
        return None
    return " ".join(a.arg for a in forward.args.args[1:] + forward.args.kwonlyargs)


def _top_level(body: list):
    """The statements a module runs when imported, also those under a
    top-level `if` or `try` (`if is_lazy(): from .graphs import *`)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody)
        else:
            yield node


def _resolve(module: str, level: int, target) -> str:
    if not level:
        return target or ""
    base = module.split(".")
    base = base[: len(base) - level + 1] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def read(root: Path) -> list[dict]:
    defined: dict[str, dict[str, dict]] = {}
    imports: dict[str, list] = {}
    for path in sorted(root.rglob("*.py")):
        module = module_name(root, path)
        is_package = path.name == "__init__.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        names = defined.setdefault(module, {})
        own = module
        for node in _top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                names[node.name] = {"kind": kind, "parameters": _parameters(node)}
                apply = _apply_parameters(node)
                if apply is not None:  # an autograd Function: called as `Name.apply(...)`
                    names[node.name + ".apply"] = {"kind": "method", "parameters": apply}
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names.setdefault(target.id, {"kind": "value", "parameters": ""})
            elif isinstance(node, ast.ImportFrom):
                package = own if is_package else own.rpartition(".")[0]
                source = _resolve(package, node.level, node.module) if node.level else (node.module or "")
                imports.setdefault(module, []).append((source, [(a.name, a.asname or a.name) for a in node.names]))
    # Names a module takes from another (`from .memory import *`, `from .x import y`), until nothing changes.
    changed = True
    while changed:
        changed = False
        for module, entries in imports.items():
            names = defined[module]
            for source, aliases in entries:
                exported = defined.get(source, {})
                for name, alias in aliases:
                    if name == "*":
                        for exported_name, info in list(exported.items()):
                            if not exported_name.startswith("_") and exported_name not in names:
                                names[exported_name] = info
                                changed = True
                    elif alias not in names and name in exported:
                        names[alias] = exported[name]
                        for member in [m for m in exported if m.startswith(name + ".")]:  # `Name.apply`
                            names[alias + member[len(name):]] = exported[member]
                        changed = True
    for module in list(defined):  # the packages above every module (`habana_frameworks`)
        parts = module.split(".")
        for cut in range(1, len(parts)):
            defined.setdefault(".".join(parts[:cut]), {})
    rows = []
    for module in sorted(defined):
        if not module.startswith("habana_frameworks"):
            continue
        rows.append({"module": module, "name": "", "kind": "module", "parameters": ""})
        for name in sorted(defined[module]):
            if not name.startswith("_"):
                info = defined[module][name]
                rows.append({"module": module, "name": name, "kind": info["kind"], "parameters": info["parameters"]})
    return rows


def main(argv: list[str]) -> int:
    writer = csv.DictWriter(sys.stdout, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(read(Path(argv[0])) + OTHER_PACKAGES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
