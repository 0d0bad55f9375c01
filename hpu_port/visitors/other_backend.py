"""How the ``other-backend`` kind finds its units (see ``hpu_port.kinds.other_backend``).

The units are found before the walk, so that every other rule's fixes inside
them are held as the walk reaches them (``FileContext.other_backend``).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterator, Optional

import libcst as cst

from hpu_port.ast_nodes import dotted
from hpu_port.context import FileContext
from hpu_port.device.evidence import Evidence, of_options
from hpu_port.filetypes import path_words
from hpu_port.model import Rule
from hpu_port.patterns import matches_any
from hpu_port.visitors._backend_choices import (
    mark_arm,
    mark_cuda_choices,
    mark_cuda_entry,
    mark_importing_arm,
)
from hpu_port.visitors._definitions import (
    body_of,
    classes,
    definitions,
    functions,
    imported_library,
    name_words,
    statements_outside_defs,
)
from hpu_port.visitors._held_helpers import mark_helpers_of_held_code
from hpu_port.visitors._references import shown_briefly, whole_tree, written
from hpu_port.walk import contains, walk
from hpu_port.words import words_in

__all__ = ["visitor", "name_words"]


def visitor(rules: list[Rule], ctx: FileContext) -> None:
    # What is another device's or an NVIDIA-only library's code is the device
    # evidence's; the rules of this kind only say how it is reported.
    evidence = of_options(ctx.options)
    for rule in rules:
        params = rule.params
        reason = _module_reason(ctx, evidence)
        if reason is not None:
            ctx.other_backend.mark(ctx.module, reason)
            continue  # the whole module is reported as one
        bound = _library_bindings(ctx.module.body, evidence)
        for function in functions(ctx.module.body):
            library = imported_library(body_of(function), evidence.unit_library) or _called_library(function, bound, evidence)
            if library is not None:
                ctx.other_backend.mark(function, f"it uses `{library}`, {evidence.unit_library(library)}")
        for node in classes(ctx.module.body):
            base = _matching_base(ctx, node, evidence.unit_class_bases)
            if base is not None:
                ctx.other_backend.mark(node, _implements(node, base))
            elif _names_flash_attention(node.name.value):
                library = next(filter(None, (_called_library(method, bound, evidence) for method in functions(body_of(node)))), None)
                if library is not None:
                    ctx.other_backend.mark(node, f"it is flash attention built on `{library}`, {evidence.unit_library(library)}")
        defined = list(definitions(ctx.module.body))
        for node in defined:
            word = _named_for(node.name.value, evidence.unit_words)
            if word is not None:
                ctx.other_backend.mark(node, f"its name says it is for `{word}`, another device or framework or an NVIDIA-only library")
        _mark_cuda_twins(ctx, defined)
        _mark_kernel_code(ctx)
        internals, attributes = evidence.internals, frozenset(evidence.internal_attributes)
        if _mentioned(ctx.source, (*internals, *attributes)):
            on_internals = set()
            for function in _outermost_functions(ctx.module.body):
                name = _internal_used(ctx, function, internals, attributes)
                if name is not None:
                    ctx.other_backend.mark(function, f"it uses `{name}`, CUDA's own implementation internals, which have no Gaudi counterpart")
                    on_internals.add(function)
            _mark_callers(ctx, defined, on_internals)
        _mark_cuda_classes(ctx)
        if params["held-helpers"]:
            mark_helpers_of_held_code(ctx)
        ctx.other_backend.branch_watcher = lambda node: mark_arm(ctx, node, evidence) or mark_importing_arm(ctx, node, evidence)
        if b"cuda" in ctx.source:
            # Device names that a per-device table lists beside each other.
            devices = evidence.branch_names | frozenset(evidence.port)
            ctx.other_backend.dict_watcher = lambda node: mark_cuda_entry(ctx, node, devices)
        # "hpu" the file itself says, not one an earlier pass wrote.
        if b"hpu" in (ctx.origin or ctx.source) and b"cuda" in ctx.source:
            mark_cuda_choices(ctx)
        statement_names = evidence.statement_names
        if statement_names and _mentioned(ctx.source, statement_names):
            ctx.other_backend.statement_watcher = lambda node: _mark_statement(ctx, node, statement_names)
    return None


def _mark_kernel_code(ctx: FileContext) -> None:
    """The module's functions and methods that the project facts found
    to be CUDA kernel code (in a test module: NVIDIA-only code of any kind) (they build a CUDA extension or call one, or call
    such code on every path, through any module of the project): kept
    whole, so that the buffers they hand a CUDA kernel stay on the CUDA
    device."""
    facts = ctx.facts
    if facts is None or not ctx.path:
        return
    # A test of code that only runs on NVIDIA GPUs (it calls Triton kernels)
    # tests that code: it is kept whole, as kernel code is, with its helpers.
    testing = facts.is_test(ctx.path)
    if not facts.kernel_code and not facts.nvidia_only:
        return
    module = facts.module_name(ctx.path)
    for node, local in _top_definitions(ctx.module.body):
        qualified = f"{module}.{local}" if module else local
        why = facts.why_kernel_code(qualified) or (facts.why_nvidia_only(qualified) if testing else None)
        if why is not None:
            ctx.other_backend.mark(node, f"it {why}")
    _mark_kernel_functions(ctx, module)


# The passes of a custom autograd op: an op whose pass runs NVIDIA-only code is a kernel wrapper.
_AUTOGRAD_PASSES = ("forward", "backward")


def _mark_kernel_functions(ctx: FileContext, module: str) -> None:
    """A custom autograd op (`torch.autograd.Function`) whose forward or
    backward pass runs NVIDIA-only code on every path (an attention kernel of
    xformers, through a helper of any module) is that kernel's wrapper: kept
    whole, with the streams and events it hands the kernel."""
    facts = ctx.facts
    for node in classes(ctx.module.body):
        if node in ctx.other_backend.units or _matching_base(ctx, node, ("torch.autograd.Function", "*.autograd.Function")) is None:
            continue
        prefix = f"{module}.{node.name.value}" if module else node.name.value
        reasons = (facts.why_nvidia_only(f"{prefix}.{name}") for name in _AUTOGRAD_PASSES)
        # Only a pass that calls such code on every path: one that uses a
        # library under a switch (Megatron's optional fused wgrad) chooses.
        why = next((why for why in reasons if why and why.startswith("calls ")), None)
        if why is not None:
            ctx.other_backend.mark(node, f"it is a custom autograd op whose pass {why}")


def _top_definitions(body) -> Iterator[tuple]:
    """(node, name in the module) of the module's functions and of its
    classes' methods, as the project facts name them (`WKV.forward`)."""
    for statement in body:
        if isinstance(statement, cst.FunctionDef):
            yield statement, statement.name.value
        elif isinstance(statement, cst.ClassDef):
            for member in body_of(statement):
                if isinstance(member, cst.FunctionDef):
                    yield member, f"{statement.name.value}.{member.name.value}"


