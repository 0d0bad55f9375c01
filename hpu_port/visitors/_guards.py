"""Checks that test for CUDA, and whether what they guard is NVIDIA-only code.

`if torch.cuda.is_available():` guards two kinds of code: device-generic code
(move the model to "cuda"), which a port turns into HPU code along with the
check, and NVIDIA-only code (compute capability, NVML, Triton kernels), which
must not start running on Gaudi because the check now says yes. A check is
ported only when what it guards holds none of the NVIDIA-only names.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Iterable, Optional

import libcst as cst

from hpu_port.branches import Held
from hpu_port.device.evidence import Guard, of_options
from hpu_port.patterns import matches_any
from hpu_port.visitors._definitions import name_words
from hpu_port.visitors._device_tables import table_for
from hpu_port.visitors._enclosing import enclosing
from hpu_port.visitors._references import literal_value, shown_briefly, written
from hpu_port.walk import contains, descendants, walk

# The conditionals, loops, arguments, dicts and statements that enclose the
# node being visited (``self.around``), outermost first.
Surroundings = enclosing(
    "around", "If", "IfExp", "While", "For", "Call", "Arg", "Dict", "Assert", "BooleanOperation", "SimpleStatementLine"
)


def guarded_by(node: cst.CSTNode, around: Iterable[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The innermost `if`, `while`, `assert` or conditional expression among
    ``around`` (outermost first) whose test holds ``node`` (or `for` loop
    whose iterable does: `for i in range(torch.cuda.device_count()):` runs
    its body only where there are CUDA devices); else the outermost
    `and`/`or` that holds it in its statement (`ok = torch.cuda.is_available()
    and torch.cuda.get_device_capability() >= (7, 5)`): a guard too."""
    around = list(around)
    for candidate in reversed(around):
        test = candidate.iter if isinstance(candidate, cst.For) else getattr(candidate, "test", None)
        if isinstance(candidate, (cst.If, cst.IfExp, cst.While, cst.For, cst.Assert)) and test is not None and _holds(test, node):
            return candidate
    operations = []
    for candidate in reversed(around):
        if isinstance(candidate, (cst.SimpleStatementLine, cst.If, cst.While, cst.For)):
            break
        if isinstance(candidate, cst.BooleanOperation):
            operations.append(candidate)
    return operations[-1] if operations else None


def hold_guarded_body(guard: cst.CSTNode, ctx, used: str, check: Optional[cst.CSTNode] = None) -> None:
    """The body of a guard kept for NVIDIA-only code runs only on NVIDIA GPUs:
    what other rules would change inside it is reported too, not half-ported
    (`if torch.cuda.is_available(): torch.cuda.manual_seed(...); wrap(torch.cuda.default_generators)`).
    Only a plain test: under `if not ...:` the body is the other path. With
    the CUDA ``check`` the test holds, a `not` on another operand
    (`not args.disable_cuda and torch.cuda.is_available()`) is no negation."""
    if isinstance(guard, cst.IfExp) and not negated(written(guard.test)):
        # `str(torch.cuda.get_device_name()) if is_cuda else ""`: the arm for CUDA.
        reason = f"it is kept for NVIDIA GPUs, to use `{used}`, which has no Gaudi equivalent"
        name = f"the value for `{shown_briefly(written(guard.test))}`"
        for part in (guard.body, guard.test):
            ctx.other_backend.mark(part, reason, name=name, at=guard.test)
        return
    if isinstance(guard, cst.BooleanOperation) and isinstance(guard.operator, cst.And):
        # `SUPPORT_CUDA and torch.cuda.is_bf16_supported()`: what follows the
        # flag is evaluated on NVIDIA GPUs only.
        reason = f"it is kept for NVIDIA GPUs, to use `{used}`, which has no Gaudi equivalent"
        name = f"what follows `{shown_briefly(written(guard.left))} and`"
        ctx.other_backend.mark(guard.right, reason, name=name, at=guard.left)
        return
    if not isinstance(guard, (cst.If, cst.While, cst.For)) or not isinstance(guard.body, cst.IndentedBlock):
        return
    looped = isinstance(guard, cst.For)
    tested = guard.iter if looped else guard.test
    test = written(tested)
    reason = f"it is kept for NVIDIA GPUs, to use `{used}`, which has no Gaudi equivalent"
    after = code_after_exit(guard, ctx)
    if after:
        # `if not torch.cuda.is_available(): return` guards what follows it.
        for statement in after:
            ctx.other_backend.mark(statement, reason, name=f"the code after `{shown_briefly(test)}`", at=guard.test)
        return
    if negated_at(tested, check) if check is not None and contains(tested, check) else negated(test):
        return  # the body is the other path
    unit = "the loop over" if looped else "the branch of"
    # The test too: `torch.cuda.is_available() and pynvml.nvmlInit() is None`
    # half ported would call pyhlml on NVIDIA GPUs.
    for part in (guard.body, tested):
        ctx.other_backend.mark(part, reason, name=f"{unit} `{shown_briefly(test)}`", at=tested)


