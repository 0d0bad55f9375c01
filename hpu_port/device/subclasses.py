"""The project's own classes built on a library's class, across its modules.

Moving a file to the Gaudi trainer gives each trainer call a Gaudi
configuration; a trainer subclass the project defines in another module
(`from trainer_qa import QuestionAnsweringTrainer`) is a trainer too, and its
calls need the same. A subclass is found by what its bases name through the
module's own imports, directly or through another class of the project.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterable, Optional

from hpu_port.device.judging import absolute


def project_subclasses(sources: dict, holding: Callable, module_name: Callable[[str], str], bases: frozenset) -> tuple[tuple, tuple]:
    """The project's subclasses of ``bases`` (see ``subclasses_of``), and the
    scripts that parse one of them (see ``parsing_scripts``), from ``sources``
    (path -> bytes); ``holding(sources, needles)`` gives the parsed trees of
    the files that hold a needle."""
    if not bases:
        return (), ()
    # Only files with a class statement that names a base (or a subclass
    # found so far) among its bases are parsed: a library's own big modules
    # mention its trainer everywhere, and define few classes on it.
    names = {base.rsplit(".", 1)[-1] for base in bases}
    candidates: dict = {}
    found: tuple = ()
    while True:
        words = sorted(name.encode() for name in names)
        # `Trainer` is in `Seq2SeqTrainer`: the shortest words screen the bytes.
        screen = [word for word in words if not any(other != word and other in word for other in words)]
        header = re.compile(rb"\bclass\s+\w+\s*\([^)]*\b(?:" + b"|".join(words) + rb")\b")
        new = {
            path: source
            for path, source in sources.items()
            if path not in candidates and isinstance(source, bytes) and any(w in source for w in screen) and header.search(source)
        }
        if not new:
            break
        candidates.update(new)
        found = subclasses_of(holding(candidates, (b"class",)), module_name, bases)
        grown = {name.rsplit(".", 1)[-1] for name, _, _ in found} - names
        if not grown:
            break
        names |= grown
    parsed = bases | {name for name, _, _ in found}
    words = tuple(sorted({name.rsplit(".", 1)[-1].encode() for name in parsed}))
    scripts = {path: source for path, source in sources.items() if isinstance(source, bytes) and b"ArgumentParser" in source and any(w in source for w in words)}
    return found, parsing_scripts(holding(scripts, (b"ArgumentParser",)), module_name, parsed)


def subclasses_of(trees: Iterable[tuple[str, ast.Module]], module_name: Callable[[str], str], bases: frozenset) -> tuple:
    """(qualified class, whether it passes keywords on to its base's
    ``__init__``, the one of ``bases`` it is built on) for the module-level
    classes of ``trees`` (path, tree) built on one of ``bases`` (qualified
    names)."""
    classes = []
    for path, tree in trees:
        module = module_name(path)
        names = imported_names(tree, _package(path, module))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                based_on = [name for name in (qualified_name(base, names, module) for base in node.bases) if name]
                classes.append((f"{module}.{node.name}", based_on, _passes_keywords(node)))
    found: dict[str, tuple[bool, str]] = {}
    grown = True
    while grown:
        grown = False
        for qualified, based_on, passes in classes:
            if qualified in found:
                continue
            parent = next((name for name in based_on if name in bases or name in found), None)
            if parent is not None:
                inherited, library = found.get(parent, (True, parent))
                found[qualified] = (passes and inherited, library)
                grown = True
    return tuple(sorted((name, passes, library) for name, (passes, library) in found.items()))


def parsing_scripts(trees: Iterable[tuple[str, ast.Module]], module_name: Callable[[str], str], classes: frozenset) -> tuple:
    """The paths of ``trees`` that hand one of ``classes`` (qualified names)
    to an argument parser (`HfArgumentParser((ModelArguments,
    TrainingArguments))`): scripts whose command line fills them."""
    found = []
    for path, tree in trees:
        module = module_name(path)
        names = imported_names(tree, _package(path, module))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called(node.func).endswith("ArgumentParser") and _hands_one_of(node, names, module, classes):
                found.append(path)
                break
    return tuple(sorted(found))


def _hands_one_of(call: ast.Call, names: dict, module: str, classes: frozenset) -> bool:
    for arg in call.args:
        items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
        if any(qualified_name(item, names, module) in classes for item in items):
            return True
    return False


def _called(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _package(path: str, module: str) -> str:
    return module if path.endswith("__init__.py") else module.rpartition(".")[0]


def imported_names(tree: ast.Module, package: str) -> dict[str, str]:
    """Local name -> the qualified name it is bound to by the module's top-level imports."""
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node, package)
            if base:
                names.update({alias.asname or alias.name: f"{base}.{alias.name}" for alias in node.names if alias.name != "*"})
    return names


def qualified_name(base: ast.expr, names: dict, module: str) -> Optional[str]:
    """What ``base`` names, through the module's imports (``names``), else
    as a name of ``module`` itself; None for other expressions."""
    parts = []
    while isinstance(base, ast.Attribute):
        parts.insert(0, base.attr)
        base = base.value
    if not isinstance(base, ast.Name):
        return None
    root = names.get(base.id, f"{module}.{base.id}")
    return ".".join([root, *parts])


def _passes_keywords(node: ast.ClassDef) -> bool:
    """Whether a class keeps its base's ``__init__`` or takes ``**kwargs`` in its own."""
    init = next((item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
    return init is None or init.args.kwarg is not None
