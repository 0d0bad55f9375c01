"""How the ``other-backend`` kind finds its units (see ``hpu_port.kinds.other_backend``).

The units are found before the walk, so that every other rule's fixes inside
them are held as the walk reaches them (``FileContext.other_backend``).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Iterator, Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.filetypes import path_words
from hpu_port.model import Rule
from hpu_port.visitors._references import shown_briefly, written
from hpu_port.walk import walk


def visitor(rules: list[Rule], ctx: FileContext) -> None:
    for rule in rules:
        params = rule.params
        reason = _module_reason(ctx, params)
        if reason is not None:
            ctx.other_backend.mark(ctx.module, reason)
            continue  # the whole module is reported as one
        bound = _library_bindings(ctx.module.body, params["libraries"])
        for function in _functions(ctx.module.body):
            library = _imported_library(_body(function), params["libraries"]) or _called_library(function, bound)
            if library is not None:
                ctx.other_backend.mark(function, f"it uses `{library}`, which only runs on NVIDIA GPUs")
        for node in _classes(ctx.module.body):
            base = _matching_base(ctx, node, params["class-bases"])
            if base is not None:
                ctx.other_backend.mark(node, _implements(node, base))
        for node in _defs(ctx.module.body):
            word = _named_for(node.name.value, params["definition-names"])
            if word is not None:
                ctx.other_backend.mark(node, f"its name says it is for `{word}`, another device or an NVIDIA-only library")
        internals, attributes = params["internal-names"], params["internal-attributes"]
        if _mentioned(ctx.source, (*internals, *attributes)):
            for function in _outermost_functions(ctx.module.body):
                name = _internal_used(ctx, function, internals, attributes)
                if name is not None:
                    ctx.other_backend.mark(function, f"it uses `{name}`, CUDA's own implementation internals, which have no Gaudi counterpart")
        if params["branch-names"]:
            ctx.other_backend.branch_watcher = lambda node, names=params["branch-names"], libraries=params["libraries"]: (
                _mark_arm(ctx, node, names) or _mark_importing_arm(ctx, node, libraries)
            )
            if b"cuda" in ctx.source:
                devices = params["branch-names"] | _PLAIN_DEVICES
                ctx.other_backend.dict_watcher = lambda node, names=devices: _mark_cuda_entry(ctx, node, names)
        if b"hpu" in ctx.source and b"cuda" in ctx.source:
            _mark_cuda_choices(ctx)
        statement_names = params["statement-names"]
        if statement_names and _mentioned(ctx.source, statement_names):
            ctx.other_backend.statement_watcher = lambda node: _mark_statement(ctx, node, statement_names)
    return None


# Device names that a per-device table lists beside other devices.
_PLAIN_DEVICES = frozenset({"cpu", "hpu", "cuda"})


def _mark_cuda_entry(ctx: FileContext, node: cst.Dict, devices: frozenset) -> None:
    """Hold the `"cuda"` entry of a table keyed by device names
    (`{"cuda": torch.cuda.synchronize, "xpu": torch.xpu.synchronize, "cpu": None}`):
    looked up by the device in use, it is never read on Gaudi, and ported it
    only repeats what an `"hpu"` entry of its own would hold."""
    keys = [_string(element.key) if isinstance(element, cst.DictElement) else None for element in node.elements]
    # Other keys may be set beside the devices (`"default": None`).
    if "cuda" not in keys or None in keys or not any(key in devices for key in keys if key != "cuda"):
        return
    entry = node.elements[keys.index("cuda")]
    ctx.other_backend.mark(
        entry,
        "it is CUDA's entry in a table with one entry per device, which is not read on Gaudi; add an `\"hpu\"` entry instead",
        name='the `"cuda"` entry of a per-device table',
    )


def _mark_cuda_choices(ctx: FileContext) -> None:
    """Where one name gets "hpu" in one branch and "cuda" in another
    (`accelerator_name = "hpu"` ... `accelerator_name = "cuda"`, or two
    `return`s), the code already tells the devices apart: the "cuda" choice,
    with the `if` that leads to it, is CUDA's own."""
    for body in (ctx.module.body, *(_body(f) for f in _functions(ctx.module.body))):
        choices: dict[str, list] = {}
        for statement, branch in _statements_and_branches(body, None):
            for small in statement.body:
                choice = _chosen_device(small)
                if choice is not None:
                    choices.setdefault(choice[0], []).append((choice[1], statement, branch))
        for target, made in choices.items():
            if {value for value, _, _ in made} >= {"hpu", "cuda"}:
                for value, statement, branch in made:
                    if value == "cuda":
                        unit = branch if branch is not None and branch.orelse is None else statement
                        shown = shown_briefly(written(statement))
                        ctx.other_backend.mark(
                            unit,
                            f'`{target}` is set to "hpu" in another branch, so this one is for CUDA',
                            name=f"the CUDA choice `{shown}`",
                            at=unit.test if isinstance(unit, cst.If) else unit,
                        )