def negated(test: str) -> bool:
    # `x is not None` is a plain test; `not`, `!=` and `not in` turn it around.
    return bool(re.search(r"(?<!\bis )\bnot\b", test)) or "!=" in test


def negated_at(test: cst.BaseExpression, node: cst.CSTNode) -> bool:
    """Whether ``test`` is true when the check ``node`` inside it says no
    (`not torch.cuda.is_available()`, `x.device.type != "cuda"`); a `not` on
    another operand (`not done and torch.cuda.is_available()`) does not count."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return not negated_at(test.expression, node) if contains(test.expression, node) else False
    if isinstance(test, cst.BooleanOperation):
        side = test.left if contains(test.left, node) else test.right
        return negated_at(side, node)
    if isinstance(test, cst.Comparison):
        return any(isinstance(t.operator, (cst.NotEqual, cst.NotIn, cst.IsNot)) for t in test.comparisons)
    return False


def code_after_exit(guard: cst.CSTNode, ctx) -> list:
    """For `if not <check>: return` (or raise, continue, break), the
    statements after it in its block: the code the check guards."""
    if not isinstance(guard, cst.If) or guard.orelse is not None or not negated(written(guard.test)):
        return []
    body = guard.body.body if isinstance(guard.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    exits = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))
    statements = list(ctx.other_backend.statements_here())
    if not exits or guard not in statements:
        return []
    return statements[statements.index(guard) + 1:]


def nvidia_evidence(ctx, device: str = "") -> Guard:
    """What marks NVIDIA-only code for a check of ``device`` in this file's
    run: the device evidence, with the project's additions."""
    return of_options(ctx.options).guard(device)


def nvidia_only_use(guard: cst.CSTNode, ctx, patterns: Guard, flag: str = "") -> Optional[str]:
    """The first NVIDIA-only name the guarded code uses (as written), or None.
    A ``flag`` the guard tests is not one itself (`if USE_CUDA:`)."""
    finder = _Finder(ctx, patterns)
    after = code_after_exit(guard, ctx)
    for part in (guard, *after):
        walk(part, [finder])
    if finder.result() is not None:
        return finder.result()
    # Words and strings say what the branch itself is for: the test and the
    # code it runs, not the `else`/`elif` arms after it.
    markers = _Markers(patterns, flag)
    for part in (*_test_and_body(guard), *after):
        walk(part, [markers])
    if markers.found is None and markers.strings:
        # `if torch.cuda.is_available(): device = "cuda"` where the module
        # checks device names against a table that has no Gaudi entry.
        return table_for(ctx.module, patterns.tables, markers.strings.__contains__)
    return markers.found


def nvidia_name_in(node: cst.CSTNode, ctx, patterns: Guard) -> Optional[str]:
    """The first NVIDIA-only name ``node`` uses (as written), or None."""
    finder = _Finder(ctx, patterns)
    walk(node, [finder])
    return finder.result()


def cuda_branch(guard: cst.CSTNode, ctx, patterns: Guard) -> Optional[str]:
    """For a branch whose test itself names CUDA (`if IS_CUDA_SYSTEM:`, a
    CUDA-only check) and whose code uses an NVIDIA-only API, that API: the
    port leaves both, so the branch still runs only on NVIDIA GPUs."""
    if not isinstance(guard, (cst.If, cst.While)):
        return None
    finder = _Finder(ctx, patterns)
    walk(guard, [finder])
    used = finder.result()
    if used is None:
        return None
    test_finder, markers = _Finder(ctx, patterns), _Markers(patterns)
    walk(guard.test, [test_finder, markers])
    return used if test_finder.result() or markers.found else None


