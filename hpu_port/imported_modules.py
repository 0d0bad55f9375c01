"""The project modules a few files import or sit beside, for the project facts of a short run.

A pre-commit hook ports only the files a commit changed. Whether their CUDA
checks guard NVIDIA-only code can depend on modules they import from the
same project (a test that builds a model whose layers call CUDA kernels):
those modules are read for the facts (not ported), following the imports
from module to module, and so are the other modules of the package a file
belongs to (one of them may probe another accelerator: then the package
serves several devices), so that the hook decides as a run on the whole
tree does. A name is looked up under the project's root and its `src/` folder;
what is not found there is another distribution's, and stays unknown.
"""

from __future__ import annotations

import ast
import os
from typing import Iterable, Iterator, Optional

# Enough for the modules a test or a script reaches; a hook on a handful of
# files never reads a whole large project.
MAX_FILES = 400


def imported_project_files(sources: dict, root: str, limit: int = MAX_FILES) -> dict:
    """path -> bytes of the Python files under ``root`` that the files of
    ``sources`` (path -> bytes) import, directly or through one another,
    with the `__init__.py` of each package on the way, and the other modules
    of the outermost package that holds each of them (whether a package
    serves several devices is a fact of all its modules); ``sources`` not included."""
    seen = {os.path.abspath(path) for path in sources}
    queue = list(sources.items())
    found: dict = {}
    for path in sorted(sources):
        for member in _package_members(path, root):
            if member not in seen and len(found) < limit:
                seen.add(member)
                data = _read(member)
                if data is not None:
                    found[member] = data
    while queue and len(found) < limit:
        path, source = queue.pop()
        for module in _imported(path, source):
            for candidate in _files_of(module, root):
                if candidate in seen or len(found) >= limit:
                    continue
                seen.add(candidate)
                data = _read(candidate)
                if data is not None:
                    found[candidate] = data
                    queue.append((candidate, data))
    return found


def _package_members(path: str, root: str) -> list:
    """The Python files of the outermost package (under ``root``) that holds
    ``path``, its own `__init__.py` files first; [] for a file in no package."""
    directory = os.path.dirname(os.path.abspath(path))
    top = None
    while os.path.isfile(os.path.join(directory, "__init__.py")) and directory.startswith(root):
        top, directory = directory, os.path.dirname(directory)
    if top is None:
        return []
    ancestors, directory = [], os.path.dirname(os.path.abspath(path))
    while directory.startswith(top):
        ancestors.append(os.path.join(directory, "__init__.py"))
        directory = os.path.dirname(directory)
    members = []
    for folder, folders, files in os.walk(top):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__pycache__")
        members += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".py")]
    return ancestors + [m for m in members if m not in ancestors]


def _imported(path: str, source: bytes) -> Iterator[str]:
    """The dotted names a module imports, relative imports made absolute
    from its own place (`from .ops import x` in `pkg/models/a.py`: `pkg.models.ops`,
    and `pkg.models.ops.x`, which may be a module too)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node.module, node.level)
            if base is None:
                continue
            if base:
                yield base
            yield from (f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")


def _absolute(path: str, module: Optional[str], level: int) -> Optional[str]:
    if level == 0:
        return module or ""
    directory = os.path.dirname(os.path.abspath(path))
    parts = []
    for _ in range(level - 1):
        directory = os.path.dirname(directory)
    # The package a relative import starts from, named by the folders that hold an `__init__.py`.
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parts.insert(0, os.path.basename(directory))
        directory = os.path.dirname(directory)
    if not parts:
        return None
    return ".".join([*parts, *([module] if module else [])])


def _files_of(module: str, root: str) -> Iterable[str]:
    """The files that define ``module`` under ``root`` (or its `src/`), with
    the `__init__.py` of each package above it."""
    parts = module.split(".")
    for base in (root, os.path.join(root, "src")):
        found = []
        for depth in range(1, len(parts) + 1):
            init = os.path.join(base, *parts[:depth], "__init__.py")
            if os.path.isfile(init):
                found.append(init)
        plain = os.path.join(base, *parts) + ".py"
        if os.path.isfile(plain):
            found.append(plain)
        if found:
            return [os.path.abspath(f) for f in found]
    return []


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError:
        return None