def _mark_statement(ctx: FileContext, node: cst.SimpleStatementLine, patterns: tuple) -> None:
    """Hold a statement that also uses NVIDIA-only code (`torch.cuda.is_bf16_supported() and
    torch.cuda.get_device_capability()[0] >= 8`): ported in part, it would mix HPU and CUDA answers."""
    names = _QualifiedNames(ctx, patterns, frozenset())
    walk(node, [names])
    if names.found is not None:
        shown = shown_briefly(written(node))
        ctx.other_backend.mark(
            node,
            f"it also uses `{names.found}`, which has no Gaudi counterpart, and a statement is ported whole or not at all",
            name=f"the statement `{shown}`",
        )


def _mark_callers(ctx: FileContext, defined: list, on_internals: set) -> None:
    """A function that calls a module-level one held for CUDA's internals
    (`_set_cuda_rng_state`, which writes the RNG state back through
    `torch.cuda._lazy_call`) is held too: ported alone, it would read the
    HPU's state and hand it to code that writes CUDA's. Callers of other
    held functions (a probe for another device) only choose among devices."""
    units = ctx.other_backend.units
    held = {node.name.value for node in ctx.module.body if node in on_internals}
    if not held:
        return
    for node in defined:
        if isinstance(node, cst.FunctionDef) and node not in units and not _inside_a_unit(node, defined, units):
            called = next((name for name in _names_called(node) if name in held), None)
            if called is not None:
                ctx.other_backend.mark(node, f"it calls `{called}`, which is not ported: ported alone, it would hand the HPU's values to CUDA code")