def keep_guards_over_kept_cuda(ctx, flipped: list) -> None:
    """Withdraw the rename of a guard (`if torch.cuda.is_available():`) whose
    code keeps a CUDA call or device the port could not change there
    (`torch.cuda.memory_stats()` read with CUDA's keys, a call held for
    another reason): renamed, the check would send Gaudi into that CUDA code."""
    for hit, guard in flipped:
        if not hit.has_fix:
            continue
        inside = [h for h in ctx.hits_inside(guard.body) if h.rule.category != "review"]
        kept = next((h for h in inside if _kept_cuda(h)), None)
        if kept is None and inside and all(_harmless(h) for h in inside):
            # It guards only what does nothing on Gaudi (`torch.cuda.empty_cache()`):
            # nothing to gain from the HPU's answer, so it stays as it is.
            kept = inside[0]
        if kept is not None:
            why = f"the code it guards keeps `{shown_briefly(written(kept.node))}`, which the port could not change there"
            ctx.withdraw_fix(hit, Held("nvidia-only", why, guard))
            continue
        # `_update_num_consecutive_thrashes(...)`, a function of this module that keeps CUDA.
        for function in _module_functions_called(guard.body, ctx.module):
            kept = next((h for h in ctx.hits_inside(function) if _kept_cuda(h)), None)
            if kept is not None:
                why = f"the code it guards calls `{function.name.value}`, which keeps `{shown_briefly(written(kept.node))}`"
                ctx.withdraw_fix(hit, Held("nvidia-only", why, guard))
                break
        if hit.has_fix:
            inherited = _inherited_call(ctx, guard)
            if inherited is not None:
                method, base = inherited
                why = f"the code it guards calls `self.{method}`, inherited from `{base}` of another library: what it does on Gaudi is unknown"
                ctx.withdraw_fix(hit, Held("unclear", why, guard))
    _keep_readers_of_kept_keys(ctx, flipped)


def _keep_readers_of_kept_keys(ctx, flipped: list) -> None:
    """A guard whose code reads a key (`log_dict["memory"]`) that only the
    code of a kept guard sets stays a CUDA check too: renamed, Gaudi would
    read a key nothing set there."""
    written_keys = {
        key
        for hit, guard in flipped
        if not hit.has_fix and hit.kept is not None
        for key in _subscript_keys(guard.body, assigned=True)
    }
    if not written_keys:
        return
    for hit, guard in flipped:
        if hit.has_fix:
            read = sorted(_subscript_keys(guard.body, assigned=False) & written_keys)
            if read:
                why = f"the code it guards reads `[{read[0]!r}]`, which only a CUDA check kept for NVIDIA sets"
                ctx.withdraw_fix(hit, Held("nvidia-only", why, guard))


def _subscript_keys(body: cst.CSTNode, assigned: bool) -> set:
    """The string keys of subscripts in ``body``: assigned to, or read."""
    targets = {
        id(target.target)
        for node in descendants(body) if isinstance(node, cst.Assign)
        for target in node.targets
    }
    keys = set()
    for node in descendants(body):
        if isinstance(node, cst.Subscript) and (id(node) in targets) == assigned and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                keys.add(index.value.evaluated_value)
    return keys


def _inherited_call(ctx, guard: cst.CSTNode) -> Optional[tuple[str, str]]:
    """(method, base) for a `self.method(...)` the guarded code calls that
    its class does not define and inherits from another library's class
    (`self._get_max_memory(runner)` in a subclass of mmcv's `TextLoggerHook`):
    the port cannot see what that method does."""
    calls = {
        node.func.attr.value
        for node in descendants(guard.body)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name) and node.func.value.value == "self"
    }
    if not calls:
        return None
    owner = next((c for c in descendants(ctx.module) if isinstance(c, cst.ClassDef) and contains(c.body, guard)), None)
    if owner is None or not owner.bases:
        return None
    bases = [ctx.qualify(base.value) for base in owner.bases]
    if any(hit is None or hit[0].split(".")[0] in ctx.facts.first_party for hit in bases):
        return None  # a base of the project's own may define it
    defined = {s.name.value for s in owner.body.body if isinstance(s, cst.FunctionDef)}
    method = next((name for name in sorted(calls) if name not in defined), None)
    return (method, bases[0][0].rsplit(".", 1)[-1]) if method is not None else None


