"""The project's own classes built on a library's class, across its modules.

Moving a file to the Gaudi trainer gives each trainer call a Gaudi
configuration; a trainer subclass the project defines in another module
(`from trainer_qa import QuestionAnsweringTrainer`) is a trainer too, and its
calls need the same. A subclass is found by what its bases name through the
module's own imports, directly or through another class of the project.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterable, Optional

from hpu_port.ast_nodes import called_name
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
    if found:
        needles = tuple(sorted({name.rsplit(".", 1)[-1].encode() for name, _, _ in found}))
        clashes += classes.calls_where_nothing_moves(holding(sources, needles), library_of, bases)
    return found, parsing_scripts(script_trees, module_name, parsed, classes.resolve), tuple(sorted(set(clashes)))


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
    trees: Iterable[tuple[str, ast.Module]], module_name: Callable[[str], str], classes: frozenset,
    resolve: Callable = lambda name, near: name,
) -> tuple:
    """The paths of ``trees`` that hand one of ``classes`` (qualified names)
    to an argument parser (`HfArgumentParser((ModelArguments,
    TrainingArguments))`): scripts whose command line fills them.
    ``resolve(name, path)`` follows a name the package re-exports to its
    definition, as the file at ``path`` imports it."""
    found = []
    for path, tree in trees:
        module = module_name(path)
        names = imported_names(tree, _package(path, module))
        for call in _parser_calls(tree):
            if any(resolve(name, path) in classes for name in _handed(call, names, module)):
                found.append(path)
                break
    return tuple(sorted(found))


# How the name of an argument parser ends: transformers' HfArgumentParser,
# argparse's, TRL's TrlParser built on the first.
PARSER_NAMES = ("ArgumentParser", "TrlParser")


def _parser_calls(tree: ast.Module) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and called_name(node.func).endswith(PARSER_NAMES):
            yield node


def _handed(call: ast.Call, names: dict, module: str) -> list:
    """The qualified names of the classes a parser call is given."""
    return [name for name in (qualified_name(item, names, module) for item in _handed_expressions(call)) if name]


def _handed_expressions(call: ast.Call) -> list:
    """What a parser call is given as classes: a tuple or list of them, or
    one; first or as ``dataclass_types=``."""
    given = [*call.args[:1], *(keyword.value for keyword in call.keywords if keyword.arg == "dataclass_types")]
    return [item for arg in given for item in (arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg])]


def names_handed_to_parser(call: ast.Call) -> set:
    """The plain names of the classes ``call`` is given, if it makes an argument parser."""
    if not called_name(call.func).endswith(PARSER_NAMES):
        return set()
    return {item.id for item in _handed_expressions(call) if isinstance(item, ast.Name)}


class ProjectClasses:
    """The module-level classes of the project, found by qualified name
    through the re-exports of its packages (`from .configs import
    ModelArguments` or `from .configs import *` in `alignment/__init__.py`),
    with their fields. Two modules of one name (scripts' folders outside any
    package) are told apart by the folder of the file that imports them."""

    def __init__(self, sources: dict, holding: Callable, module_name: Callable[[str], str]) -> None:
        self.paths: dict = {}
        for path, source in sources.items():
            if isinstance(source, bytes):
                self.paths.setdefault(module_name(path), []).append(path)
        self.sources = sources
        self.holding = holding
        self.module_name = module_name
        self._modules: dict = {}

    def _path(self, module: str, near: str) -> Optional[str]:
        paths = self.paths.get(module, [])
        if len(paths) == 1:
            return paths[0]
        beside = [path for path in paths if os.path.dirname(path) == os.path.dirname(near)]
        return beside[0] if len(beside) == 1 else None  # several and none beside: not known

    def _module(self, module: str, near: str) -> Optional[tuple]:
        """(tree, the names its imports bind, the modules it star-imports, its path)."""
        path = self._path(module, near)
        if path is None:
            return None
        if path not in self._modules:
            trees = list(self.holding({path: self.sources[path]}, (b"",)))
            if not trees:
                self._modules[path] = None
            else:
                tree = trees[0][1]
                package = _package(path, module)
                stars = [absolute(node, package) for node in tree.body if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)]
                self._modules[path] = (tree, imported_names(tree, package), [star for star in stars if star], path)
        return self._modules[path]

    def _definition(self, qualified: str, near: str, depth: int = 0) -> Optional[tuple]:
        """(module, class statement, its path) that ``qualified`` names, through re-exports."""
        module, _, name = qualified.rpartition(".")
        found = self._module(module, near) if module and depth <= 5 else None
        if found is None:
            return None
        tree, names, stars, path = found
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return module, node, path
        targets = [names[name]] if name in names else [f"{star}.{name}" for star in stars]
        for target in targets:
            if target != qualified:
                definition = self._definition(target, path, depth + 1)
                if definition is not None:
                    return definition
        return None

    def resolve(self, qualified: str, near: str = "") -> str:
        """Where a class of the project is defined (`alignment.ModelArguments`
        -> `alignment.configs.ModelArguments`); other names as they are."""
        found = self._definition(qualified, near)
        return f"{found[0]}.{found[1].name}" if found else qualified

    def fields(self, qualified: str, library: dict, near: str, depth: int = 0) -> Optional[frozenset]:
        """The annotated fields of a class of the project and of its bases;
        for a library's class, the ones ``library`` gives it; None when not
        known (a class of another library, or of a module the run does not read)."""
        if qualified in library:
            return library[qualified]
        found = self._definition(qualified, near) if depth <= 10 else None
        if found is None:
            return None
        module, node, path = found
        fields = {item.target.id for item in node.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
        names = self._module(module, path)[1]
        for base in node.bases:
            name = qualified_name(base, names, module)
            if name in ("object", "builtins.object"):
                continue
            inherited = self.fields(name, library, path, depth + 1) if name else None
            if inherited is None:
                return None
            fields |= inherited
        return frozenset(fields)

    def calls_where_nothing_moves(self, trees: Iterable, library_of: dict, bases: frozenset) -> tuple:
        """(library class, path, line, why) for each call of a project class
        built on one of ``bases`` in a file that imports none of them: the
        move never looks at such a file (nothing in it names the library's
        classes), so the call would get no Gaudi configuration (a trainer)
        or no `use_habana` (arguments built in code) once the class moves."""
        found = []
        for path, tree in trees:
            module = self.module_name(path)
            names = imported_names(tree, _package(path, module))
            if any(name in bases or any(base.startswith(name + ".") for base in bases) for name in names.values()):
                continue  # the move reads this file: it imports one of the classes, or their module
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                called = qualified_name(node.func, names, module)
                resolved = self.resolve(called, path) if called else None
                if resolved in library_of and resolved not in bases:
                    shown = resolved.rsplit(".", 1)[-1]
                    why = f"`{shown}`, the project's class built on the library's, is called in a file that names none of the library's classes, which the move does not read"
                    found.append((library_of[resolved], path, node.lineno, why))
        return tuple(found)

    def clashes(self, trees: list, library_of: dict, argument_fields: dict) -> tuple:
        """(library class, path, line, why) for each parser call of ``trees``
        that would refuse a moved class beside another, or might: it is given
        one of ``library_of`` (a library's class, or a project class -> the
        library class it is built on) and a class with a field the moved ones
        add (``argument_fields[""]``; a library class's fields come from the
        other entries), or whose fields are not known."""
        added, library = argument_fields[""], argument_fields
        found = []
        for path, tree in trees:
            module = self.module_name(path)
            names = imported_names(tree, _package(path, module))
            for call in _parser_calls(tree):
                handed = [self.resolve(name, path) for name in _handed(call, names, module)]
                moved = [library_of[name] for name in handed if name in library_of]
                for other in (name for name in handed if moved and name not in library_of):
                    fields = self.fields(other, library, path)
                    shown = other.rsplit(".", 1)[-1]
                    if fields is None:
                        why = f"the argument parser might refuse the Gaudi arguments: the fields of `{shown}` are not known to this run (a module it does not read, or another library's class)"
                    elif fields & added:
                        why = f"the argument parser would refuse the Gaudi arguments: `{shown}` defines --{sorted(fields & added)[0]}, which the Gaudi arguments add too"
                    else:
                        continue
                    found += [(name, path, call.lineno, why) for name in moved]
        return tuple(sorted(set(found)))


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
