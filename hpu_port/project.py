"""Facts about the project as a whole, found once per run before any file is ported.

A check like `if x.device.type == "cuda" and _init():` is only right to port
when what it guards can run on Gaudi, and what `_init()` does may be written in
another module of the project (it builds `.cu` sources through a helper of
the project's). Those answers need more than one file, so the runner finds them
here, from the project's files as they are on disk, and hands them to the
per-file core as data (which reads no disk and keys its cache on them):

- the names of the project's own top-level modules and packages;
- the folders that are packages, so a file's module name is known;
- the project's functions and classes that only NVIDIA GPUs can run: they
  build or load CUDA extensions, use an NVIDIA-only library or CUDA's
  internals, or call (across modules, transitively) one that does;
- the modules the project builds from CUDA sources (`CUDAExtension("name",
  [...])` in its setup script): a module that imports one cannot be
  imported where there is no NVIDIA GPU;
- the project's classes whose `backward` method ends with a backward pass
  on every path (a trainer's `backward(loss)` that scales and back-propagates):
  that pass gets its own mark_step, so a call of the method needs none.

Only files whose bytes could hold such evidence are parsed, with the standard
parser; the rest cost a read of their bytes. How one module's definitions are
judged is ``hpu_port.device.judging``'s; the rounds across modules are here.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from hpu_port._compat import blake2b
from hpu_port.ast_nodes import breadth_first, called_name
from hpu_port.device.cli_flags import cli_flags, flag_defaults
from hpu_port.device.config_reads import config_reads
from hpu_port.device.declarations import (
    ENUM_NEEDLES,
    PROBE_NEEDLES,
    device_enums,
    hpu_probes,
)
from hpu_port.device.judging import ModuleJudge, all_statements, imported_names, is_library
from hpu_port.device.nvidia_flags import nvidia_config_values, nvidia_flag_values
from hpu_port.device.pins import normalized, project_pins
from hpu_port.device.subclasses import project_subclasses
from hpu_port.device.probes import probed_in
from hpu_port.device.sharding import sharding_files

# How many rounds of "calls a function found in the last round" are followed.
MAX_ROUNDS = 6


@dataclass(frozen=True)
class ProjectFacts:
    """What the per-file core may know of the rest of the project."""

    first_party: frozenset = frozenset()
    packages: frozenset = frozenset()  # absolute folders that hold an __init__.py
    # Qualified name (`pkg.ops.upfirdn2d._init`) -> why only NVIDIA GPUs run it.
    nvidia_only: tuple = ()
    # The top-level packages (absolute folders) with a module that probes
    # another accelerator: they serve several devices, and so does every
    # module of theirs.
    serves_several: tuple = ()
    # `Class.backward` for the project's classes whose `backward` method ends
    # with a backward pass on every path.
    syncing_methods: frozenset = frozenset()
    # The modules the project builds as CUDA extensions (`swin_window_process`).
    cuda_extensions: frozenset = frozenset()
    # (rule code, "path:line") for each rule whose ``held-when-project-has``
    # pattern the project's code matches: the first place it does.
    project_holds: tuple = ()
    # (enum name, its members) for the project's enums with a CUDA member.
    device_enums: tuple = ()
    # The qualified names of the project's own functions that test for Gaudi.
    hpu_probes: tuple = ()
    # Module name -> why it only loads where NVIDIA's software is: it imports
    # an NVIDIA-only library at its top.
    nvidia_modules: tuple = ()
    # (key, role): config keys the code reads at a backend, device or dtype
    # position (`init_process_group(backend=cfg.comm_backend)`).
    config_reads: tuple = ()
    # The option strings the project's `add_argument` calls define (`--fp16`).
    cli_flags: frozenset = frozenset()
    # The NVIDIA-only definitions whose reason is CUDA kernel code: they build
    # or call a CUDA extension, themselves or through calls they always make.
    kernel_code: frozenset = frozenset()
    # (qualified class, whether it passes keywords on to its base, the
    # library class it is built on) for the project's classes built on a
    # class some rule follows into subclasses (``Kind.project_bases``: a
    # library's trainer or its arguments).
    subclasses: tuple = ()
    # The scripts (absolute paths) that hand one of those classes, or a
    # subclass, to an argument parser: their command lines fill it.
    parsing_scripts: tuple = ()
    # (package, version specifiers) for each dependency the project pins a
    # version of, in its requirements, pyproject.toml, setup.cfg or setup.py.
    pins: tuple = ()
    # The folder that holds every Python file of the run: folders above it
    # (where the project is checked out) say nothing of its modules.
    root: str = ""
    # (library class, path, line, why) for each place of the project where
    # the class's Gaudi counterpart (or a project class built on it, moved
    # with it) would break: an argument parser that would refuse it beside
    # another class, a call the move does not reach.
    argument_clashes: tuple = ()
    # The scripts (absolute paths) this run moves to the Gaudi trainer: known
    # only once every Python file is ported, for the launch lines that run
    # them (the runner ports those documents again with it; see
    # ``hpu_port.runner``).
    moved_scripts: tuple = ()
    # (option string, text default) of the options the project's
    # `add_argument` calls define with a text default (`--dp-backend`, "nccl").
    flag_defaults: tuple = ()
    # The files (absolute paths) that shard a model with FSDP, or import a
    # module of the project that does: launches of them stay out of lazy mode.
    sharding_files: tuple = ()
    # (option string, pattern of values, why) for the project's options whose
    # values pick a branch that uses an NVIDIA-only library (`--sync_bn apex`).
    nvidia_flag_values: tuple = ()
    # Whether a Python file of the project moves to CUDA or asks for it
    # (`.cuda(`, `torch.cuda.`): a checkpoint it reads anywhere may then
    # have been saved on NVIDIA GPUs.
    uses_cuda: bool = False
    # The files (absolute paths) that build the CUDA extensions: a script
    # that runs one (`python setup.py build install`) builds CUDA code.
    cuda_extension_builders: frozenset = frozenset()
    # (config key path, pattern of values, why) for the config keys whose
    # values pick a branch that uses an NVIDIA-only library (`BN.NORM_TYPE:
    # sync_batchnorm_apex`).
    nvidia_config_values: tuple = ()
    _index: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    _module_index: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def why_nvidia_only(self, qualified: str) -> Optional[str]:
        if not self._index and self.nvidia_only:
            self._index.update(self.nvidia_only)
        return self._index.get(qualified)

    def subclass_passes_keywords(self, qualified: str) -> Optional[bool]:
        """For a class of the project built on one of the library classes
        rules follow (see ``subclasses``): whether its ``__init__`` takes
        keywords on to its base's; None for any other name."""
        return next((passes for name, passes, _ in self.subclasses if name == qualified), None)

    def pinned(self, package: str) -> tuple:
        """The version specifiers the project gives ``package`` (none: not pinned)."""
        name = normalized(package)
        return tuple(specifiers for pinned, specifiers in self.pins if pinned == name)

    def subclass_base(self, qualified: str) -> Optional[str]:
        """The library class a class of the project is built on (see ``subclasses``)."""
        return next((base for name, _, base in self.subclasses if name == qualified), None)

    def why_kernel_code(self, qualified: str) -> Optional[str]:
        """Why a definition only runs on NVIDIA GPUs, when the reason is a
        CUDA extension it builds, or one it calls (itself or through calls it
        always makes): such a definition is kept whole, since the buffers it
        hands the kernel must stay on CUDA. A definition that only uses an
        NVIDIA-only library is not (it may use it on one path of several)."""
        return self.why_nvidia_only(qualified) if qualified in self.kernel_code else None

    def project_hold(self, code: str) -> Optional[str]:
        """Where the project's code matches rule ``code``'s hold pattern, if it does."""
        return next((where for held, where in self.project_holds if held == code), None)

    def module_name(self, path: str) -> str:
        """The dotted name the project imports ``path`` by."""
        directory, name = os.path.split(os.path.abspath(path))
        parts = [] if name == "__init__.py" else [os.path.splitext(name)[0]]
        while directory in self.packages:
            directory, package = os.path.split(directory)
            parts.insert(0, package)
        return ".".join(parts)

    def top_package(self, path: str) -> str:
        """The outermost package folder that holds ``path`` ("" if none)."""
        directory, top = os.path.dirname(os.path.abspath(path)), ""
        while directory in self.packages:
            directory, top = os.path.dirname(directory), directory
        return top

    def shared_among_devices(self, path: str) -> bool:
        """Whether ``path`` belongs to a package that serves several devices,
        or is a test of a project with such a package (its CI runs them on
        each device)."""
        top = self.top_package(path)
        if not top:
            # A module of a folder the project imports by dotted name (`tools.server.x`).
            top = os.path.dirname(os.path.abspath(path))
        return top in self.serves_several or (bool(self.serves_several) and self.is_test(path))

    def is_test(self, path: str) -> bool:
        """Whether ``path`` is a test module of this project (see ``is_test_path``)."""
        return is_test_path(path, self.root)

    def why_nvidia_module(self, module: str) -> Optional[str]:
        """Why importing ``module`` needs NVIDIA's software (it, or a package
        it is in, imports an NVIDIA-only library at its top); None if not."""
        if not self._module_index and self.nvidia_modules:
            self._module_index.update(self.nvidia_modules)
        index = self._module_index
        parts = module.split(".")
        for end in range(len(parts), 0, -1):
            why = index.get(".".join(parts[:end]))
            if why is not None:
                return why
        return None

    def takes_flag(self, old: str, new: str) -> bool:
        """Whether a script of the project can take ``new`` where it takes ``old``:
        False only when its own parsers define ``old`` and not ``new``."""
        return old not in self.cli_flags or new in self.cli_flags

    def flags_defaulting_to(self, values) -> dict:
        """The project's options whose text default is one of ``values``: option -> default."""
        return {flag: default for flag, default in self.flag_defaults if default in values}

    def config_keys(self, roles) -> frozenset:
        """The config keys the code reads at a position of one of ``roles``."""
        return frozenset(key for key, role in self.config_reads if role in roles)

    def enum_members(self, name: str) -> Optional[tuple]:
        """The members of the project's device enum ``name``; None if it has none of that name."""
        return next((members for enum, members in self.device_enums if enum == name), None)

    def digest(self) -> str:
        text = repr((
            sorted(self.first_party), sorted(self.packages), self.nvidia_only, self.serves_several,
            sorted(self.syncing_methods), sorted(self.cuda_extensions), self.project_holds, self.device_enums,
            self.hpu_probes, self.nvidia_modules, self.config_reads, sorted(self.cli_flags), sorted(self.kernel_code),
            self.subclasses, self.parsing_scripts, self.pins, self.argument_clashes, self.moved_scripts, self.flag_defaults,
            self.sharding_files, self.nvidia_flag_values, self.uses_cuda, sorted(self.cuda_extension_builders),
            self.nvidia_config_values,
        ))
        return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