def _mark_cuda_classes(ctx: FileContext) -> None:
    """A class named for CUDA (`FullCudaGraphWrapper`) one of whose methods is
    held (it uses CUDA's internals or an NVIDIA-only library) is CUDA's own
    implementation: its other methods set up what that one uses."""
    units = ctx.other_backend.units
    for node in classes(ctx.module.body):
        if node in units or not _CUDA_WORD.search(node.name.value) or not isinstance(node.body, cst.IndentedBlock):
            continue
        method = next((m for m in node.body.body if isinstance(m, cst.FunctionDef) and m in units), None)
        if method is not None:
            ctx.other_backend.mark(node, f"it is named for CUDA and its `{method.name.value}` is not ported: {units[method]}")


def _inside_a_unit(node, defined: list, units) -> bool:
    return any(other in units and other is not node and contains(other, node) for other in defined)


def _names_called(function: cst.FunctionDef) -> Iterator[str]:
    finder = _CalledNames()
    walk(function.body, [finder])
    return iter(finder.names)


class _CalledNames:
    """The names a function calls directly; nested definitions are units of their own."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.nested = 0

    def visit_Call(self, node: cst.Call) -> None:
        if not self.nested and isinstance(node.func, cst.Name):
            self.names.append(node.func.value)

    def visit_FunctionDef(self, node) -> None:
        self.nested += 1

    def leave_FunctionDef(self, node) -> None:
        self.nested -= 1

    visit_ClassDef, leave_ClassDef = visit_FunctionDef, leave_FunctionDef


def _mark_cuda_twins(ctx: FileContext, defined: list) -> None:
    """`is_cuda_available` beside `is_hpu_available`: the module already has
    the HPU's own; the one named for CUDA is CUDA's, and ported it would be a
    second HPU probe that CUDA-only branches then trust. A method named
    `cuda` is CUDA's own too: half-ported, it hands an HPU device to
    `nn.Module.cuda`."""
    names = {node.name.value for node in defined}
    for node in defined:
        name = node.name.value
        twin = _CUDA_WORD.sub(lambda m: _AS_HPU[m.group()], name)
        if twin != name and twin in names:
            ctx.other_backend.mark(node, f"`{twin}` beside it is the HPU's own; this one is CUDA's")
        elif name == "cuda" and isinstance(node, cst.FunctionDef):
            # An override of `nn.Module.cuda()`: ported code moves with `.to("hpu")`.
            ctx.other_backend.mark(node, "it defines `.cuda()`, the move to a CUDA device, which ported code no longer calls")


_CUDA_WORD = re.compile(r"cuda|Cuda|CUDA")
_AS_HPU = {"cuda": "hpu", "Cuda": "Hpu", "CUDA": "HPU"}


def _mentioned(source: bytes, patterns: tuple) -> bool:
    """Whether the file's text holds the last part of one of ``patterns``
    (`_lazy_call`, `_cuda_`): only then are its functions' names resolved."""
    # A part made of identifier characters occurs in the file exactly when it
    # is part of one of its distinct words, which joined are a fraction of it.
    words = b" ".join(words_in(source))
    return any(part.encode() in (words if _IDENTIFIER_PART.fullmatch(part) else source)
               for part in map(_screened_part, patterns) if len(part) >= 4)


_IDENTIFIER_PART = re.compile(r"\w+")


def _screened_part(pattern: str) -> str:
    """The text a file that uses ``pattern`` must hold: its last part, or the
    last two for a family of private names (`torch.cuda._*`: `cuda._`)."""
    parts = pattern.replace("*", "").split(".")
    return ".".join(parts[-2:]) if parts[-1] in ("", "_") else parts[-1]