def kept_cuda_inside(ctx, tree: cst.CSTNode):
    """The first finding inside ``tree`` that leaves CUDA code there: a CUDA
    call the port could not change, or one it reports as unsupported."""
    return next((h for h in ctx.hits_inside(tree) if _kept_cuda(h) or _unsupported(h)), None)


def _unsupported(hit) -> bool:
    return hit.rule.category == "unsupported" and not hit.has_fix and hit.rule.kind != "other-backend"


def _module_functions_called(body: cst.CSTNode, module: cst.Module) -> list:
    called = {node.func.value for node in descendants(body) if isinstance(node, cst.Call) and isinstance(node.func, cst.Name)}
    return [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value in called] if called else []


# Rules that port what only works on CUDA: a finding of theirs without its fix
# leaves CUDA code behind.
_CUDA_CATEGORIES = frozenset({"device", "memory", "distributed", "graphs", "libraries"})


def _kept_cuda(hit) -> bool:
    # A switch left as it is because it does nothing on Gaudi (`cudnn.benchmark = True`) keeps no CUDA code.
    return hit.rule.has_fix and not hit.has_fix and hit.rule.category in _CUDA_CATEGORIES and not _harmless(hit)


def _harmless(hit) -> bool:
    return hit.kept is not None and hit.kept.reason == "harmless"


def library_switch(around: list, ctx) -> Optional[str]:
    """``keyword=`` when the check is handed to another library's option
    named for CUDA (`MergeOptions(cuda=torch.cuda.is_available())`,
    `knn(..., gpu=device.type == "cuda")`): that library then runs its own
    CUDA code, which the port does not change."""
    index = next((i for i in range(len(around) - 1, 0, -1) if isinstance(around[i], (cst.Arg, cst.SimpleStatementLine))), 0)
    if index == 0:
        return None
    arg, call = around[index], around[index - 1]
    if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call) or not _a_library_switch(arg, call, ctx):
        return None
    return f"{arg.keyword.value}="


def _a_library_switch(arg: cst.Arg, call: cst.Call, ctx) -> bool:
    """Whether ``arg`` is an option named for CUDA or half precision of a
    call into another library (not the project's own code)."""
    if arg.keyword is None or not set(of_options(ctx.options).switch_keywords) & set(name_words(arg.keyword.value)):
        return False
    hit = ctx.qualify(call.func)
    return hit is not None and hit[0].split(".")[0] not in ctx.facts.first_party


def library_switch_through_flag(around: list, ctx, guard: Optional[cst.CSTNode] = None) -> Optional[str]:
    """``keyword=`` when the check is assigned to a name (`half = True if
    torch.cuda.is_available() else False`), or ``guard`` (the `if` it tests)
    sets one (`if torch.cuda.is_available(): use_half = True`), that the same
    scope hands to such an option of another library (`RealESRGANer(...,
    half=half)`)."""
    statement = next((n for n in reversed(around) if isinstance(n, cst.SimpleStatementLine)), None)
    small = statement.body[0] if statement is not None and len(statement.body) == 1 else None
    targets = [small.targets[0].target] if isinstance(small, cst.Assign) and len(small.targets) == 1 else []
    if isinstance(guard, cst.If):
        targets += [t.target for n in descendants(guard.body) if isinstance(n, cst.Assign) for t in n.targets]
    for target in targets:
        flag, where = _flag_and_where(target, ctx)
        if flag and where is not None:
            switch = _handed_to_a_switch(flag, where, ctx)
            if switch:
                return switch
    return _switched_on_in(guard, ctx) if isinstance(guard, cst.If) else None


def _switched_on_in(guard: cst.If, ctx) -> Optional[str]:
    """``keyword=`` when an arm of the `if` turns such an option of another
    library on outright (`RealESRGANer(..., half=True)` where CUDA is found):
    the library still picks its own device, so on Gaudi it would run in half
    precision on the host."""
    for call in (n for n in descendants(guard) if isinstance(n, cst.Call)):
        for arg in call.args:
            if isinstance(arg.value, cst.Name) and arg.value.value == "True" and _a_library_switch(arg, call, ctx):
                return f"{arg.keyword.value}=True"
    return None


def _handed_to_a_switch(flag: str, where: cst.CSTNode, ctx) -> Optional[str]:
    for call in (n for n in descendants(where) if isinstance(n, cst.Call)):
        for arg in call.args:
            if arg.keyword is not None and written(arg.value) == flag and _a_library_switch(arg, call, ctx):
                return f"{arg.keyword.value}="
    return None


