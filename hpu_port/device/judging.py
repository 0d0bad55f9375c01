"""Which definitions of the project only NVIDIA GPUs can run, judged module by module.

A function or method is NVIDIA-only when it builds or loads a CUDA extension
(with CUDA sources, or a builder named for CUDA), reads a name bound to one,
uses an NVIDIA-only library or CUDA's own internals, or calls, on every path,
a definition that is (across modules, transitively: ``hpu_port.project`` runs
the judging rounds). Those that build or call a CUDA extension are CUDA
kernel code. Read from the standard parser's trees.
"""

from __future__ import annotations

import ast
import collections
import os
import re
from functools import lru_cache
from typing import Iterable, Optional

from hpu_port.ast_nodes import breadth_first, child_nodes

# Calls that build or load a C++/CUDA extension; with CUDA sources, or when
# named for CUDA, what they build only runs on NVIDIA GPUs.
EXTENSION_BUILDERS = frozenset({
    "torch.utils.cpp_extension.load",
    "torch.utils.cpp_extension.load_inline",
    "torch.utils.cpp_extension.CUDAExtension",
})
CUDA_ONLY_BUILDERS = frozenset({"torch.utils.cpp_extension.CUDAExtension"})
_CUDA_SOURCE = re.compile(r"\.(cu|cuh)$")
_CUDA_KEYWORDS = frozenset({"cuda_sources", "with_cuda", "extra_cuda_cflags"})
INTERNALS = ("torch.cuda._", "torch._C._cuda")
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")


@lru_cache(maxsize=None)  # asked again for each name in each judging round
def is_library(qualified: str, libraries: frozenset) -> bool:
    """Whether ``qualified`` names one of ``libraries`` or something in it
    (`flash_attn*` also covers `flash_attn_interface`)."""
    for library in libraries:
        name = library.rstrip("*")
        if qualified == name or qualified.startswith(name + ".") or (library.endswith("*") and qualified.startswith(name)):
            return True
    return False