def _statements_and_branches(body, branch) -> Iterator[tuple[cst.SimpleStatementLine, Optional[cst.If]]]:
    """The simple statements of ``body`` (not of nested definitions), each
    with the `if` whose own body holds it directly (None elsewhere)."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield statement, branch
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(statement, cst.BaseCompoundStatement):
            if isinstance(statement, cst.If):
                yield from _statements_and_branches(_body(statement), statement)
                orelse = statement.orelse
                if orelse is not None:
                    yield from _statements_and_branches([orelse] if isinstance(orelse, cst.If) else _body(orelse), None)
            else:
                for block in _blocks(statement):
                    yield from _statements_and_branches(block, None)


def _chosen_device(small) -> Optional[tuple[str, str]]:
    """(what is set, "cuda" or "hpu") for `name = "cuda"` and `return "hpu"`."""
    if isinstance(small, cst.Return):
        target, value = "return", small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = written(small.targets[0].target), small.value
    else:
        return None
    device = _string(value) if value is not None else None
    return (target, device) if device in ("cuda", "hpu") else None


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


def _mentioned(source: bytes, patterns: tuple) -> bool:
    """Whether the file's text holds the last part of one of ``patterns``
    (`_lazy_call`, `_cuda_`): only then are its functions' names resolved."""
    return any(part.encode() in source for part in map(_screened_part, patterns) if len(part) >= 4)


def _screened_part(pattern: str) -> str:
    """The text a file that uses ``pattern`` must hold: its last part, or the
    last two for a family of private names (`torch.cuda._*`: `cuda._`)."""
    parts = pattern.replace("*", "").split(".")
    return ".".join(parts[-2:]) if parts[-1] in ("", "_") else parts[-1]


def _outermost_functions(body) -> Iterator[cst.FunctionDef]:
    """Functions and methods not nested in another function, and the methods
    of classes defined inside functions (units of their own)."""
    for statement in _statements_outside_defs(body):
        if isinstance(statement, cst.FunctionDef):
            yield statement
            yield from _methods_of_inner_classes(statement)
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            yield from _outermost_functions(statement.body.body)


def _methods_of_inner_classes(function: cst.FunctionDef) -> Iterator[cst.FunctionDef]:
    for node in _defs(_body(function)):
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


def name_words(name: str) -> list[str]:
    """The words of an identifier, lower-cased: split at `_` and where the case
    changes (`XLAFlashAttnProcessor2_0`: xla, flash, attn, processor, 2, 0)."""
    return [word.lower() for word in _WORDS.findall(name)]


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _mark_importing_arm(ctx: FileContext, node, libraries: frozenset) -> None:
    """Hold the arm of an `if` that imports an NVIDIA-only runtime itself
    (`elif engine:  import tensorrt as trt ...`): that arm is the library's."""
    if not isinstance(node, cst.If):
        return
    library = _imported_library(_body(node), libraries)
    if library is not None:
        ctx.other_backend.mark(
            node.body,
            f"it imports `{library}`, which only runs on NVIDIA GPUs",
            name=f"the branch of `{shown_briefly(written(node.test))}`",
            at=node.test,
        )


def _mark_arm(ctx: FileContext, node, names: frozenset) -> Optional[bool]:
    """Hold the arm of ``node`` (an `if` or a conditional expression) that
    runs only for another device or export format: the body of `if format ==
    "coreml":`, the `else` of `if not is_npu_available():`, the first value of
    `"cuda" if is_torch_xla_available() else device.type`."""
    found = _names_another_device(node.test, names)
    if found is None:
        return
    name, positive = found
    if isinstance(node, cst.IfExp):
        arm = node.body if positive else node.orelse
    else:
        arm = node.body if positive else (node.orelse.body if isinstance(node.orelse, cst.Else) else None)
    if arm is None:
        return
    shown = shown_briefly(written(node.test))
    ctx.other_backend.mark(
        arm,
        f"it runs only for `{name}`, another device, export format or NVIDIA-only library",
        name=f"the branch of `{shown}`" if positive else f"the `else` branch of `{shown}`",
        at=node.test,
    )
    return True