def own_hpu_path(ctx) -> Optional[str]:
    """What names the HPU in the function being walked (`DeviceHPU()`,
    `device == "hpu"`, `is_hpu_available()`), if anything: code that already
    has its own HPU path tests for CUDA to pick CUDA's."""
    function = ctx.scope.node
    if not isinstance(function, cst.FunctionDef):
        return None
    finder = _HpuNames()
    walk(function, [finder])
    if finder.found is not None and ctx.origin is not None and not _written_before_the_port(ctx, function, finder.found):
        return None  # an earlier pass wrote it: the port's own output is no evidence
    return finder.found


def _origin_tree(ctx):
    """The standard parser's tree of the file as read, parsed once per pass."""
    import ast

    if getattr(ctx, "_origin_tree", None) is None:
        try:
            ctx._origin_tree = ast.parse(ctx.origin)
        except (SyntaxError, ValueError):
            ctx._origin_tree = False
    return ctx._origin_tree or None


def _written_before_the_port(ctx, function: cst.FunctionDef, name: str) -> bool:
    """Whether the function of that name in the file as read already said ``name``."""
    import ast

    tree = _origin_tree(ctx)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function.name.value:
            if name in (ast.get_source_segment(ctx.origin.decode("utf-8", "replace"), node) or ""):
                return True
    return False


class _HpuNames:
    """A name or string that picks the HPU. The key of a table (`{"hpu": "hccl",
    "cuda": "nccl"}`) only lists it beside the others."""

    def __init__(self) -> None:
        self.found: Optional[str] = None
        self.keys: set = set()

    def visit_Dict(self, node) -> None:
        self.keys.update(element.key for element in node.elements if isinstance(element, cst.DictElement))

    def visit_Name(self, node) -> None:
        self._check(node.value)

    def visit_Attribute(self, node) -> None:
        self._check(node.attr.value)

    def visit_SimpleString(self, node) -> None:
        value = literal_value(node.value)
        if self.found is None and node not in self.keys and isinstance(value, str) and value.split(":")[0] == "hpu":
            self.found = node.value

    def _check(self, name: str) -> None:
        if self.found is None and "hpu" in name_words(name):
            self.found = name


def flag_guards_nvidia_code(around: list, ctx, patterns: Guard) -> tuple[str, Optional[str]]:
    """For a check assigned to a name (`cuda = torch.cuda.is_available()`),
    the name and the first NVIDIA-only name that a test of it guards in the
    same scope (`"onnxruntime-gpu" if cuda else "onnxruntime"`): the check
    flows into those tests."""
    statement = next((n for n in reversed(around) if isinstance(n, cst.SimpleStatementLine)), None)
    small = statement.body[0] if statement is not None and len(statement.body) == 1 else None
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return "", None
    flag, where = _flag_and_where(small.targets[0].target, ctx)
    if not flag:
        return "", None
    tests = _Tests(flag)
    walk(where, [tests])
    for guard in tests.found:
        used = nvidia_only_use(guard, ctx, patterns, flag.rsplit(".", 1)[-1])
        if used:
            for test in tests.found:
                hold_guarded_body(test, ctx, used)
            return flag, used
    return flag, None


def _flag_and_where(target: cst.BaseExpression, ctx) -> tuple[str, Optional[cst.CSTNode]]:
    """The flag a check is assigned to and the code that may test it: a name
    in its own scope, `self.<name>` in the methods of its class."""
    if isinstance(target, cst.Name):
        return target.value, ctx.scope.node
    scope = ctx.scope
    if isinstance(target, cst.Attribute) and written(target.value) == "self" and scope.parent is not None and scope.parent.is_class:
        return written(target), scope.parent.node
    return "", None