NO_FACTS = ProjectFacts()


def find_facts(
    python_files: dict, libraries: Iterable[str], other_devices: Iterable[str] = (), holds: Optional[dict] = None,
    bases: Iterable[str] = (), dependency_files: Optional[dict] = None, argument_fields: Optional[dict] = None,
) -> ProjectFacts:
    """The facts of the project made of ``python_files`` (path -> bytes, as
    the run read them); ``libraries``: the NVIDIA-only libraries' top-level
    modules (triton, tensorrt...); ``other_devices``: the other accelerators
    (npu, xpu, mps...) whose probes make a project serve several devices;
    ``holds``: rule code -> its ``ProjectHold``; ``bases``: the library
    classes whose subclasses in the project rules follow;
    ``dependency_files``: path -> bytes of its requirements files,
    pyproject.toml and setup.cfg (setup.py is among the Python files);
    ``argument_fields``: what rules say of the fields of classes of
    arguments (``Kind.argument_fields``)."""
    sources = {os.path.abspath(path): source for path, source in python_files.items()}
    files = sorted(sources)
    packages = _packages(files)
    facts = ProjectFacts(frozenset(_top_level_names(files, packages)), packages)
    libraries = frozenset(libraries)
    found: dict[str, str] = {}
    kernel: set[str] = set()  # the ones of ``found`` that are CUDA kernel code
    builders: set[str] = set()
    parsed: dict[str, Optional[ModuleJudge]] = {}
    trees = _Trees()
    first_needles = holds_evidence = _FirstNeedles(libraries)
    # What imports a CUDA extension of the project is kernel code: judged with it.
    extensions, builders_of_extensions = _cuda_extensions(sources, trees)
    first_needles.needles += [name.encode() for name in sorted(extensions)]
    known: set = set()
    for _ in range(MAX_ROUNDS):
        for path, source in sources.items():
            if path not in parsed and source is not None and holds_evidence(source):
                parsed[path] = ModuleJudge.of(path, trees.of(path, source), facts.module_name(path), builders, source, extensions)
        modules = [module for module in parsed.values() if module is not None]
        while any([module.judge(found, kernel, libraries) for module in modules]):
            pass  # within what is parsed, until nothing more is found
        new = {*found, *builders} - known
        if not new:
            break
        known |= new
        # Next round: the files that name a definition just found. A caller
        # writes its module-level name (`_init`, or the class of a method),
        # whatever the module is called or imported as.
        names = {qualified: local.split(".")[0] for module in modules for qualified, local in module.qualified_locals()}
        needles = sorted({names.get(qualified, qualified.rsplit(".", 1)[-1]).encode() for qualified in new})
        holds_evidence = lambda source, needles=needles: any(needle in source for needle in needles)
    *subclasses_and_parsers, clashes = project_subclasses(sources, trees.holding, facts.module_name, frozenset(bases), argument_fields or {})
    several = _serving_several(sources, facts, other_devices)
    syncing = _syncing_methods(sources, trees)
    enums = {p: s for p, s in sources.items() if isinstance(s, bytes) and b"Enum" in s}
    return ProjectFacts(
        facts.first_party, packages, tuple(sorted(found.items())), several, syncing, extensions,
        _project_holds(python_files, holds or {}),
        device_enums(tree for _, tree in trees.holding(enums, ENUM_NEEDLES)),
        hpu_probes((facts.module_name(path), tree) for path, tree in trees.holding(sources, PROBE_NEEDLES)),
        _nvidia_modules(sources, facts, libraries, trees, first_needles, extensions),
        config_reads(sources.values()),
        cli_flags(sources.values()),
        frozenset(kernel),
        *subclasses_and_parsers,
        project_pins(sources, dependency_files or {}),
        _common_folder(files),
        clashes,
        flag_defaults=flag_defaults(sources.values()),
        sharding_files=sharding_files(sources, facts.module_name, trees.holding),
        nvidia_flag_values=nvidia_flag_values(sources, libraries, trees.holding),
        nvidia_config_values=nvidia_config_values(sources, libraries, trees.holding, first_needles.imports_a_library),
        cuda_extension_builders=builders_of_extensions,
        uses_cuda=any(isinstance(source, bytes) and _USES_CUDA.search(source) for source in sources.values()),
    )