def _outermost_functions(body) -> Iterator[cst.FunctionDef]:
    """Functions and methods not nested in another function, and the methods
    of classes defined inside functions (units of their own)."""
    for statement in statements_outside_defs(body):
        if isinstance(statement, cst.FunctionDef):
            yield statement
            yield from _methods_of_inner_classes(statement)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            yield from _outermost_functions(statement.body.body)


def _methods_of_inner_classes(function: cst.FunctionDef) -> Iterator[cst.FunctionDef]:
    for node in definitions(body_of(function)):
        if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
            yield from _outermost_functions(node.body.body)


def _internal_used(ctx: FileContext, function: cst.FunctionDef, patterns: tuple, attributes: frozenset) -> Optional[str]:
    names = _QualifiedNames(ctx, patterns, attributes)
    walk(function.body, [names])
    return names.found


def _named_for(name: str, words: frozenset) -> Optional[str]:
    """The first of ``words`` that is a word of ``name``, or two words of it
    in a row (`AttnProcessorNPU`, `_xla_step`, `_wrapped_flash_attn_3`)."""
    split = name_words(name)
    pairs = [f"{first}_{second}" for first, second in zip(split, split[1:])]
    return next((word for word in (*split, *pairs) if word in words), None)


def _library_bindings(body, evidence: Evidence) -> dict[str, str]:
    """Names the module binds to imports of libraries whose code is not
    ported (at top level, also under `if`/`try`): `from cuda.bindings import
    runtime as cudart` binds cudart to cuda.bindings.runtime."""
    bound, elsewhere = {}, set()
    for statement in statements_outside_defs(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            for name, module in _bindings(small):
                if evidence.unit_library(module):
                    bound[name] = module
                else:
                    elsewhere.add(name)
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                elsewhere.update(_assigned_names(small))
    # A name with a fallback (`except ImportError: multi_tensor_applier =
    # local_multi_tensor_applier`) may not be the library's at all.
    return {name: module for name, module in bound.items() if name not in elsewhere}


def _assigned_names(small) -> set[str]:
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    return {written(target) for target in targets if isinstance(target, cst.Name)}


def _bindings(small) -> list[tuple[str, str]]:
    if isinstance(small, cst.Import):
        return [(written(alias.asname.name) if alias.asname else written(alias.name).split(".")[0],
                 written(alias.name) if alias.asname else written(alias.name).split(".")[0]) for alias in small.names]
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None and not isinstance(small.names, cst.ImportStar):
        module = written(small.module)
        return [(written(alias.asname.name) if alias.asname else written(alias.name), f"{module}.{written(alias.name)}")
                for alias in small.names]
    return []


def _names_flash_attention(name: str) -> bool:
    """`LlamaFlashAttention2`, `PhiFlashAttention2`: a class whose name says
    it is the flash-attention variant of a model's attention (its other
    methods reach the library through the one that calls it)."""
    words = name_words(name)
    return any(first == "flash" and second in ("attention", "attn") for first, second in zip(words, words[1:]))


def _called_library(function: cst.FunctionDef, bound: dict[str, str], evidence: Evidence) -> Optional[str]:
    """The library a function calls through a name the module imported from
    it (`cudart.cudaStreamGetCaptureInfo(...)`): code built on that library;
    a framework's names that touch no device (`tf.logging.info`) aside."""
    if not bound:
        return None
    calls = _RootCalls(bound, evidence.device_free)
    walk(function.body, [calls])
    return calls.found


def _module_reason(ctx: FileContext, evidence: Evidence) -> Optional[str]:
    named = sorted(path_words(ctx.path, ctx.facts.packages) & evidence.unit_words)
    if named:
        return f"its path names `{named[0]}`, code for another device or framework or an NVIDIA-only library"
    extension = _imported_cuda_extension(ctx)
    if extension is not None:
        return f"it imports `{extension}`, which the project builds from CUDA sources: the module only loads where NVIDIA's CUDA is"
    imported = _imported_nvidia_module(ctx)
    if imported is not None:
        return imported
    loaded = _loaded_extension(ctx, evidence)
    if loaded is not None:
        return f"it loads a compiled extension at its top (`{loaded}`) and wraps its kernels, which Gaudi does not have"
    runtime = _imported_runtime(ctx, evidence)
    if runtime is not None:
        return f"it imports `{runtime}` at its top, an NVIDIA runtime the file is written around: it only runs where NVIDIA's software is"
    fixture = _nvidia_only_autouse_fixture(ctx)
    if fixture is not None:
        return fixture
    exported = _export_script(ctx)
    if exported is not None:
        return f"it is a script that exports the model (`{exported}`), which the HPU cannot: it exports on the CPU, as it must on Gaudi"
    for function in functions(ctx.module.body):
        decorator = _kernel_decorator(ctx, function, evidence.kernel_decorators)
        if decorator is not None:
            written_as, qualified = decorator
            return f"it defines `@{written_as}` kernels (`{function.name.value}`), {_where_kernels_run(qualified)}"
    for node in ctx.module.body:
        if isinstance(node, cst.ClassDef):
            base = _matching_base(ctx, node, evidence.unit_class_bases)
            if base is not None:
                return _implements(node, base)
    return None


# Exports the HPU does not support (HPU603): a script made for them runs them on the CPU.
_EXPORTS = frozenset({"torch.onnx.export", "torch.onnx.dynamo_export", "torch.jit.trace", "torch.jit.script", "torch.export.export"})
# Words of the file names of export and conversion scripts.
_EXPORT_FILE_WORDS = frozenset({"export", "convert", "onnx", "torchscript", "trt", "tensorrt", "openvino", "coreml", "ncnn", "tflite"})


def _export_script(ctx) -> Optional[str]:
    """The export a script named for exporting (`export_onnx.py`,
    `convert_to_torchscript.py`) makes, if it makes one. Read from the
    standard parser's tree of the whole file: what `check` parses with
    libcst may lack the functions no selected rule acts on."""
    name = os.path.splitext(os.path.basename(ctx.path or ""))[0].lower()
    source = ctx.source or b""
    if not _EXPORT_FILE_WORDS & set(re.split(r"[^a-z0-9]+", name)) or not (b"onnx" in source or b"jit" in source or b"export" in source):
        return None
    tree = whole_tree(ctx)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = dotted(node.func)
            export = next((e for e in _EXPORTS if called == e or called.endswith("." + e.split(".", 1)[1]) or called == e.split(".", 1)[1]), None)
            if export is not None:
                return export
    return None


def _nvidia_only_autouse_fixture(ctx: FileContext) -> Optional[str]:
    """`@pytest.fixture(autouse=True)` whose code only runs on NVIDIA GPUs
    (it skips unless Triton imports): every test of the module runs it."""
    if not ctx.facts.nvidia_only or ctx.tree is None or b"autouse" not in (ctx.source or b""):
        return None
    module = ctx.facts.module_name(ctx.path) if ctx.path else ""
    # The file as read: `check` leaves out definitions no rule acts on, a fixture among them.
    for function in ctx.tree.body:
        if not isinstance(function, ast.FunctionDef) or not any(map(_autouse_fixture, function.decorator_list)):
            continue
        why = ctx.facts.why_nvidia_only(f"{module}.{function.name}" if module else function.name)
        if why:
            return f"every test in it runs the fixture `{function.name}`, which {why}"
    return None


def _autouse_fixture(decorator: ast.expr) -> bool:
    """`@pytest.fixture(autouse=True)`, `@fixture(scope="module", autouse=True)`."""
    if not isinstance(decorator, ast.Call):
        return False
    name = decorator.func.attr if isinstance(decorator.func, ast.Attribute) else getattr(decorator.func, "id", "")
    return name == "fixture" and any(
        k.arg == "autouse" and isinstance(k.value, ast.Constant) and k.value.value is True for k in decorator.keywords
    )


def _imported_cuda_extension(ctx: FileContext) -> Optional[str]:
    """A module the project builds from CUDA sources, imported at the top of
    this one, outside any `if` (`import swin_window_process`), or in a `try`
    whose every fallback imports something else in its place (`except
    ImportError: from .backend import _backend`, a JIT build of the same
    sources) rather than leaving a way without it (`_backend = None`)."""
    extensions = ctx.facts.cuda_extensions
    if not extensions:
        return None
    for statement in ctx.module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            found = _extension_in_line(statement, extensions)
        elif isinstance(statement, cst.Try) and statement.handlers and all(_only_imports(h.body) for h in statement.handlers):
            found = next(filter(None, (_extension_in_line(s, extensions) for s in _statements(statement.body))), None)
        else:
            found = None
        if found is not None:
            return found
    return None


def _extension_in_line(statement, extensions: frozenset) -> Optional[str]:
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    for small in statement.body:
        for _, module in _bindings(small):
            if module in extensions or module.split(".")[0] in extensions:
                return module
        relative = _relative_extension(small, extensions)
        if relative is not None:
            return relative
    return None


def _statements(block) -> list:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else [cst.SimpleStatementLine(body=block.body)]


def _only_imports(block) -> bool:
    statements = _statements(block)
    return bool(statements) and all(
        isinstance(s, cst.SimpleStatementLine) and all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in s.body) for s in statements
    )


