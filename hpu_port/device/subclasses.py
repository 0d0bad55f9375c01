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


def project_subclasses(
    sources: dict, holding: Callable, module_name: Callable[[str], str], bases: frozenset, argument_fields: Optional[dict] = None,
) -> tuple[tuple, tuple, tuple]:
    """The project's subclasses of ``bases`` (see ``subclasses_of``), the
    scripts that parse one of them (see ``parsing_scripts``) and why some
    parser would refuse one beside another class (see ``ProjectClasses.clashes``),
    from ``sources`` (path -> bytes); ``holding(sources, needles)`` gives the
    parsed trees of the files that hold a needle."""
    if not bases:
        return (), (), ()
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
    scripts = {path: source for path, source in sources.items() if isinstance(source, bytes) and b"Parser" in source and any(w in source for w in words)}
    classes = ProjectClasses(sources, holding, module_name)
    script_trees = list(holding(scripts, (b"Parser",)))
    library_of = {**{base: base for base in bases}, **{name: library for name, _, library in found}}
    clashes = classes.clashes(script_trees, library_of, argument_fields) if argument_fields and argument_fields.get("") else ()
    return found, parsing_scripts(script_trees, module_name, parsed, classes.resolve), clashes


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


def parsing_scripts(
    trees: Iterable[tuple[str, ast.Module]], module_name: Callable[[str], str], classes: frozenset, resolve: Callable = lambda name: name,
) -> tuple:
    """The paths of ``trees`` that hand one of ``classes`` (qualified names)
    to an argument parser (`HfArgumentParser((ModelArguments,
    TrainingArguments))`): scripts whose command line fills them.
    ``resolve`` follows a name the package re-exports to its definition."""
    found = []
    for path, tree in trees:
        module = module_name(path)
        names = imported_names(tree, _package(path, module))
        for call in _parser_calls(tree):
            if any(resolve(name) in classes for name in _handed(call, names, module)):
                found.append(path)
                break
    return tuple(sorted(found))


def _parser_calls(tree: ast.Module) -> Iterable[ast.Call]:
    # transformers' HfArgumentParser, argparse's, TRL's TrlParser built on the first.
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node.func).endswith(("ArgumentParser", "TrlParser")):
            yield node


def _handed(call: ast.Call, names: dict, module: str) -> list:
    """The qualified names of the classes a parser call is given (a tuple or list of them, or one)."""
    handed = []
    for arg in call.args[:1]:
        items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
        handed += [name for name in (qualified_name(item, names, module) for item in items) if name]
    return handed


class ProjectClasses:
    """The module-level classes of the project, found by qualified name
    through the re-exports of its packages (`from .configs import
    ModelArguments` in `alignment/__init__.py`), with their fields."""

    def __init__(self, sources: dict, holding: Callable, module_name: Callable[[str], str]) -> None:
        self.paths = {module_name(path): path for path, source in sources.items() if isinstance(source, bytes)}
        self.sources = sources
        self.holding = holding
        self.module_name = module_name
        self._modules: dict = {}

    def _module(self, module: str) -> Optional[tuple[ast.Module, dict]]:
        """The tree of a module of the project and the names its imports bind."""
        if module not in self._modules:
            path = self.paths.get(module)
            trees = list(self.holding({path: self.sources[path]}, (b"",))) if path else []
            self._modules[module] = (trees[0][1], imported_names(trees[0][1], _package(path, module))) if trees else None
        return self._modules[module]

    def _definition(self, qualified: str, depth: int = 0) -> Optional[tuple[str, ast.ClassDef]]:
        """(module, class statement) that ``qualified`` names, through re-exports."""
        module, _, name = qualified.rpartition(".")
        found = self._module(module) if module else None
        if found is None or depth > 5:
            return None
        tree, names = found
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return module, node
        target = names.get(name)
        return self._definition(target, depth + 1) if target and target != qualified else None

    def resolve(self, qualified: str) -> str:
        """Where a class of the project is defined (`alignment.ModelArguments`
        -> `alignment.configs.ModelArguments`); other names as they are."""
        found = self._definition(qualified)
        return f"{found[0]}.{found[1].name}" if found else qualified

    def fields(self, qualified: str, library: dict, depth: int = 0) -> frozenset:
        """The annotated fields of a class of the project and of its bases;
        for a library's class, the ones ``library`` gives it."""
        if qualified in library or depth > 10:
            return library.get(qualified, frozenset())
        found = self._definition(qualified)
        if found is None:
            return frozenset()
        module, node = found
        own = {item.target.id for item in node.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
        names = self._module(module)[1]
        inherited = set()
        for base in node.bases:
            name = qualified_name(base, names, module)
            if name:
                inherited |= self.fields(name, library, depth + 1)
        return frozenset(own) | frozenset(inherited)

    def clashes(self, trees: list, library_of: dict, argument_fields: dict) -> tuple:
        """(library class, path, line, why) for each parser call of ``trees`` that would
        refuse a moved class beside another: it is given one of ``library_of``
        (a library's class, or a project class -> the library class it is
        built on) and a class with a field the moved ones add
        (``argument_fields[""]``; a library class's fields come from the other
        entries)."""
        added, library = argument_fields[""], argument_fields
        found = []
        for path, tree in trees:
            module = self.module_name(path)
            names = imported_names(tree, _package(path, module))
            for call in _parser_calls(tree):
                handed = [self.resolve(name) for name in _handed(call, names, module)]
                moved = [library_of[name] for name in handed if name in library_of]
                for other in handed:
                    common = sorted(self.fields(other, library) & added) if moved and other not in library_of else []
                    if common:
                        why = f"`{other.rsplit('.', 1)[-1]}` defines --{common[0]}, which the Gaudi arguments add too"
                        found += [(library, path, call.lineno, why) for library in moved]
        return tuple(sorted(set(found)))


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