# `.cuda(` or `torch.cuda.`: code that runs on NVIDIA GPUs.
_USES_CUDA = re.compile(rb"\.cuda\(|\btorch\.cuda\.")


def _common_folder(files: list) -> str:
    """The deepest folder that holds every one of ``files`` (absolute paths)."""
    return os.path.commonpath([os.path.dirname(path) for path in files]) if files else ""


def _nvidia_modules(
    sources: dict, facts: ProjectFacts, libraries: frozenset, trees: "_Trees", first: "_FirstNeedles", extensions: frozenset = frozenset(),
) -> tuple:
    """(module, why) for the project's modules that import an NVIDIA-only
    library, or an extension the project builds from CUDA sources
    (``extensions``), at their top, outside any `try` or `if` (`import
    transformer_engine`, `import DCNv3`): they only load where NVIDIA's software is, and
    what imports them tests or uses NVIDIA-only code. (Not followed further:
    a library whose every module is reached from one such import would be
    kept whole, where a person makes one import optional.)"""
    built = tuple(name.encode() for name in extensions)
    candidates = {
        path: source for path, source in sources.items()
        if isinstance(source, bytes) and (first.imports_a_library(source) or any(name in source for name in built))
    }
    found: dict[str, str] = {}
    for path, tree in trees.holding(candidates, (b"import",)):
        module = facts.module_name(path)
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        imported = next((name for name in _top_level_imports(tree, package) if is_library(name, libraries) or name in extensions), None)
        if imported is not None:
            found[module] = f"it imports `{imported}` at its top"
    # A package that imports such a module of its own at its top (to offer
    # its names: `from nanotron.fp8.linear import FP8Linear`) loads it too.
    needles = tuple(sorted({name.rsplit(".", 1)[-1].encode() for name in found}))
    inits = {p: s for p, s in sources.items() if p.endswith("__init__.py") and isinstance(s, bytes) and any(n in s for n in needles)}
    for path, tree in trees.holding(inits, (b"import",)):
        package = facts.module_name(path)
        if package not in found:
            imported = next((name for name in _top_level_imports(tree, package) if name in found), None)
            if imported is not None:
                found[package] = f"it imports `{imported}`, which {found[imported][3:]}"
    return tuple(sorted(found.items()))