def _relative_extension(small, extensions: frozenset) -> Optional[str]:
    """`from .gpu_nms import gpu_nms` or `from . import gpu_nms` beside the
    setup script that builds `gpu_nms` from CUDA sources."""
    if not isinstance(small, cst.ImportFrom) or not small.relative:
        return None
    dots = "." * len(small.relative)
    if small.module is not None:
        module = written(small.module)
        return dots + module if module.rpartition(".")[2] in extensions else None
    if isinstance(small.names, cst.ImportStar):
        return None
    return next((dots + written(alias.name) for alias in small.names if written(alias.name) in extensions), None)


def _imported_nvidia_module(ctx: FileContext) -> Optional[str]:
    """Why this module only serves NVIDIA: it imports an NVIDIA-only library
    at its top, outside any `try` or `if` (so it only loads where that is),
    or it is a test that imports such a module of the project (`from
    nanotron.fp8 import FP8Tensor`): the test is of NVIDIA-only code."""
    if not ctx.facts.nvidia_modules:
        return None
    # A package's module (a script is the user's own, ported but for what it uses).
    in_package = bool(ctx.path) and os.path.dirname(os.path.abspath(ctx.path)) in ctx.facts.packages
    own = ctx.facts.why_nvidia_module(ctx.facts.module_name(ctx.path)) if in_package else None
    if own is not None and own.endswith("at its top"):
        return f"{own}: the module only loads where NVIDIA's software is"
    # `ops_dcnv3/test.py` beside an extension's setup.py checks its kernels
    # against PyTorch's; an evaluation script of that name imports no such module.
    if not ctx.facts.is_test(ctx.path or "") and os.path.basename(ctx.path or "") not in ("test.py", "tests.py"):
        return None
    for small in _top_level_smalls(ctx.module):
        for module in _imported_modules(small):
            why = ctx.facts.why_nvidia_module(module)
            if why is not None:
                return f"it imports `{module}`, which only loads where NVIDIA's software is ({why})"
    return None