class _Tests:
    """The `if`s, `while`s and conditional expressions whose test reads ``flag``."""

    def __init__(self, flag: str) -> None:
        self.flag = flag
        self.found: list = []

    def visit_If(self, node) -> None:
        # `if device == "cuda":` is a device test of its own, which the
        # device-string rule keeps where its code is NVIDIA's: the value the
        # check chose may change (`"hpu" if torch.hpu.is_available() ...`).
        if _reads(node.test, self.flag) and not _compares_with_a_string(node.test):
            self.found.append(node)

    visit_IfExp = visit_While = visit_If

    def visit_BooleanOperation(self, node) -> None:
        # `SUPPORT_FP16 = SUPPORT_CUDA and torch.cuda.get_device_capability(0)[0] >= 7`:
        # what follows `flag and` is evaluated only where the flag is true.
        left = node.left
        if isinstance(node.operator, cst.And) and not isinstance(left, cst.UnaryOperation) and _reads(left, self.flag):
            if not _compares_with_a_string(left):
                self.found.append(node)


def _compares_with_a_string(test: cst.CSTNode) -> bool:
    return any(
        isinstance(node, cst.Comparison)
        and any(isinstance(part, cst.SimpleString) for part in (node.left, *(c.comparator for c in node.comparisons)))
        for node in descendants(test)
    )


def _reads(test: cst.CSTNode, flag: str) -> bool:
    names = _NameFinder(flag)
    walk(test, [names])
    return names.seen


class _NameFinder:
    """Whether code reads a name, or an attribute written `self.<name>`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen = False

    def visit_Name(self, node) -> None:
        self.seen |= node.value == self.name

    def visit_Attribute(self, node) -> None:
        self.seen |= "." in self.name and written(node) == self.name


def _test_and_body(guard: cst.CSTNode) -> list:
    if isinstance(guard, (cst.If, cst.IfExp, cst.While)):
        return [guard.test, guard.body]
    if isinstance(guard, cst.For):
        return [guard.iter, guard.body]
    return [guard]


def tensor_cuda_test(guard: Optional[cst.CSTNode]) -> Optional[str]:
    """`x.is_cuda` read in the guard's own test (not its body), as written."""
    test = getattr(guard, "test", None)
    if test is None:
        return None
    found = next((n for n in descendants(test) if isinstance(n, cst.Attribute) and n.attr.value == "is_cuda"), None)
    return written(found) if found is not None else None


def passed_as(guard: cst.CSTNode, around: list, patterns: Guard) -> Optional[str]:
    """``keyword=`` when the guard (a conditional expression) is the value of
    one of the evidence's keyword arguments (`map_location=...`)."""
    for node in around[: around.index(guard)] if guard in around else ():
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in patterns.keywords:
            return f"{node.keyword.value}="
    return None