def _top_level_imports(tree: ast.Module, package: str) -> Iterable[str]:
    """The modules the top of ``tree`` imports, outside any `if` or
    definition, or in a `try` whose every handler raises again."""
    return imported_names(_top_statements(tree.body), package)


def _top_statements(body: list) -> Iterable[ast.stmt]:
    for node in body:
        if isinstance(node, ast.Try) and node.handlers and all(h.body and isinstance(h.body[-1], ast.Raise) for h in node.handlers):
            yield from node.body
        else:
            yield node


def is_test_path(path: str, root: str = "") -> bool:
    """A test module: named `test_*.py`, `*_test.py` or `conftest.py`, or in
    a `tests`/`test` folder of the project: below ``root`` (the run's common
    folder, whose own name is where the project is checked out) or, without
    one, among the three folders nearest the file. Where the project is
    checked out says nothing (`/tmp/test/proj/train.py`, `/srv/test/train.py`)."""
    directory = os.path.normpath(os.path.dirname(os.path.abspath(path)))
    if root and (directory == root or directory.startswith(root.rstrip(os.sep) + os.sep)):
        inside = os.path.relpath(directory, root)
        folders = [] if inside == "." else inside.split(os.sep)
    else:
        folders = directory.split(os.sep)[-3:]
    name = os.path.basename(path)
    return (
        "tests" in folders or "test" in folders or name.startswith("test_") or name.endswith("_test.py")
        or name == "conftest.py"
    )