def _loaded_extension(ctx: FileContext, evidence: Evidence) -> Optional[str]:
    """The call, as written, by which the module loads a compiled extension
    at its top (`ext_loader.load_ext('_ext', [...])`)."""
    if not evidence.extension_loaders or b"load" not in (ctx.source or b""):
        return None
    for small in _top_level_smalls(ctx.module):
        value = getattr(small, "value", None)
        if not isinstance(value, cst.Call):
            continue
        hit = ctx.qualify(value.func)
        names = [written(value.func)] + ([hit[0]] if hit is not None else [])
        if any(matches_any(name, evidence.extension_loaders) for name in names):
            return shown_briefly(written(value))
    return None


def _imported_runtime(ctx: FileContext, evidence: Evidence) -> Optional[str]:
    """The first NVIDIA runtime (`tensorrt`, `pycuda.driver`) the module
    imports at its top, outside any `try` or `if`."""
    if not evidence.runtimes:
        return None
    for small in _top_level_smalls(ctx.module):
        runtime = next((module for module in _imported_modules(small) if evidence.is_runtime(module)), None)
        if runtime is not None:
            return runtime
    return None


def _top_level_smalls(module: cst.Module):
    """The small statements of the module's top-level lines (outside any `try`, `if` or definition)."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body


def _imported_modules(small) -> list[str]:
    """The modules an absolute import statement loads."""
    if isinstance(small, cst.Import):
        return [written(alias.name) for alias in small.names]
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return [written(small.module)]
    return []


def _kernel_decorator(ctx: FileContext, function: cst.FunctionDef, patterns: tuple) -> Optional[tuple]:
    """The first kernel decorator of `function`, as written and qualified."""
    for decorator in function.decorators:
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        hit = ctx.qualify(target)
        if hit is not None and matches_any(hit[0], patterns):
            return written(target), hit[0]
    return None


def _where_kernels_run(qualified: str) -> str:
    # numba's plain jit compiles for the host: its kernels take NumPy arrays,
    # so "NVIDIA only" would send a reader looking for CUDA that is not there.
    if qualified in ("numba.jit", "numba.njit"):
        return "which numba compiles for the CPU (or NVIDIA GPUs), never for Gaudi: they take host arrays, not HPU tensors"
    return "which only run on NVIDIA GPUs"


def _implements(node: cst.ClassDef, base: str) -> str:
    return f"it defines `{node.name.value}` (derived from `{base.split('.')[-1]}`), one device's own implementation"


def _matching_base(ctx: FileContext, node: cst.ClassDef, patterns: tuple) -> Optional[str]:
    for base in node.bases:
        hit = ctx.qualify(base.value)
        names = [written(base.value)] + ([hit[0]] if hit else [])
        if any(matches_any(name, patterns) for name in names):
            return names[-1]
    return None


class _RootCalls:
    """Finds a call whose callee starts with one of ``bound``'s names, outside
    choices: a call under `if HAVE_TE:` or `try:` is one branch of a function
    that also works without the library."""

    def __init__(self, bound: dict[str, str], device_free: Callable[[str], bool]) -> None:
        self.bound = bound
        self.device_free = device_free
        self.found: Optional[str] = None
        self.choices = 0

    def visit_Call(self, node: cst.Call) -> None:
        root, attributes = node.func, []
        while isinstance(root, cst.Attribute):
            root, attributes = root.value, [root.attr.value, *attributes]
        if self.found is None and not self.choices and isinstance(root, cst.Name) and root.value in self.bound:
            if not self.device_free(".".join([self.bound[root.value], *attributes])):
                self.found = self.bound[root.value]

    def visit_If(self, node) -> None:
        self.choices += 1

    def leave_If(self, node) -> None:
        self.choices -= 1

    visit_IfExp = visit_Try = visit_If
    leave_IfExp = leave_Try = leave_If


class _QualifiedNames:
    """Finds a name or attribute whose qualified name matches one of
    ``patterns``, or an attribute (or a string naming one) in ``attributes``."""

    def __init__(self, ctx: FileContext, patterns: tuple, attributes: frozenset) -> None:
        self.ctx = ctx
        self.patterns = patterns
        self.attributes = attributes
        self.found: Optional[str] = None
        # A class defined inside the function: its methods are units of their own.
        self.classes = 0

    def visit_ClassDef(self, node) -> None:
        self.classes += 1

    def leave_ClassDef(self, node) -> None:
        self.classes -= 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.found is None and not self.classes and node.attr.value in self.attributes:
            self.found = node.attr.value
        self._check(node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.found is None and not self.classes and node.evaluated_value in self.attributes:
            self.found = node.evaluated_value

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def _check(self, node) -> None:
        if self.found is not None or self.classes:
            return
        hit = self.ctx.qualify(node)
        if hit is not None and matches_any(hit[0], self.patterns):
            self.found = hit[0]
