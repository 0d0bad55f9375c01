"""Why a CUDA check stays as it is: the reasons the ``rename`` kind reads
off the code a check guards, switches off or hands on."""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from hpu_port.ast_nodes import dotted
from hpu_port.branches import NAMES_CUDA, Held
from hpu_port.device.evidence import of_options
from hpu_port.patterns import matches_any
from hpu_port.visitors._definitions import name_words
from hpu_port.visitors._device_string_index import gpu_enumeration
from hpu_port.visitors._guards import (
    flag_guards_nvidia_code,
    guarded_by,
    hold_guarded_body,
    library_switch,
    library_switch_through_flag,
    negated_at,
    nvidia_evidence,
    nvidia_only_use,
    own_hpu_path,
    passed_as,
    tensor_cuda_test,
)
from hpu_port.visitors._references import literal_value, shown_briefly, whole_tree, written
from hpu_port.walk import contains, descendants


def why_the_check_stays(node, around: list, ctx, definitions: tuple = ()) -> Optional[Held]:
    """Why a CUDA check must keep testing for CUDA, if it must: what it
    guards, switches or hands on is NVIDIA's or another library's.
    ``definitions``: the functions and classes around it, outermost first."""
    patterns = nvidia_evidence(ctx)
    guard = guarded_by(node, around)
    if restored_to_saved_device(guard, node, around):
        # `map_location = None if torch.cuda.is_available() else "cpu"`: on
        # Gaudi the tensors must go to the CPU first; `None` would put them
        # back on CUDA.
        why = "with `map_location=None` `torch.load` puts each tensor back on CUDA, where it was saved; every other device loads to the CPU, as Gaudi must: the HPU takes that arm"
        return Held("other-device", why, region=guard)
    used = guard is not None and (nvidia_only_use(guard, ctx, patterns) or passed_as(guard, around, patterns))
    if used:
        hold_guarded_body(guard, ctx, used, node)
        return Held("nvidia-only", f"the code it guards uses `{used}`, which has no Gaudi equivalent", guard)
    spreading = _spreads_over_gpus(definitions, ctx)
    if spreading:
        # CenterNet's and FairMOT's `_DataParallel`: `if not torch.cuda.is_available(): ... return`
        # in `__init__` keeps it on one device where there is no CUDA.
        return Held("nvidia-only", f"its class drives several GPUs from one process, as DataParallel does (`{spreading}`): a Gaudi process drives one card", guard)
    switched_off = _switches_off_nvidia_features(guard, node, of_options(ctx.options).unit_words)
    if switched_off:
        return Held("nvidia-only", f"where there is no CUDA it switches off `{switched_off}`, named for an NVIDIA-only library: on Gaudi it must still be switched off", guard)
    advised = _advises_nvidia_library(guard, of_options(ctx.options).library_names)
    if advised:
        return Held("nvidia-only", f"what it guards only says to use `{advised}`, which Gaudi cannot run: on Gaudi that advice would mislead", guard)
    ordinal = cuda_ordinal_arm(guard, node)
    if ordinal is not None:
        # `select_device('0' if torch.cuda.is_available() else 'cpu')`: "0" is
        # CUDA's device ordinal (a CUDA_VISIBLE_DEVICES value), not a Gaudi device.
        return Held("not-a-device", f"the value it picks for CUDA, {ordinal}, is CUDA's device ordinal, not a device name Gaudi reads", guard)
    indexed = indexed_device_arm(guard, node)
    if indexed is not None:
        # TorchServe's `location + ':' + str(properties.get('gpu_id'))`: no GPU id on Gaudi.
        return Held("not-a-device", f"the device it picks for CUDA, `{shown_briefly(indexed)}`, ends with CUDA's device index: on Gaudi the other arm's device is the one to use", guard)
    tensor_test = tensor_cuda_test(guard)
    if tensor_test is not None:
        # `if not data.is_cuda and torch.cuda.is_available(): raise ...`:
        # the tensor's answer stays CUDA's, so the pair would disagree on Gaudi.
        return Held("by-hand", f"the same test reads `{tensor_test}`, which the port cannot change: the two change together", guard)
    if isinstance(guard, cst.Assert) and guard.msg is not None and _says_cuda_is_required(written(guard.msg), of_options(ctx.options).library_names):
        # `assert has_apex and torch.cuda.is_available(), "APEX and CUDA required"`
        return Held("nvidia-only", f"the assertion says CUDA is required ({shown_briefly(written(guard.msg))}): the code after it needs NVIDIA")
    switch = library_switch(around, ctx) or library_switch_through_flag(around, ctx, guard)
    if switch and switch.endswith("=True"):
        return Held("unclear", f"the code it guards turns on `{switch}` of another library, which picks its own device: on Gaudi that library would not run on the HPU")
    if switch:
        return Held("unclear", f"it is handed to `{switch}` of another library, whose CUDA code the port does not change")
    hpu = own_hpu_path(ctx)
    if hpu:
        why = f"this function has its own path for the HPU (`{hpu}`), so the check picks CUDA's"
        return Held("other-device", why, quiet=True, region=guard)
    flag, used = flag_guards_nvidia_code(around, ctx, patterns)
    if used:
        # `cuda = "cuda" if torch.cuda.is_available() else "cpu"`: the
        # value for CUDA stays with its check.
        hold_guarded_body(guard, ctx, used)
        return Held("nvidia-only", f"`{flag}` keeps the answer, and a test of `{flag}` guards `{used}`, which has no Gaudi equivalent")
    return None