def _project_holds(python_files: dict, holds: dict) -> tuple:
    """(code, "path:line") of the first match of each rule's hold pattern."""
    found = []
    for code, hold in sorted(holds.items()):
        needle, pattern = hold.needle.encode(), re.compile(hold.pattern.encode())
        for path in sorted(python_files):
            source = python_files[path]
            match = pattern.search(source) if isinstance(source, bytes) and needle in source else None
            if match is not None:
                line = source.count(b"\n", 0, match.start()) + 1
                found.append((code, f"{path}:{line}"))
                break
    return tuple(found)


def _cuda_extensions(sources: dict, trees: "_Trees") -> tuple[frozenset, frozenset]:
    """The module names of `CUDAExtension("name", ...)` (or `name="..."`),
    or of an `Extension` listing `.cu` sources, in the project's files:
    modules built from CUDA sources; also through a
    name the same function sets to it (`extension = CUDAExtension` under a
    CUDA check, then `extension("DCNv3", sources)`). And the files that
    build them."""
    found, files = set(), set()
    for path, tree in trees.holding(sources, (b"CUDAExtension", b".cu'", b'.cu"')):
        builders = {"CUDAExtension"} | _names_bound_to_cuda_extension(tree)
        makers = _functions_returning_cuda_extension(tree)
        for node in breadth_first(tree):
            if isinstance(node, ast.Call) and (called_name(node.func) in builders | makers or _extension_of_cuda_sources(node)):
                name = _text_argument(node, 0, "name")
                if name is None:
                    continue
                found.add(name)
                files.add(path)
                # `make_cuda_ext(name="bev_pool_ext", module="pcdet.ops.bev_pool", ...)`,
                # the helper OpenMMLab-style setup.py files define: the
                # module it is built as is the package's.
                package = _text_argument(node, 1, "module") if called_name(node.func) in makers else None
                if package is not None:
                    found.add(f"{package}.{name}")
    return frozenset(found), frozenset(files)