class ModuleJudge:
    """One module's definitions, and what each uses and calls, by qualified name."""

    def __init__(self, name: str, tree: ast.Module, is_package: bool, builders: set, source: bytes = b"", extensions: frozenset = frozenset()) -> None:
        self.name = name
        # The modules the project builds from CUDA sources (`_raymarching`).
        self.extensions = extensions
        self._lines = source.split(b"\n") if source else None
        self._words: dict[ast.AST, tuple] = {}
        self._heads: Optional[tuple] = None
        # The project's functions that build extensions from the sources they are given.
        self.builders = builders
        self.imports = _imports(tree, name if is_package else name.rpartition(".")[0])
        self.definitions: dict[str, ast.AST] = {}
        self.classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.definitions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                # Methods one by one: a class with one CUDA-only method is not CUDA-only.
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.definitions[f"{node.name}.{member.name}"] = member
        # Names bound at module level to an extension built for CUDA (`_C = load(..., ["k.cu"])`).
        self.built: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                why = self._builds_cuda(node.value, {})
                if why:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self.built[target.id] = why
        # Names of ``built`` that a function binds (`global _plugin`): name -> the
        # functions that bind it. Code under a test of one of them (`if _init():`)
        # only picks CUDA's path where the extension loads.
        self.binders: dict[str, set] = {}
        # (definition, name, value) of each `global name` then `name = value`
        # in a definition: found once, judged again each round.
        self._global_bindings = list(_global_bindings(self.definitions)) if not source or b"global" in source else []
        # Definition -> what it does, in walk order: judged again each round.
        self._events: dict[ast.AST, list] = {}

    def qualified_locals(self) -> Iterable[tuple[str, str]]:
        """(qualified name, name in the module) of each definition."""
        for local in self.definitions:
            yield (f"{self.name}.{local}" if self.name else local), local

    @classmethod
    def of(
        cls, path: str, tree: Optional[ast.Module], name: str, builders: set, source: bytes = b"", extensions: frozenset = frozenset()
    ) -> Optional["ModuleJudge"]:
        if tree is None:
            return None  # the file's own port reports it
        return cls(name, tree, os.path.basename(path) == "__init__.py", builders, source, extensions)

    def judge(self, found: dict, kernel: set, libraries: frozenset) -> bool:
        """Add the definitions that only run on NVIDIA GPUs to ``found``, and
        those of them that are CUDA kernel code to ``kernel``; True if any is new."""
        new = self._bind_globals(found)
        for local, node in self.definitions.items():
            qualified = f"{self.name}.{local}" if self.name else local
            if qualified in found or not self._may_matter(node, found, libraries):
                continue
            why, is_kernel = self._why(node, found, kernel, libraries)
            if why:
                found[qualified] = why
                if is_kernel:
                    kernel.add(qualified)
                new = True
            elif qualified not in self.builders and self._builds_extensions(node):
                self.builders.add(qualified)
                new = True
        return self._judge_private_helpers(found, kernel) or new

    def _judge_private_helpers(self, found: dict, kernel: set) -> bool:
        """A private function (`_name`) that only NVIDIA-only definitions or
        extension builders of the module call runs only where they do (it
        names the GPU for a build cache): it is theirs, kernel code when they
        all are or build it. True if one is new."""
        callers: dict[str, set] = {}
        for local, node in self.definitions.items():
            for kind, _, value, _ in self._walked(node):
                if kind == "call":
                    callers.setdefault(value, set()).add(f"{self.name}.{local}" if self.name else local)
        new = False
        for local in self.definitions:
            qualified = f"{self.name}.{local}" if self.name else local
            served = callers.get(qualified, set()) - {qualified}
            if qualified in found or not local.rsplit(".", 1)[-1].startswith("_") or not served:
                continue
            if all(caller in found or caller in self.builders for caller in served):
                found[qualified] = f"serves only `{_short(sorted(served)[0])}`, which builds or runs CUDA code"
                if all(caller in kernel or caller in self.builders for caller in served):
                    kernel.add(qualified)
                new = True
        return new

    def _bind_globals(self, found: dict) -> bool:
        """Module names a function binds to a CUDA extension it builds
        (`global _plugin` then `_plugin = get_plugin(sources=["k.cu"])`, as
        `_C = load(...)` does at module level): what uses them is CUDA's.
        True if one is new (what was read of the definitions is read again)."""
        new = False
        for local, name, value in self._global_bindings:
            why = self._builds_cuda(value, found) if name not in self.built else None
            if why:
                self.built[name] = why
                self.binders.setdefault(name, set()).add(local)
                new = True
        if new:
            self._events.clear()
            self._heads = None
        return new

    def _may_matter(self, definition: ast.AST, found: dict, libraries: frozenset) -> bool:
        """Whether ``definition`` names anything that can make it NVIDIA-only
        or an extension builder: a name bound to a library, a builder, a CUDA
        internal or a definition found so far. Most definitions name none,
        and reading their words costs a fraction of walking them."""
        if self._lines is None:
            return True
        words, internal_access = self._words_of(definition)
        heads, internal_heads = self._interesting_heads(found, libraries)
        return bool(words & heads) or (internal_access and bool(words & internal_heads)) or bool(words & self.extensions)

    def _words_of(self, definition: ast.AST) -> tuple:
        known = self._words.get(definition)
        if known is None:
            first = min([definition.lineno, *(d.lineno for d in getattr(definition, "decorator_list", ()))])
            text = b"\n".join(self._lines[first - 1 : definition.end_lineno])
            known = self._words[definition] = (
                {word.decode("ascii") for word in _IDENTIFIER.findall(text)}, b"._" in text
            )
        return known

    def _interesting_heads(self, found: dict, libraries: frozenset) -> tuple:
        """(names whose use may matter, names that matter only through a
        private attribute), for what is found now (``found`` and the builders
        only grow, so their sizes tell when to look again)."""
        key = (len(found), len(self.builders))
        if self._heads is not None and self._heads[0] == key:
            return self._heads[1]
        targets = {*found, *self.builders, *EXTENSION_BUILDERS}
        prefixes = {name.rsplit(".", depth)[0] for name in targets for depth in range(name.count(".") + 1)}
        heads = set(self.built)
        internal_heads = set()
        for local, qualified in self.imports.items():
            if qualified in prefixes or is_library(qualified, libraries) or qualified.startswith(INTERNALS) or qualified in SKIP_UNLESS_IMPORTED:
                heads.add(local)
            elif any(internal.startswith(qualified + ".") for internal in INTERNALS):
                internal_heads.add(local)
        for local in (*self.definitions, *self.classes):
            if "." not in local and (f"{self.name}.{local}" if self.name else local) in prefixes:
                heads.add(local)
        answer = (frozenset(heads), frozenset(internal_heads))
        self._heads = (key, answer)
        return answer

    def _builds_extensions(self, definition: ast.AST) -> bool:
        builders = EXTENSION_BUILDERS | self.builders
        return any(kind == "call" and value in builders for kind, _, value, _ in self._walked(definition))

    def _why(self, definition: ast.AST, found: dict, kernel: set, libraries: frozenset) -> tuple[Optional[str], bool]:
        """Why ``definition`` only runs on NVIDIA GPUs, if it does, and
        whether the reason is CUDA kernel code."""
        imported = _imported_extension(definition.body, self.extensions) if self.extensions else None
        if imported is not None:
            return f"imports `{imported}`, which the project builds from CUDA sources", True
        cuda_source: Optional[str] = None
        looked = False
        for kind, node, value, unconditional in self._walked(definition):
            if kind == "call":
                needed = _needed_library(node, value, libraries)
                if needed is not None:
                    return f"needs `{needed}` (it skips unless it imports), which only runs on NVIDIA GPUs", False
                if value in EXTENSION_BUILDERS or value in self.builders:
                    # `sources = ["k.cpp", "k.cu"]` ... `load(name, sources=sources)`:
                    # the CUDA source may be named anywhere in the function.
                    if not looked:
                        cuda_source, looked = _cuda_source_in(definition), True
                    why = self._builds_cuda(node, found, cuda_source)
                    if why:
                        return why, True
            elif kind == "built":
                return f"uses `{node.id}`, bound where the module {value}", True
            elif is_library(value, libraries):
                return f"uses `{value}`, which only runs on NVIDIA GPUs", False
            elif value.startswith(INTERNALS):
                return f"uses `{value}`, one of CUDA's own internals", False
            else:
                # `Kernel.apply(...)` runs an autograd Function's `forward`.
                target = value[: -len(".apply")] + ".forward" if value.endswith(".apply") and value not in found else value
                callee = found.get(target)
                # A call under a condition (`if x.is_cuda and _init():`) only
                # picks CUDA's path: the caller has another one.
                if callee is not None and unconditional and not _same_definition(value, self.name, definition):
                    return f"calls `{_short(value)}`, which {callee.split(', calls', 1)[0]}", target in kernel
        return None, False

    def _walked(self, definition: ast.AST) -> list:
        """What ``definition`` does, in the order of a walk of it, made once:
        ("call", the call, its callee), ("built", a name bound to an extension,
        why) and ("ref", the node, the qualified name it reads, whether it
        runs whenever the definition runs)."""
        events = self._events.get(definition)
        if events is None:
            unconditional = _unconditional(definition)
            loaded = _under_tests_of(definition, self.binders)
            events = self._events[definition] = []
            for node in breadth_first(definition):
                if isinstance(node, ast.Call):
                    callee = self._qualified(node.func)
                    if callee is not None:
                        events.append(("call", node, callee, False))
                if isinstance(node, ast.Name) and node.id in self.built and node not in loaded:
                    events.append(("built", node, self.built[node.id], False))
                    break  # nothing after it is read
                if isinstance(node, (ast.Name, ast.Attribute)):
                    qualified = self._qualified(node)
                    if qualified is not None:
                        events.append(("ref", node, qualified, node in unconditional))
        return events

    def _builds_cuda(self, node: ast.AST, found: dict, cuda_source: Optional[str] = None) -> Optional[str]:
        """Why the call ``node`` builds or loads a CUDA extension, if it does;
        ``cuda_source``: a CUDA source the code around the call names."""
        if not isinstance(node, ast.Call):
            return None
        callee = self._qualified(node.func)
        if callee is None or not (callee in EXTENSION_BUILDERS or callee in self.builders):
            return None
        source = _cuda_source_in(node) or cuda_source
        if callee in CUDA_ONLY_BUILDERS or source or _cuda_keyword(node):
            what = f"`{source}`" if source else "CUDA sources"
            if callee in self.builders:
                return f"builds {what} through `{_short(callee)}`"
            return f"builds a CUDA extension ({what})"
        return None

    def _qualified(self, node: ast.AST) -> Optional[str]:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = node.id
        if head in self.imports:
            return ".".join([self.imports[head], *parts])
        if head in self.definitions or head in self.classes:
            return ".".join([self.name, head, *parts]) if self.name else ".".join([head, *parts])
        return None