def _holds(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    finder = _Identity(node)
    walk(tree, [finder])
    return finder.seen


class _Identity:
    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node
        self.seen = False

    def visit_Name(self, node) -> None:
        self.seen |= node is self.node

    def visit_Attribute(self, node) -> None:
        self.seen |= node is self.node

    def visit_Comparison(self, node) -> None:
        self.seen |= node is self.node

    def visit_SimpleString(self, node) -> None:
        self.seen |= node is self.node


class _Finder:
    """The first NVIDIA-only name the code uses. An exception's name counts
    only where the same code does not also use its `unless` (DataParallel is
    NVIDIA-only set-up, unless the branch also builds DistributedDataParallel,
    which Gaudi needs), nor moves anything to the device (`.cuda()`) in its
    own block: such a branch sets up the device too, which Gaudi needs as
    well (a move in the other arm of the `if` is the other arm's)."""

    def __init__(self, ctx, patterns: Guard) -> None:
        self.ctx = ctx
        self.patterns = patterns.names
        self.keywords = patterns.keywords
        self.conditional = patterns.exceptions
        self.found: Optional[str] = None
        self.candidate: Optional[tuple[str, str]] = None
        self.excepted: set[str] = set()
        self.blocks: list = []  # the blocks around the node visited
        self.candidate_block: Optional[cst.CSTNode] = None
        self.moved_in: set = set()  # every block around a move
        self.harmless = patterns.harmless
        self.switching: Optional[cst.CSTNode] = None  # the target of a harmless switch being set

    def visit_AssignTarget(self, node) -> None:
        hit = self.ctx.qualify(node.target) if self.switching is None and self.harmless else None
        if hit is not None and matches_any(hit[0], self.harmless):
            self.switching = node

    def leave_AssignTarget(self, node) -> None:
        if node is self.switching:
            self.switching = None

    def result(self) -> Optional[str]:
        moves = self.candidate_block in self.moved_in
        if self.found is None and self.candidate is not None and self.candidate[1] not in self.excepted and not moves:
            return self.candidate[0]
        return self.found

    def visit_Call(self, node) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
            self.moved_in.update(self.blocks or [None])

    def visit_IndentedBlock(self, node) -> None:
        self.blocks.append(node)

    def leave_IndentedBlock(self, node) -> None:
        self.blocks.pop()

    def visit_Attribute(self, node) -> None:
        self._check(node)

    def visit_Name(self, node) -> None:
        self._check(node)

    def visit_Import(self, node) -> None:
        # `import torch.distributed._symmetric_memory as symm_mem` inside the code itself.
        for alias in node.names:
            self._check_module(written(alias.name))

    def visit_ImportFrom(self, node) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = written(node.module)
        for alias in node.names:
            self._check_module(f"{module}.{written(alias.name)}")

    def _check_module(self, name: str) -> None:
        if self.found is None and matches_any(name, self.patterns):
            self.found = name

    def visit_Arg(self, node) -> None:
        # `map_location="cpu" if not torch.cuda.is_available() else None` picks
        # where a checkpoint's tensors go: neither arm is right on Gaudi as such.
        if node.keyword is not None and node.keyword.value in self.keywords and self.found is None:
            self.found = f"{node.keyword.value}="

    def _check(self, node) -> None:
        if self.found is not None or self.switching is not None:
            return
        hit = self.ctx.qualify(node)
        if hit is None:
            self._check_project(node)
            return
        if self.ctx.facts.why_nvidia_only(hit[0]):
            self.found = hit[0]
            return
        if matches_any(hit[0], self.patterns):
            self.found = hit[0]
        for pattern, exception in self.conditional:
            if self.candidate is None and fnmatchcase(hit[0], pattern):
                self.candidate = (hit[0], exception)
                self.candidate_block = self.blocks[-1] if self.blocks else None
            if fnmatchcase(hit[0], exception):
                self.excepted.add(exception)


    def _check_project(self, node) -> None:
        """A function of this module that the project facts know only NVIDIA
        GPUs run (it builds CUDA sources through a helper of another module)."""
        if not isinstance(node, cst.Name) or not self.ctx.facts.nvidia_only:
            return
        module = self.ctx.facts.module_name(self.ctx.path) if self.ctx.path else ""
        qualified = f"{module}.{node.value}" if module else node.value
        if node.value in self.ctx.scopes.module.locals and self.ctx.facts.why_nvidia_only(qualified):
            self.found = node.value


def _matches(text: str, patterns: tuple) -> bool:
    return matches_any(text, patterns)


class _Markers:
    """Names, strings and error messages that say a branch is for NVIDIA GPUs."""

    def __init__(self, patterns: Guard, flag: str = "") -> None:
        self.patterns = patterns
        self.flag = flag
        self.found: Optional[str] = None
        self.strings: set = set()
        self.raising = 0

    def visit_Raise(self, node) -> None:
        self.raising += 1

    def leave_Raise(self, node) -> None:
        self.raising -= 1

    def visit_FormattedStringText(self, node) -> None:
        self._check_error(node.value)

    def visit_Attribute(self, node) -> None:
        self._check_word(node.attr.value)

    def visit_Name(self, node) -> None:
        self._check_word(node.value)

    def visit_SimpleString(self, node) -> None:
        # `"onnxruntime-gpu" if ... else "onnxruntime"`: a CUDA build chosen by name.
        value = literal_value(node.value)
        if isinstance(value, str):
            self.strings.add(value)
            self._check_error(value)
        if self.found is None:
            # Names only (`onnxruntime-gpu`, `CUDAExecutionProvider`): a message
            # that mentions a library does not make the branch NVIDIA-only.
            if isinstance(value, str) and not any(c.isspace() for c in value) and _matches(value, self.patterns.strings):
                self.found = value

    def _check_error(self, text: str) -> None:
        # `raise ValueError("... should work with 'fp64' ...")`: the branch
        # explains a failure of a CUDA capability, which Gaudi lacks.
        if self.found is None and self.raising:
            text = text.lower()
            for pattern in self.patterns.errors:
                if fnmatchcase(text, pattern):
                    self.found = pattern.strip("*")
                    return

    def _check_word(self, word: str) -> None:
        # `self.use_triton`, `enable_cuda_graph`: names that say what the branch is for.
        if self.found is None and word != self.flag and _matches(word, self.patterns.words):
            self.found = word