def _extension_of_cuda_sources(call: ast.Call) -> bool:
    """`Extension("gpu_nms", ["nms_kernel.cu", "gpu_nms.pyx"], ...)`: a plain
    setuptools (or distutils) extension whose listed sources hold CUDA code,
    built by a setup script that runs nvcc itself."""
    if called_name(call.func).rpartition(".")[2] != "Extension":
        return False
    sources = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "sources"), None)
    return isinstance(sources, (ast.List, ast.Tuple)) and any(
        isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value.endswith((".cu", ".cuh")) for item in sources.elts
    )


def _text_argument(call: ast.Call, position: int, keyword: str) -> Optional[str]:
    value = call.args[position] if len(call.args) > position else next((k.value for k in call.keywords if k.arg == keyword), None)
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def _functions_returning_cuda_extension(tree: ast.Module) -> set:
    """The module's functions that return a CUDAExtension they build from
    their parameters (`def make_cuda_ext(name, module, sources): return
    CUDAExtension(name=f"{module}.{name}", ...)`)."""
    makers = set()
    for function in tree.body:
        if isinstance(function, ast.FunctionDef) and any(
            isinstance(node, ast.Call) and called_name(node.func) == "CUDAExtension" for node in ast.walk(function)
        ) and any(isinstance(node, ast.Return) and node.value is not None for node in ast.walk(function)):
            makers.add(function.name)
    return makers


def _names_bound_to_cuda_extension(tree: ast.Module) -> set:
    return {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and called_name(node.value) == "CUDAExtension"
        for target in node.targets
        if isinstance(target, ast.Name)
    }


class _Trees:
    """The files' standard-library trees, each parsed once per run however
    many facts read it (a file that does not parse is its own port's to report)."""

    def __init__(self) -> None:
        self._trees: dict[str, Optional[ast.Module]] = {}

    def of(self, path: str, source: bytes) -> Optional[ast.Module]:
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(source, filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]

    def holding(self, sources: dict, needles: tuple) -> Iterable[tuple[str, ast.Module]]:
        """(path, tree) of the files whose bytes hold one of ``needles``
        (the others are not parsed)."""
        for path, source in sources.items():
            if isinstance(source, bytes) and any(needle in source for needle in needles):
                tree = self.of(path, source)
                if tree is not None:
                    yield path, tree