# "cuda is not available. Please check your installation.": the message only
# restates the check, which asks for the accelerator, not for NVIDIA's.
_ONLY_NOT_AVAILABLE = re.compile(
    r"(?i)^\W*(?:error:?\s*)?(?:no\s+cuda(?:\s+devices?)?(?:\s+(?:is\s+|was\s+)?(?:available|found|detected))?|cuda\s+(?:device\s+)?(?:is\s+)?(?:not|n't)\s+(?:available|found|detected))(?:\s+(?:on|in)\s+this\s+\w+)?\W*"
    r"(?:\s*(?:please\s+)?check\s+your\s+(?:installation|setup|environment|drivers?)\W*)?$"
)


def _says_cuda_is_required(message: str, libraries: tuple) -> bool:
    """Whether an assertion's message says the code after it needs CUDA for
    something only NVIDIA has (`"APEX and CUDA required"`, `"fused kernels
    require CUDA"`), not merely that the check failed, nor that a mode Gaudi
    has too needs an accelerator (`"Distributed mode requires CUDA."`)."""
    text = message.strip("\"'fbr ")
    if not NAMES_CUDA.search(text) or _ONLY_NOT_AVAILABLE.match(text):
        return False
    words = {word.lower() for word in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text)}
    return bool(_NVIDIA_ONLY_SUBJECT.search(text)) or bool(words & {library.lower() for library in libraries})


# What a message may say needs CUDA that Gaudi lacks as such.
_NVIDIA_ONLY_SUBJECT = re.compile(
    r"(?i)\b(?:kernels?|fused|extensions?|nvidia|cudnn|nvcc|compute capability|tensor cores?|flash[ -]?attention|"
    r"cuda (?:graphs?|streams?|toolkit|ops?)|custom ops?)\b"
)


def enumerates_gpus(node: cst.CSTNode, around: list, ctx) -> Optional[str]:
    """Why a GPU count stays: a loop over it names each GPU in turn
    (`[torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]`),
    for one process to use them all, which a Gaudi process cannot. A `for`
    loop whose body uses NVIDIA-only code is left to the CUDA-check holds,
    which keep it whole."""
    statement = next((n for n in reversed(around) if isinstance(n, cst.SimpleStatementLine)), None)
    comprehensions = [n for n in descendants(statement) if isinstance(n, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp))] if statement else []
    places = [(string, [statement]) for loop in comprehensions for string in _strings_in(loop)]
    for loop in (n for n in around if isinstance(n, cst.For) and contains(n.iter, node)):
        if nvidia_only_use(loop, ctx, nvidia_evidence(ctx)):
            continue
        lines = [n for n in descendants(loop.body) if isinstance(n, cst.SimpleStatementLine)]
        places += [(string, [loop, line]) for line in lines for string in _strings_in(line)]
    if any(gpu_enumeration(string, enclosing) for string, enclosing in places):
        return "the loop names each GPU in turn, for one process to use them all: a Gaudi process drives one card; give each its own process"
    return None


def _strings_in(node: cst.CSTNode) -> list:
    return [n for n in descendants(node) if isinstance(n, (cst.SimpleString, cst.FormattedString))]


