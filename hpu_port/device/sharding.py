"""Which Python files of the project shard a model with FSDP: their own code
wraps one (`FullyShardedDataParallel(model)`, `FSDP(model)` after `import ...
as FSDP`, `fully_shard(block)`), or a module of the project they import does.

A launch line that runs such a script must not set lazy mode: Gaudi runs FSDP
in eager mode only.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterable, Optional

from hpu_port.ast_nodes import called_name
from hpu_port.device.judging import imported_names

SHARDING_NAMES = frozenset({"FullyShardedDataParallel", "fully_shard"})
_NEEDLES = tuple(sorted(name.encode() for name in SHARDING_NAMES))


def sharding_files(sources: dict, module_name: Callable[[str], str], holding: Callable) -> tuple:
    """The absolute paths, sorted, of the files that shard or import a module
    of the project that does (one step: what those modules import is theirs)."""
    # A call of the class or of an alias of it, in the bytes, before a parse confirms it.
    calling = {path: source for path, source in sources.items() if isinstance(source, bytes) and _may_call(source)}
    shards = {path for path, tree in holding(calling, _NEEDLES) if _wraps_a_model(tree)}
    if not shards:
        return ()
    names = sorted({re.escape(os.path.splitext(os.path.basename(path))[0]) for path in shards})
    # The import statements naming one, read alone: no whole file is parsed.
    importing = re.compile(rb"^[ \t]*((?:from|import)[ \t][^\n]*\b(?:" + "|".join(names).encode() + rb")\b[^\n]*)", re.M)
    top = os.path.commonpath([os.path.dirname(path) for path in sources])
    found = set(shards)
    # Modules of the project's packages by the name they are imported by,
    # wherever they lie (a `src/` layout is not above the scripts using it).
    packaged = {module_name(path): path for path in sources if "." in module_name(path)}
    words = tuple(sorted({os.path.splitext(os.path.basename(path))[0].encode() for path in shards}))
    for path, source in sources.items():
        if not isinstance(source, bytes) or not any(word in source for word in words):
            continue
        statements = [_statement(source, match) for match in importing.finditer(source)]
        if not statements:
            continue
        module = module_name(path)
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        imported = [name for tree in statements if tree is not None for name in _imported(tree, package)]
        candidates = [*_files_named(imported, path, top), *(packaged[name] for name in imported if name in packaged)]
        if any(candidate in shards for candidate in candidates):
            found.add(path)
    return tuple(sorted(found))


def _statement(source: bytes, match: re.Match) -> Optional[ast.Module]:
    """The import statement that starts at ``match``, parsed alone (through
    its closing parenthesis, or its continuation lines)."""
    end = match.end(1)
    text = match.group(1)
    while text.rstrip().endswith(b"\\") or (b"(" in text and b")" not in text):
        following = source.find(b"\n", end + 1)
        if following < 0:
            following = len(source)
        text += source[end:following]
        if following == end or following >= len(source):
            break
        end = following
    try:
        return ast.parse(text.replace(b"\\\n", b" "))
    except (SyntaxError, ValueError):
        return None


def _files_named(modules: Iterable[str], importer: str, top: str) -> Iterable[str]:
    """The paths a module name may stand for: the module's file or package
    under the importing file's folder or a folder above it, up to ``top``,
    or under ``top``'s `src` folder (folders without an `__init__.py` are
    imported by dotted name too)."""
    folders = []
    folder = os.path.dirname(importer)
    while True:
        folders.append(folder)
        if folder == top or os.path.dirname(folder) == folder or not folder.startswith(top):
            break
        folder = os.path.dirname(folder)
    # A `src/` layout's packages, namespace packages too (no `__init__.py`).
    folders.append(os.path.join(top, "src"))
    for name in set(modules):
        relative = os.path.join(*name.split("."))
        for folder in folders:
            yield os.path.join(folder, relative + ".py")
            yield os.path.join(folder, relative, "__init__.py")


_CALL = re.compile(rb"\b(?:FullyShardedDataParallel|fully_shard)[ \t]*\(")
_ALIAS = re.compile(rb"\b(?:FullyShardedDataParallel|fully_shard)[ \t]+as[ \t]+(\w+)")


def _may_call(source: bytes) -> bool:
    if not any(needle in source for needle in _NEEDLES):
        return False
    if _CALL.search(source):
        return True
    return any(re.search(rb"\b" + re.escape(alias) + rb"[ \t]*\(", source) for alias in set(_ALIAS.findall(source)))


def _wraps_a_model(tree: ast.Module) -> bool:
    names = set(SHARDING_NAMES)
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {alias.asname for alias in node.names if alias.name in SHARDING_NAMES and alias.asname}
        elif isinstance(node, ast.Call):
            called.add(called_name(node.func))
    return not names.isdisjoint(called)


def _imported(tree: ast.Module, package: str) -> Iterable[str]:
    """Every module the file imports, anywhere in it."""
    return imported_names(ast.walk(tree), package)