# Methods a training loop calls in place of `loss.backward()`.
_BACKWARD_METHODS = ("backward",)
# A backward pass, which such a method ends with: `loss.backward(`, `loss . backward (`.
_CALLS_BACKWARD = re.compile(rb"\.[ \t\f\\\r\n]*backward[ \t\f\\\r\n]*\(")


def _syncing_methods(sources: dict, trees: "_Trees") -> frozenset:
    """`Class.backward` for each class of the project whose `backward`
    method ends with a backward pass (`loss.backward()`) on every path."""
    found = set()
    # Such a method calls a backward pass too: most files that define one
    # (an autograd Function's) call none, and are not parsed for this.
    calling = {path: source for path, source in sources.items() if isinstance(source, bytes) and _CALLS_BACKWARD.search(source)}
    for _, tree in trees.holding(calling, tuple(b"def %s(" % name.encode() for name in _BACKWARD_METHODS)):
        for node in all_statements(tree.body):
            if not isinstance(node, ast.ClassDef):
                continue
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and member.name in _BACKWARD_METHODS and _ends_with_backward(member.body):
                    found.add(f"{node.name}.{member.name}")
    return frozenset(found)


def _ends_with_backward(body: list) -> bool:
    """Whether every path through ``body`` ends with a `.backward(...)` call
    (a bare `return` after it is passed over)."""
    statements = [s for s in body if not (isinstance(s, ast.Return) and s.value is None)]
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, ast.If):
        return bool(last.orelse) and _ends_with_backward(last.body) and _ends_with_backward(last.orelse)
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        func = last.value.func
        return isinstance(func, ast.Attribute) and func.attr == "backward"
    return False


def _packages(files: list) -> frozenset:
    """The folders that hold an `__init__.py`, and the folders of Python files
    below one that hold none (`fastchat/llm_judge/`): Python imports those as
    namespace packages (`fastchat.llm_judge.gen_model_answer`)."""
    packages = {os.path.dirname(p) for p in files if os.path.basename(p) == "__init__.py"}
    for directory in sorted({os.path.dirname(p) for p in files}, key=len):
        if directory not in packages and os.path.dirname(directory) in packages:
            packages.add(directory)
    return frozenset(packages)


def _serving_several(sources: dict, facts: ProjectFacts, other_devices: Iterable[str]) -> tuple:
    """The top-level packages with a module that probes another accelerator,
    and those a script that probes one imports (`train.py` choosing among
    CUDA, MPS and the CPU runs its `data/` package's code on each). A folder
    without `__init__.py` whose modules the project imports by dotted name
    (`from tools.server.model_utils import ...`) is one too, when one of its
    modules probes, or a probing script imports one of them."""
    tops = set()
    namespaces = None
    for path, source in sources.items():
        top = facts.top_package(path)
        if (top and top in tops) or not isinstance(source, bytes) or not probed_in(source, other_devices):
            continue
        if top:
            tops.add(top)
            continue
        if namespaces is None:
            namespaces = _namespace_folders(sources, facts.packages)
        own = os.path.dirname(path)
        if own in namespaces:
            tops.add(own)
        for module in _IMPORTED.findall(source):
            parts = module.decode("ascii", "replace").split(".")
            folder = _package_folder(path, parts, facts.packages)
            if folder:
                tops.add(facts.top_package(os.path.join(folder, "__init__.py")))
            tops.update(folder for folder in _module_folders(path, parts, sources) if folder in namespaces)
    return tuple(sorted(tops))


def _namespace_folders(sources: dict, packages: frozenset) -> set:
    """Folders without `__init__.py` that some module imports a module of by
    dotted name (`tools.server.api_utils` for tools/server/api_utils.py)."""
    folders = set()
    for path, source in sources.items():
        if not isinstance(source, bytes):
            continue
        for module in _IMPORTED.findall(source):
            parts = module.decode("ascii", "replace").split(".")
            if len(parts) > 1:
                folders.update(f for f in _module_folders(path, parts, sources) if f not in packages)
    return folders