def _imported_extension(statements: list, extensions: frozenset) -> Optional[str]:
    """The CUDA extension that ``statements`` import whenever they run
    (`import _raymarching as _backend`), also in a `try` whose every
    fallback imports something else in its place (a JIT build of the same
    sources) and under a lazy load's `if BACKEND is None:`; not under
    another `if`, nor in a nested function."""
    for statement in statements:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            found = next((name for name in _imported_modules(statement) if name in extensions), None)
            if found is not None:
                return found
        elif isinstance(statement, ast.Try) and statement.handlers and all(
            handler.body and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in handler.body) for handler in statement.handlers
        ):
            found = _imported_extension(statement.body, extensions)
            if found is not None:
                return found
        elif isinstance(statement, ast.With) or (isinstance(statement, ast.If) and _loads_once(statement.test)):
            found = _imported_extension(statement.body, extensions)
            if found is not None:
                return found
    return None


def _loads_once(test: ast.AST) -> bool:
    """`if BACKEND is None:` (or `if not _loaded:`): the lazy load's first
    call takes the branch, so every call needs what it imports."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is):
        return isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, (ast.Name, ast.Attribute))


def _imported_modules(statement) -> list:
    """Each module name an import statement may load, by its last part too
    (`from .gpu_nms import gpu_nms` loads `gpu_nms`)."""
    if isinstance(statement, ast.Import):
        return [part for alias in statement.names for part in (alias.name, alias.name.split(".")[0])]
    if statement.module:
        return [statement.module, statement.module.rpartition(".")[2]]
    return [alias.name for alias in statement.names]  # `from . import gpu_nms`


def _global_bindings(definitions: dict) -> Iterable[tuple[str, str, ast.AST]]:
    """(definition, name, value) of each module name a definition declares
    `global` and assigns (`global _plugin` ... `_plugin = get_plugin(...)`)."""
    for local, node in definitions.items():
        declared = {name for statement in breadth_first(node) if isinstance(statement, ast.Global) for name in statement.names}
        for statement in breadth_first(node) if declared else ():
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name) and target.id in declared:
                        yield local, target.id, statement.value


def _under_tests_of(definition: ast.AST, binders: dict) -> set:
    """The nodes of ``definition`` under a test that loads or names an
    extension bound later (`if impl == "cuda" and _init():`, `if _plugin is
    not None:`): a dispatcher's CUDA arm, not the definition's only path."""
    if not binders:
        return set()
    names = set(binders) | {binder for functions in binders.values() for binder in functions}
    under: set = set()
    for node in breadth_first(definition):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and any(
            isinstance(part, ast.Name) and part.id in names for part in breadth_first(node.test)
        ):
            body = node.body if isinstance(node.body, list) else [node.body]
            under.update(inner for statement in body for inner in breadth_first(statement))
    return under


_CONDITIONAL = (ast.If, ast.IfExp, ast.While, ast.Try, ast.BoolOp, ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)


def _unconditional(definition: ast.AST) -> set:
    """The nodes of ``definition`` that run whenever it runs: not inside a
    condition, a `try`, or a nested function."""
    reached: set = set()
    pending = child_nodes(definition)
    while pending:
        node = pending.pop()
        if isinstance(node, _CONDITIONAL):
            continue
        reached.add(node)
        pending.extend(child_nodes(node))
    return reached


# `pytest.importorskip("triton")`: what follows runs only where the module imports.
SKIP_UNLESS_IMPORTED = frozenset({"pytest", "pytest.importorskip"})


def _needed_library(node: ast.AST, callee: str, libraries: frozenset) -> Optional[str]:
    """The NVIDIA-only library a `pytest.importorskip(...)` call asks for, if it does."""
    if callee != "pytest.importorskip" or not isinstance(node, ast.Call) or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and is_library(first.value, libraries):
        return first.value
    return None


def _same_definition(qualified: str, module: str, definition: ast.AST) -> bool:
    return qualified.rsplit(".", 1)[-1] == getattr(definition, "name", None) and qualified.startswith(module)


def _short(qualified: str) -> str:
    return ".".join(qualified.split(".")[-2:])


def _cuda_source_in(call: ast.Call) -> Optional[str]:
    for node in breadth_first(call):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CUDA_SOURCE.search(node.value):
            return os.path.basename(node.value)
    return None


def _cuda_keyword(call: ast.Call) -> bool:
    for keyword in call.keywords:
        if keyword.arg in _CUDA_KEYWORDS and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value):
            return True
    return False


def _imports(tree: ast.Module, package: str) -> dict[str, str]:
    """Local name -> qualified name, for the module's own imports (relative
    ones resolved against ``package``, the package the module is in)."""
    bound: dict[str, str] = {}
    for node in all_statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node, package)
            if base is None:
                continue
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return bound


def absolute(node: ast.ImportFrom, package: str) -> Optional[str]:
    if not node.level:
        return node.module
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (node.level - 1)]
    if node.module:
        parts.append(node.module)
    return ".".join(parts)


def imported_names(nodes: Iterable[ast.AST], package: str) -> Iterable[str]:
    """The modules the import statements among ``nodes`` name (`from util
    import misc` names `util` and `util.misc`), relative ones made absolute
    from ``package``."""
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node, package)
            if base:
                yield base
                yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def all_statements(body: list) -> Iterable[ast.stmt]:
    """Every statement, nested ones too, in the order of ``ast.walk``
    (breadth first: a later binding of a name wins), without entering
    expressions, which hold none: a walk of every node costs several times more."""
    pending = collections.deque(body)
    while pending:
        node = pending.popleft()
        if isinstance(node, ast.stmt):
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                pending.extend(item for item in value if isinstance(item, _HOLDS_STATEMENTS))