def _switches_off_nvidia_features(guard, node, library_words: frozenset) -> Optional[str]:
    """`if torch.cuda.is_available() is False and load_trt: load_jit, load_trt = False, False`:
    the first switch, named for an NVIDIA-only library, that a negated CUDA
    check turns off (its body sets names to False or None and does nothing
    else but log)."""
    if not isinstance(guard, cst.If) or not _negates(guard.test, node):
        return None
    switches = []
    for statement in guard.body.body if isinstance(guard.body, cst.IndentedBlock) else ():
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        for small in statement.body:
            if isinstance(small, cst.Assign) and _all_off(small.value):
                switches += [n.value for t in small.targets for n in [t.target, *descendants(t.target)] if isinstance(n, cst.Name)]
            elif not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
                return None  # more than switching off and saying so
    return next((name for name in switches if set(name_words(name)) & library_words), None)


def _advises_nvidia_library(guard, library_names) -> Optional[str]:
    """The NVIDIA-only library a guarded block only talks about: every
    statement of its body is a call (`warnings.warn`, `print`, a logger)
    and one's text names the library (`we recommend using attn_impl:
    triton`; `flash` for flash_attn)."""
    if not isinstance(guard, cst.If) or not isinstance(guard.body, cst.IndentedBlock):
        return None
    texts = []
    for statement in guard.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        for small in statement.body:
            if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
                return None
            texts += [written(n).lower() for n in _strings_in(small.value)]
    words = {w for text in texts for w in re.findall(r"[a-z0-9]+", text)}
    return next((name for name in library_names if name.split("_")[0].lower() in words), None)


def _negates(test: cst.BaseExpression, node: cst.CSTNode) -> bool:
    """Whether ``test`` asks that the check holding ``node`` is false
    (`not torch.cuda.is_available()`, `... is False`, `== False`)."""
    for part in [test, *descendants(test)]:
        if isinstance(part, cst.UnaryOperation) and isinstance(part.operator, cst.Not) and contains(part.expression, node):
            return True
        if isinstance(part, cst.Comparison) and contains(part.left, node) and len(part.comparisons) == 1:
            target = part.comparisons[0]
            if isinstance(target.operator, (cst.Is, cst.Equal)) and written(target.comparator) == "False":
                return True
    return False


def _all_off(value: cst.BaseExpression) -> bool:
    if isinstance(value, (cst.Tuple, cst.List)):
        return bool(value.elements) and all(_all_off(e.value) for e in value.elements)
    return isinstance(value, cst.Name) and value.value in ("False", "None")


# -- the arms a CUDA check picks between -------------------------------------


def cuda_ordinal_arm(guard: Optional[cst.CSTNode], check: cst.CSTNode) -> Optional[str]:
    """The arm, as written, that a conditional expression picks when the CUDA
    ``check`` says yes, when that arm is a string of device ordinals (`'0'`,
    `'0,1'`): CUDA's numbering, which code hands to CUDA_VISIBLE_DEVICES."""
    if not isinstance(guard, cst.IfExp):
        return None
    arm = guard.orelse if negated_at(guard.test, check) else guard.body
    value = literal_value(written(arm)) if isinstance(arm, cst.SimpleString) else None
    if isinstance(value, str) and value and all(part.strip().isdigit() for part in value.split(",")):
        return written(arm)
    return None


def indexed_device_arm(guard: Optional[cst.CSTNode], check: cst.CSTNode) -> Optional[str]:
    """The arm, as written, that a conditional expression picks when the CUDA
    ``check`` says yes, when it appends CUDA's device index to a device name
    held elsewhere (`location + ':' + str(gpu_id)`, TorchServe's handlers):
    the index is CUDA's, and the name is not a literal the port can fix."""
    if not isinstance(guard, cst.IfExp):
        return None
    arm = guard.orelse if negated_at(guard.test, check) else guard.body
    operands = _added(arm)
    if len(operands) < 3 or isinstance(operands[0], (cst.SimpleString, cst.FormattedString)):
        return None
    colon = any(isinstance(o, cst.SimpleString) and literal_value(written(o)) == ":" for o in operands[1:-1])
    return written(arm) if colon else None