def _import_bases(path: str) -> tuple:
    """Where Python would look for what a script imports: beside it, or a
    folder or two above (a `src/` layout, a namespace package)."""
    here = os.path.dirname(os.path.abspath(path))
    return here, os.path.dirname(here), os.path.dirname(os.path.dirname(here))


def _module_folders(path: str, parts: list, sources: dict) -> list:
    """The folders of the project's module files a dotted import names, found
    where Python would look (beside the importer, or a folder or two above)."""
    found = []
    for base in _import_bases(path):
        for end in range(2, len(parts) + 1):
            candidate = os.path.join(base, *parts[:end]) + ".py"
            if candidate in sources:
                found.append(os.path.dirname(candidate))
    return found


# The module of each top-level `import x.y` / `from x.y import z` (absolute).
_IMPORTED = re.compile(rb"(?m)^(?:from|import)[ \t]+([A-Za-z_][\w.]*)")


def _package_folder(path: str, parts: list, packages: frozenset) -> str:
    """The project's package folder a script's import names, found where
    Python would look: beside the script or a folder or two above it (a
    `src/` layout, a namespace package without `__init__.py`); "" if none."""
    for base in _import_bases(path):
        for end in range(1, len(parts) + 1):
            folder = os.path.join(base, *parts[:end])
            if folder in packages:
                return folder
    return ""


def _top_level_names(files: list[str], packages: frozenset) -> set[str]:
    names = set()
    for path in files:
        directory = os.path.dirname(path)
        if directory in packages:
            while os.path.dirname(directory) in packages:
                directory = os.path.dirname(directory)
            names.add(os.path.basename(directory))
        elif os.path.basename(path) != "__init__.py":
            names.add(os.path.splitext(os.path.basename(path))[0])
    return names


class _FirstNeedles:
    """Whether a file may hold direct evidence: it mentions one of a few
    bytes, or imports a module whose name starts like one of the libraries
    (`import triton`, `from flash_attn_interface import ...`). Searched as
    plain bytes, each import's module read where `import `/`from ` occurs:
    a regular expression, or a search per library, over every file of a
    large tree costs seconds."""

    def __init__(self, libraries: frozenset) -> None:
        # `pytest.importorskip("triton")`: the test needs the library as much as an import does.
        self.needles = [b"cpp_extension", b"torch.cuda._", b"_C._cuda", b"importorskip("]
        tops = []
        for library in sorted(libraries):
            top, _, rest = library.partition(".")
            if top == "torch":
                self.needles.append(rest.rsplit(".", 1)[-1].encode())  # `torch.distributed._symmetric_memory`
            elif top in _FRAMEWORK_TOPS and rest:
                # `deepspeed.ops.sparse_attention`: most files import the framework, few that module.
                self.needles.append(rest.encode())
            else:
                tops.append(top.rstrip("*").encode())
        self.tops = tuple(tops)
        # Each file's answer, by the identity of its bytes: the facts ask
        # twice of every file, and the bytes outlive the search.
        self._importing: dict[int, bool] = {}

    def __call__(self, source: bytes) -> bool:
        return any(needle in source for needle in self.needles) or self.imports_a_library(source)

    def imports_a_library(self, source: bytes) -> bool:
        known = self._importing.get(id(source))
        if known is None:
            known = self._importing[id(source)] = self._imports_a_library(source)
        return known

    def _imports_a_library(self, source: bytes) -> bool:
        for keyword in (b"import ", b"from "):
            start = source.find(keyword)
            while start != -1:
                module = _MODULE_NAME.match(source, start + len(keyword))
                if module is not None and module.group().startswith(self.tops):
                    return True
                start = source.find(keyword, start + 1)
        return False


_MODULE_NAME = re.compile(rb"[\w.]+")
# Frameworks whose NVIDIA-only parts are a module of theirs, not the whole.
_FRAMEWORK_TOPS = frozenset({"deepspeed"})