def _names_another_device(test: cst.BaseExpression, names: frozenset) -> Optional[tuple[str, bool]]:
    """(the device or format, whether the test is true for it) when ``test``
    holds only for another device, export format or NVIDIA-only library."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _names_another_device(test.expression, names)
        return (inner[0], not inner[1]) if inner is not None else None
    if isinstance(test, cst.BooleanOperation):
        left, right = (_names_another_device(side, names) for side in (test.left, test.right))
        if isinstance(test.operator, cst.And):
            # True only for that device if either side is (`format == "coreml" and hasattr(F, ...)`).
            return next((side for side in (left, right) if side is not None and side[1]), None)
        # True only for other devices if both sides are (`is_tpu or coreml`).
        return left if left is not None and right is not None and left[1] and right[1] else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _compared_device(test, names)
    if isinstance(test, cst.Call):
        return _prefix_test(test, names) or _availability_probe(test.func, names)
    if isinstance(test, (cst.Name, cst.Attribute)):
        name = written(test).rsplit(".", 1)[-1]
        if name.lower() in names:
            return name.lower(), True  # a flag named for the format: `elif coreml:`
        words = name_words(name)
        device = next((w for w in words if w in names), None)
        return (device, True) if device is not None and words[0] in _FLAG_WORDS else None
    return None


# `is_npu`, `use_xla`, `on_tpu`: a flag that says the code runs on that device.
_FLAG_WORDS = frozenset({"is", "use", "on", "using", "has"})


def _compared_device(test: cst.Comparison, names: frozenset) -> Optional[tuple[str, bool]]:
    target = test.comparisons[0]
    operator = target.operator
    values = [_string(test.left), *_strings(target.comparator)] if isinstance(operator, (cst.In, cst.NotIn)) else [
        _string(test.left), _string(target.comparator)]
    compared = [value.split(":")[0].lower() for value in values if value is not None]
    if not compared or not all(value in names for value in compared):
        return None
    if isinstance(operator, (cst.Equal, cst.Is, cst.In)):
        return compared[0], True
    if isinstance(operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
        return compared[0], False
    return None


def _string(node) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _strings(node) -> list:
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        values = [_string(element.value) for element in node.elements]
        return values if all(value is not None for value in values) else [None]
    return [_string(node)]


def _prefix_test(test: cst.Call, names: frozenset) -> Optional[tuple[str, bool]]:
    """`opt_class.startswith("bitsandbytes.")`, `device.startswith("npu")`: true for that name."""
    func = test.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "startswith" and len(test.args) == 1):
        return None
    prefix = _string(test.args[0].value)
    name = re.split(r"[.:_\-]", prefix.lower())[0] if prefix else None
    return (name, True) if name in names else None


def _availability_probe(func: cst.BaseExpression, names: frozenset) -> Optional[tuple[str, bool]]:
    """`is_torch_npu_available()`, `torch.backends.mps.is_available()`: true on that device."""
    parts = written(func).split(".")
    if not parts[-1].startswith("is_") or not parts[-1].endswith("available"):
        return None
    device = next((word for part in parts for word in name_words(part) if word in names), None)
    return (device, True) if device is not None else None


def _library_bindings(body, libraries: frozenset) -> dict[str, str]:
    """Names the module binds to imports of ``libraries`` (at top level, also
    under `if`/`try`): `from cuda.bindings import runtime as cudart` binds
    cudart to cuda.bindings.runtime."""
    bound, elsewhere = {}, set()
    for statement in _statements_outside_defs(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            for name, module in _bindings(small):
                if module.split(".")[0] in libraries:
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


def _called_library(function: cst.FunctionDef, bound: dict[str, str]) -> Optional[str]:
    """The library a function calls through a name the module imported from
    it (`cudart.cudaStreamGetCaptureInfo(...)`): code built on that library."""
    if not bound:
        return None
    calls = _RootCalls(bound)
    walk(function.body, [calls])
    return calls.found


def _module_reason(ctx: FileContext, params: dict) -> Optional[str]:
    named = sorted(path_words(ctx.path) & params["path-names"])
    if named:
        return f"its path names `{named[0]}`, code for another device or an NVIDIA-only library"
    for function in _functions(ctx.module.body):
        decorator = _kernel_decorator(ctx, function, params["kernel-decorators"])
        if decorator is not None:
            return f"it defines `@{decorator}` kernels (`{function.name.value}`), which only run on NVIDIA GPUs"
    for node in ctx.module.body:
        if isinstance(node, cst.ClassDef):
            base = _matching_base(ctx, node, params["class-bases"])
            if base is not None:
                return _implements(node, base)
    return None


def _kernel_decorator(ctx: FileContext, function: cst.FunctionDef, patterns: tuple) -> Optional[str]:
    for decorator in function.decorators:
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        hit = ctx.qualify(target)
        if hit is not None and any(fnmatchcase(hit[0], pattern) for pattern in patterns):
            return written(target)
    return None


def _implements(node: cst.ClassDef, base: str) -> str:
    return f"it defines `{node.name.value}` (derived from `{base.split('.')[-1]}`), one device's own implementation"


def _matching_base(ctx: FileContext, node: cst.ClassDef, patterns: tuple) -> Optional[str]:
    for base in node.bases:
        hit = ctx.qualify(base.value)
        names = [written(base.value)] + ([hit[0]] if hit else [])
        if any(fnmatchcase(name, pattern) for name in names for pattern in patterns):
            return names[-1]
    return None


def _imported_library(body, libraries: frozenset) -> Optional[str]:
    """The first of ``libraries`` a function imports in its own body (also
    under `try:`, `import tensorrt` or install it and import it again). An
    import under an `if` or in a loop is one branch of a function that does
    more (an exporter for many formats); nested functions are units of
    their own."""
    for statement in _statements(body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                for module in _imported_modules(small):
                    root = module.split(".")[0]
                    if root in libraries:
                        return module
    return None


def _statements(body, through: tuple = (cst.Try,)) -> Iterator[cst.CSTNode]:
    """The statements of ``body`` and of the blocks of its ``through`` statements."""
    for statement in body:
        yield statement
        if isinstance(statement, through):
            for block in _blocks(statement):
                yield from _statements(block, through)


def _statements_outside_defs(body) -> Iterator[cst.CSTNode]:
    return _statements(body, (cst.If, cst.Try))


def _body(node) -> list:
    body = node.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else [cst.SimpleStatementLine(body.body)]


def _blocks(statement) -> Iterator:
    body = getattr(statement, "body", None)
    if isinstance(body, cst.IndentedBlock):
        yield body.body
    for handler in getattr(statement, "handlers", ()) or ():
        yield handler.body.body
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:
        if isinstance(orelse, cst.If):
            yield orelse.body.body
            orelse = orelse.orelse
        else:
            yield orelse.body.body
            orelse = None
    final = getattr(statement, "finalbody", None)
    if final is not None:
        yield final.body.body


def _imported_modules(small) -> list[str]:
    if isinstance(small, cst.Import):
        return [written(alias.name) for alias in small.names]
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return [written(small.module)]
    return []


def _functions(body) -> Iterator[cst.FunctionDef]:
    yield from (node for node in _defs(body) if isinstance(node, cst.FunctionDef))


def _classes(body) -> Iterator[cst.ClassDef]:
    yield from (node for node in _defs(body) if isinstance(node, cst.ClassDef))


def _defs(body) -> Iterator[cst.CSTNode]:
    """Every function and class definition, at any depth."""
    for statement in body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            yield statement
            inner = statement.body
            if isinstance(inner, cst.IndentedBlock):
                yield from _defs(inner.body)
        elif isinstance(statement, cst.BaseCompoundStatement):
            for block in _blocks(statement):
                yield from _defs(block)


class _RootCalls:
    """Finds a call whose callee starts with one of ``bound``'s names, outside
    choices: a call under `if HAVE_TE:` or `try:` is one branch of a function
    that also works without the library."""

    def __init__(self, bound: dict[str, str]) -> None:
        self.bound = bound
        self.found: Optional[str] = None
        self.choices = 0

    def visit_Call(self, node: cst.Call) -> None:
        root = node.func
        while isinstance(root, cst.Attribute):
            root = root.value
        if self.found is None and not self.choices and isinstance(root, cst.Name) and root.value in self.bound:
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
        if hit is not None and any(fnmatchcase(hit[0], pattern) for pattern in self.patterns):
            self.found = hit[0]