def _added(expr: cst.BaseExpression) -> list:
    """The operands of a chain of `+`, left to right."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return [*_added(expr.left), *_added(expr.right)]
    return [expr]


def restored_to_saved_device(guard: Optional[cst.CSTNode], check: cst.CSTNode, around: list) -> bool:
    """Whether what the CUDA ``check`` picks is `map_location=None`
    (`map_location = None if torch.cuda.is_available() else "cpu"`, or the
    same as an `if`): `torch.load` then puts each tensor back on the device
    it was saved from, CUDA's; every other device takes the other arm."""
    if isinstance(guard, cst.IfExp):
        arm = guard.orelse if negated_at(guard.test, check) else guard.body
        if not (isinstance(arm, cst.Name) and arm.value == "None"):
            return False
        holder = around[around.index(guard) - 1] if guard in around and around.index(guard) > 0 else None
        if isinstance(holder, cst.Arg):
            return holder.keyword is not None and holder.keyword.value == _MAP_LOCATION
        return isinstance(holder, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign) and small.value is guard and any(_names_map_location(t.target) for t in small.targets)
            for small in holder.body
        )
    if isinstance(guard, cst.If) and isinstance(guard.body, cst.IndentedBlock) and not negated_at(guard.test, check):
        return any(
            isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == "None"
            and any(_names_map_location(t.target) for t in small.targets)
            for line in guard.body.body if isinstance(line, cst.SimpleStatementLine)
            for small in line.body
        )
    return False


_MAP_LOCATION = "map_location"


def _names_map_location(target: cst.BaseExpression) -> bool:
    name = target.value if isinstance(target, cst.Name) else target.attr.value if isinstance(target, cst.Attribute) else ""
    return _MAP_LOCATION in name


def counts_for_data_parallel(call: Optional[cst.Call], around: list, target: Optional[str], ctx) -> Optional[str]:
    """Why a GPU count stays: in a module that builds DataParallel, the count
    sizes what one process gives every GPU (`opt.batch_size *= n_gpu`,
    `device_ids = list(range(n))`). A Gaudi process drives one card, and
    torch.cuda's count, 0 there, keeps the single-device path; the HPU's
    would put every card's batch on one. A count that sizes processes
    (`spawn(nprocs=n)`, `batch_size // n`) is the process group's, not this."""
    tree = whole_tree(ctx)
    if call is None or tree is None or not _builds_data_parallel(tree):
        return None
    in_range = any(isinstance(n, cst.Call) and written(n.func) == "range" and contains(n, call) for n in around)
    if not in_range:
        uses = _uses_of(tree, target) if target else set()
        if not uses & {"multiplied", "range"} or uses & {"divided", "processes"}:
            return None
    return (
        "it counts the GPUs one process drives through DataParallel (it sizes their share of the batch or lists "
        "their ids): a Gaudi process drives one card (HPU607), and torch.cuda's count, 0 there, keeps the "
        "single-device path; give each card a process of its own with DistributedDataParallel"
    )


def _builds_data_parallel(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Call) and dotted(n.func).split(".")[-1] == "DataParallel" for n in ast.walk(tree))


_PROCESS_KEYWORDS = frozenset({"nprocs", "nproc", "world_size", "num_processes"})


def _uses_of(tree: ast.Module, target: str) -> set:
    """How the code reads the name or attribute ``target`` (`n_gpu`, `opt.num_gpu`):
    multiplied, divided (or a modulo), a `range` bound, or a number of processes."""
    uses = set()
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if not isinstance(child, (ast.Name, ast.Attribute)) or not isinstance(child.ctx, ast.Load) or dotted(child) != target:
                continue
            if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mult):
                uses.add("multiplied")
            elif isinstance(parent, (ast.BinOp, ast.AugAssign)) and isinstance(parent.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                uses.add("divided")
            elif isinstance(parent, ast.AugAssign) and isinstance(parent.op, ast.Mult):
                uses.add("multiplied")
            elif isinstance(parent, ast.keyword) and parent.arg in _PROCESS_KEYWORDS:
                uses.add("processes")
            elif isinstance(parent, ast.Call) and dotted(parent.func) == "range":
                uses.add("range")
            elif isinstance(parent, ast.Call) and dotted(parent.func).split(".")[-1] == "spawn":
                uses.add("processes")
    return uses


# What DataParallel is made of: copying a module to each GPU and running the
# copies side by side, from one process.
_SPREAD_OVER_GPUS = ("torch.nn.parallel*.replicate", "torch.nn.parallel*.parallel_apply")


def _spreads_over_gpus(definitions, ctx) -> Optional[str]:
    """The call of DataParallel's parts (`replicate`, `parallel_apply`) in
    the class the check's method belongs to, if any: a copy of DataParallel."""
    cls = next((n for n in reversed(definitions) if isinstance(n, cst.ClassDef)), None)
    if cls is None:
        return None
    for call in (n for n in descendants(cls) if isinstance(n, cst.Call)):
        hit = ctx.qualify(call.func)
        if hit is not None and matches_any(hit[0], _SPREAD_OVER_GPUS):
            return written(call.func)
    return None
