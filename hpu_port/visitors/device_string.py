"""How the ``device-string`` kind matches and fixes code (see ``hpu_port.kinds.device_string``)."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Callable, Optional

import libcst as cst

from hpu_port.branches import LIGHTNING_GPU_TEST, Held
from hpu_port.context import FileContext
from hpu_port.device.evidence import by_name, of_options
from hpu_port.kinds.device_string import name_parts
from hpu_port.model import Rule
from hpu_port.patterns import matches_any
from hpu_port.visitors._device_lists import added_after, device_chain, extended_test
from hpu_port.visitors._device_string_index import (
    IndexedDevices,
    current_device,
    plain_string,
)
from hpu_port.visitors._device_string_parts import (
    literal_aliases,
    literal_type,
    names_and_keys,
    outside_literal,
    replace_first_part,
    replacement_taken,
    string_constants,
    strings_in,
    target_name,
)
from hpu_port.visitors._device_string_holds import DeviceStringHolds
from hpu_port.visitors._device_tables import device_table
from hpu_port.visitors._guards import (
    Surroundings,
    keep_guards_over_kept_cuda,
    negated,
    nvidia_evidence,
)
from hpu_port.visitors._references import (
    last_name,
    literal_value,
    shown_briefly,
    written,
)
from hpu_port.walk import contains, descendants

ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
# Keywords of an argparse-like call that hold values of the option it names.
OPTION_VALUES = frozenset({"default", "choices", "const"})
STRING_TESTS = frozenset({"startswith", "endswith"})
# String methods that take a device's name apart (`str(device).strip("cuda:")`).
NAME_PARSERS = frozenset({"strip", "lstrip", "rstrip", "replace", "split", "rsplit", "removeprefix", "removesuffix", "partition", "rpartition"})
# Methods whose second argument is the default of the entry the first names
# (`cfg.get("device", "cuda")`, `os.getenv("DEVICE", "cuda")`).
KEYED_DEFAULTS = frozenset({"get", "setdefault", "pop", "getenv"})
LIST_ADDS = frozenset({"append", "insert", "add", "extend"})
COMPARISONS = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn, cst.Is, cst.IsNot)
# `kwargs["device_map"] = {"": device}`, `device_map={'': device}`: a model pinned to one device.
_PINS_A_DEVICE_MAP = re.compile(r"""device_map["']?\s*\]?\s*[=:]\s*\{\s*(?:""|'')\s*:""")
_CONTIGUOUS_WHY = "the branch only makes tensors contiguous, a workaround for a CUDA kernel; Gaudi does not need it and NVIDIA GPUs keep it"
_PINNED_WHY = (
    "on {device!r} the model is spread over every GPU of the machine (`device_map=\"auto\"`); every other device "
    "pins it to its one device, as a Gaudi process must: the HPU takes that arm"
)


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _DeviceStringVisitor(ctx, rule)


class _DeviceStringVisitor(DeviceStringHolds, IndexedDevices, Surroundings, cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        self.params = rule.params
        self.templates: set[cst.SimpleString] = set()
        # `torch.device("cuda", local_rank)`: the device string, and the call
        # whose index goes with the rename (one Gaudi per process).
        self.indexed: dict[cst.SimpleString, tuple[cst.CSTNode, Callable]] = {}
        self.dict_keys: set[cst.BaseExpression] = set()
        # Strings that look like devices but are kept, with the reason.
        self.kept: dict[cst.CSTNode, Held] = {}
        # Bare words that flow into a device position (see the kind's docs).
        self.in_role: set[cst.CSTNode] = set()
        # Names given a list of devices (`["cpu"]`): what they get later is one too.
        self.device_lists: set[str] = set()
        # Names bound to a role call (`precision_scope = autocast if amp else nullcontext`).
        self.role_call_aliases: set[str] = set()
        self.functions: list[cst.FunctionDef] = []
        # Enclosing checks and arguments, for strings in a device test.
        self.around: list[cst.CSTNode] = []
        # A table of the devices the module knows, which lacks the replacement.
        self.device_table: Optional[str] = None
        # What the replacement already names in this module, if another backend.
        self.taken: Optional[str] = None
        # The blocks enclosing the node being visited, and the strings renamed so far.
        self.blocks: list[cst.IndentedBlock] = []
        self.renamed: set[cst.CSTNode] = set()
        # Device tests renamed to test for the HPU, with the branch they choose.
        self.flipped: list = []
        # `RefitBackendName = Literal["nccl", "gloo"]`, and for each enclosing
        # function its parameters typed with such a Literal.
        self.literal_aliases: dict[str, tuple[str, frozenset]] = {}
        self.typed_params: list[dict[str, tuple[str, frozenset]]] = []
        self._read_evidence(of_options(ctx.options))

    def _read_evidence(self, evidence) -> None:
        """What the device evidence says about this rule's device and replacement."""
        device, replacement = self.params["device"], self.params["replacement"]
        self.siblings = self.params["siblings"] | (evidence.siblings(device) if self.params["device-siblings"] else frozenset())
        self.accelerator_queries = by_name(evidence.accelerator_queries, device)
        self.kept_checks = by_name(evidence.kept_checks, device)
        self.taken_by = by_name(evidence.taken_by, replacement)
        self.registers_code = evidence.registers_code
        self.has_own_devices = evidence.has_own_devices
        self.accelerators = frozenset(evidence.other)
        # Keywords that switch a library's CUDA code on (`gpu=`, `cuda=`).
        self.switch_words = frozenset(word.lower() for word in evidence.switch_keywords)
        # Words of names and keywords that switch on PyTorch's fused kernels (`use_fused`).
        self.kernel_switches = frozenset(word.lower() for word in evidence.kernel_switches)
        # Device strings listed beside other accelerators' (`["cuda", "xpu"]`):
        # the list gains the replacement rather than losing the device.
        self.extended_lists: dict[cst.CSTNode, cst.CSTNode] = {}
        # Device strings tested in a chain with other devices' (`"cpu" not in
        # device and "cuda" not in device`): their test gains the replacement's.
        self.extended_tests: dict[cst.CSTNode, tuple] = {}
        self.around_chains: list[cst.BooleanOperation] = []
        # What marks the code of a test as NVIDIA's; None: this rule's tests are ported regardless.
        self.nvidia = nvidia_evidence(self.ctx, device) if self.params["nvidia-guards"] else None

    def visit_Module(self, node: cst.Module) -> None:
        self.literal_aliases = dict(literal_aliases(node.body))
        self.device_table = device_table(node, self.params["device"], self.params["replacement"])
        self.taken = replacement_taken(self.ctx.source, self.params["replacement"], self.taken_by)
        self._keep_named_constants(node.body)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if isinstance(node.body, cst.IndentedBlock):
            self._keep_named_constants(node.body.body)

    def _keep_named_constants(self, statements) -> None:
        """`NCCL_BACKEND = "nccl"` beside `GLOO_BACKEND = "gloo"`: constants
        that each name their own value are names for backends, not a choice
        of one; renamed, `NCCL_BACKEND` would hold "hccl"."""
        named = [(target, value) for target, value in string_constants(statements)
                 if value.split(":")[0].lower() in name_parts(target)]
        device = self.params["device"]
        if len(named) < 2 or not any(value == device for _, value in named):
            return
        for statement in statements:
            for small in getattr(statement, "body", ()) if isinstance(statement, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.SimpleString):
                    target = target_name(small)
                    if target and small.value.evaluated_value == device and device in name_parts(target):
                        self.kept.setdefault(small.value, Held("not-a-device", f"`{target}` names the {device!r} value itself, among the module's constants for each value"))

    def visit_IfExp(self, node) -> None:
        super().visit_IfExp(node)
        self._beside_a_sibling([node.body, node.orelse])

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(node)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.blocks.pop()

    # -- where a string stands --------------------------------------------------

    def _role(self, name: str) -> bool:
        return bool(self.params["role-words"] & name_parts(name))

    def _names_a_role(self, expr: cst.CSTNode) -> bool:
        """Whether an expression names a role word anywhere (`x.device.type`,
        `str(device)`, `dist.get_backend()`, `cfg["device"]`)."""
        return any(self._role(text) for text in names_and_keys(expr))

    def _mark(self, expr: Optional[cst.BaseExpression]) -> None:
        if expr is not None:
            self.in_role.update(strings_in(expr))

    def visit_Dict(self, node: cst.Dict) -> None:
        super().visit_Dict(node)
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.dict_keys.add(element.key)
                self.dict_keys.update(_template_of(element.key))
                key = literal_value(written(element.key)) if isinstance(element.key, cst.SimpleString) else None
                if isinstance(key, str) and self._role(key):
                    self._mark(element.value)
                self._keep_device_of_a_backend(element)

    def _keep_device_of_a_backend(self, element: cst.DictElement) -> None:
        """`{torch.device("cuda"): dist.Backend.NCCL, ...}`: renamed alone,
        the HPU's entry would start NCCL, which Gaudi lacks."""
        hit = self.ctx.qualify(element.value) if isinstance(element.value, (cst.Name, cst.Attribute)) else None
        if self.params["device"] != "cuda" or hit is None or hit[0] != "torch.distributed.Backend.NCCL":
            return
        reason = Held("by-hand", f"this entry gives the device `{shown_briefly(written(element.value))}`, the NCCL backend Gaudi lacks: map \"hpu\" to \"hccl\" by hand")
        for string in descendants(element.key):
            if isinstance(string, cst.SimpleString):
                self.kept.setdefault(string, reason)

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(self._names_a_role(target.target) for target in node.targets):
            self._mark(node.value)
        for target in node.targets:
            self._keep_profiler_activities(written(target.target), node.value)
            self._keep_kernel_switch(written(target.target), node.value)
        if self._binds_a_role_call(node.value):
            self.role_call_aliases.update(written(target.target) for target in node.targets)
        if self._lists_a_sibling(node.value):
            # `available = ["cpu"]`: what is appended to it later is a device too.
            self.device_lists.update(written(target.target) for target in node.targets)

    def _keep_kernel_switch(self, name: str, value: cst.BaseExpression) -> None:
        """`use_fused = fused_available and device_type == "cuda"`: the test
        turns on PyTorch's fused kernels, which the HPU has only in some
        PyTorch and Gaudi releases; kept, the unfused path runs on Gaudi."""
        if not (name_parts(name) & self.kernel_switches) or not _is_truth_value(value):
            # Only a truth value switches a kernel on (`fused_device = "cuda" if ...` names a device).
            return
        reason = Held("unclear", f"the test decides `{shown_briefly(name)}`, which switches on PyTorch's fused CUDA kernels: the HPU has them only in some releases; Gaudi's own fused optimizers are in `habana_frameworks.torch.hpex.optimizers` (HPU701)")
        for test in descendants(value):
            if _is_truth_value(test) and not isinstance(test, (cst.BooleanOperation, cst.UnaryOperation)):
                for string in descendants(test):
                    if isinstance(string, (cst.SimpleString, cst.FormattedString)):
                        self.kept.setdefault(string, reason)

    def _binds_a_role_call(self, value: cst.BaseExpression) -> bool:
        """`autocast`, or `autocast if opt.precision == "autocast" else
        nullcontext`: the name then called with "cuda" is given a device
        (`with precision_scope("cuda"):`). The other arm may be any callable
        that takes the argument and ignores it."""
        arms = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        aliased = self.params["aliased-role-calls"]
        return any(
            isinstance(arm, (cst.Name, cst.Attribute)) and (hit := self.ctx.qualify(arm)) is not None and hit[0] in aliased
            for arm in arms
        )

    def _lists_a_sibling(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, (cst.List, cst.Tuple, cst.Set)) and self._names_a_sibling([e.value for e in value.elements])

    def _names_a_sibling(self, exprs) -> bool:
        values = [literal_value(written(e)) for e in exprs if isinstance(e, cst.SimpleString)]
        return any(v in self.siblings for v in values if isinstance(v, str))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._names_a_role(node.target):
            self._mark(node.value)
        self._keep_outside_literal(written(node.target), node.annotation, node.value)

    def visit_Param(self, node: cst.Param) -> None:
        if self._role(node.name.value):
            self._mark(node.default)
        self._keep_outside_literal(node.name.value, node.annotation, node.default)
        self._keep_profiler_activities(node.name.value, node.default)

    def _keep_profiler_activities(self, name: str, value) -> None:
        """`activities=['cpu', 'cuda']`: profiler activity names, which code maps
        to `ProfilerActivity.CUDA` by name (and rejects what it does not know)."""
        if value is None or "activit" not in name.lower():
            return
        for string in strings_in(value):
            self.kept.setdefault(string, Held("not-a-device", f"`{name}` lists profiler activities, which the code maps by name"))

    def _literal(self, annotation: Optional[cst.Annotation]) -> Optional[tuple[str, frozenset]]:
        """(the type as written, its values) when ``annotation`` is a Literal
        of strings, directly or through a module-level alias, that lacks the
        replacement."""
        if annotation is None:
            return None
        expr = annotation.annotation
        typed = self.literal_aliases.get(expr.value) if isinstance(expr, cst.Name) else literal_type(expr)
        return typed if typed is not None and self.params["replacement"] not in typed[1] else None

    def _keep_outside_literal(self, name: str, annotation, value) -> None:
        """`backend: Literal["nccl", "mpi", "gloo"] = "nccl"`: the type allows
        only its own values; renamed, the value would break it."""
        typed = self._literal(annotation)
        if typed is not None and value is not None:
            for string in strings_in(value):
                self.kept.setdefault(string, Held("unclear", outside_literal(name, typed[0], self.params["replacement"])))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)
        params = node.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        typed = {p.name.value: self._literal(p.annotation) for p in every}
        self.typed_params.append({name: value for name, value in typed.items() if value is not None})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()
        self.typed_params.pop()

    def visit_Return(self, node: cst.Return) -> None:
        if self.functions and self._role(self.functions[-1].name.value):
            self._mark(node.value)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        parts = [node.left, *(target.comparator for target in node.comparisons)]
        if not any(isinstance(target.operator, COMPARISONS) for target in node.comparisons):
            return
        if LIGHTNING_GPU_TEST.search(written(node)):
            # A test of the accelerator the user chose picks NVIDIA's arm;
            # the chain gains Gaudi's ("hpu") beside it (HPU620).
            for string in strings_in(node):
                self.ctx.claim(string)
            return
        query = next(filter(None, (self._accelerator_query(part) for part in parts)), None)
        if query is not None:
            for part in parts:
                for string in strings_in(part):
                    self.kept.setdefault(string, Held("other-device", f"`{query}` already answers \"{self.params['replacement']}\" on Gaudi: this test picks code for \"{self.params['device']}\" alone"))
        typed = self.typed_params[-1] if self.typed_params else {}
        name = next((part.value for part in parts if isinstance(part, cst.Name) and part.value in typed), None)
        if name is not None:
            # `backend == "nccl"` where `backend: Literal["nccl", "gloo", "nvshmem"]`.
            for part in parts:
                for string in strings_in(part):
                    self.kept.setdefault(string, Held("unclear", outside_literal(name, typed[name][0], self.params["replacement"])))
        if self.params["comparisons"] and any(
            self._names_a_role(part) or self._reads_a_role_entry(part) for part in parts if not isinstance(part, cst.SimpleString)
        ):
            held = self._held_comparison(node)
            for part in parts:
                if held is not None:
                    for string in strings_in(part):
                        self.kept.setdefault(string, held)
                self._mark(part)

    def _held_comparison(self, node: cst.Comparison) -> Optional[Held]:
        """Why a test of the device stays as it is, said nowhere: the code
        it picks is right for Gaudi as it stands."""
        if self._other_devices_pinned(node):
            return Held("other-device", _PINNED_WHY.format(device=self.params["device"]), quiet=True)
        if self._only_makes_contiguous(node):
            return Held("harmless", _CONTIGUOUS_WHY, quiet=True)
        return None

    def _only_makes_contiguous(self, node: cst.Comparison) -> bool:
        """`if q.device.type == "cuda" and mask is not None: q = q.contiguous()`:
        a workaround of a CUDA kernel's bug (SDPA's memory-efficient backend
        with strided inputs), which NVIDIA still needs and Gaudi does not."""
        guard = next((n for n in reversed(self.around) if isinstance(n, cst.If) and contains(n.test, node)), None)
        if guard is None or negated(written(guard.test)) or not isinstance(guard.body, cst.IndentedBlock):
            return False
        return all(
            isinstance(line, cst.SimpleStatementLine)
            and all(isinstance(small, cst.Assign) and _contiguous_call(small.value) for small in line.body)
            for line in guard.body.body
        )

    def _other_devices_pinned(self, node: cst.Comparison) -> bool:
        """`if device != "cuda": kwargs["device_map"] = {"": device}`: the
        arm for every other device pins the model to the one device, which is
        what a Gaudi process needs; the device's own arm keeps
        `device_map="auto"`, which spreads a model over every GPU of the
        machine."""
        guard = next((n for n in reversed(self.around) if isinstance(n, cst.If) and n.test is node), None)
        if guard is None or len(node.comparisons) != 1:
            return False
        operator = node.comparisons[0].operator
        arm = guard.body if isinstance(operator, cst.NotEqual) else guard.orelse if isinstance(operator, cst.Equal) else None
        return arm is not None and _PINS_A_DEVICE_MAP.search(self.ctx.module.code_for_node(arm)) is not None

    def _accelerator_query(self, expr: cst.CSTNode) -> Optional[str]:
        """`get_accelerator().device_name()`: a layer that knows several
        accelerators and answers for the one in use."""
        if isinstance(expr, cst.Call) and not expr.args:
            called = written(expr.func)
            if matches_any(called, self.accelerator_queries):
                return shown_briefly(written(expr))
        return None

    def _beside_a_sibling(self, exprs) -> None:
        if self._names_a_sibling(exprs):
            for expr in exprs:
                self._mark(expr)

    def _listed(self, exprs) -> None:
        self._beside_a_sibling(exprs)
        self._beside_other_words(exprs)

    def _beside_other_words(self, exprs) -> None:
        """Strings listed with words that are not devices (`["to", "cuda"]`
        are method names, `("gpu", "cuda", "tpu")` option values), or next to
        the replacement itself (a rename would repeat it), are left alone."""
        params = self.params
        if not self.siblings:
            return
        strings = [e for e in exprs if isinstance(e, cst.SimpleString)]
        words = [w for w in (literal_value(written(e)) for e in strings) if isinstance(w, str)]
        known = self.siblings | {params["device"], params["replacement"]}
        other = next((w for w in words if w.split(":")[0] not in known), None)
        if other is not None:
            reason = Held("not-a-device", f"listed with {other!r}, which is not a device: the list names something else")
        elif params["replacement"] in words and set(words) & self.accelerators:
            # A list of the devices some code serves, the HPU among them: done.
            reason = Held("other-device", f"the list names {params['replacement']!r} beside it already", quiet=True)
        elif params["replacement"] in words:
            reason = Held("name-taken", f"the list already names {params['replacement']!r}")
        else:
            return
        for expr in strings:
            self.kept.setdefault(expr, reason)

    def visit_List(self, node: cst.List) -> None:
        self._listed([e.value for e in node.elements])
        self._beside_accelerators(node)

    def visit_Tuple(self, node: cst.Tuple) -> None:
        self._listed([e.value for e in node.elements])
        self._beside_accelerators(node)

    def visit_Set(self, node: cst.Set) -> None:
        self._listed([e.value for e in node.elements])
        self._beside_accelerators(node)

    def _beside_accelerators(self, node) -> None:
        """`device.type in ["cuda", "xpu", "npu"]`: a list of the devices some
        code serves. The device stays (NVIDIA still runs it); the replacement
        is added after it."""
        strings = {e.value: literal_value(written(e.value)) for e in node.elements if isinstance(e.value, cst.SimpleString)}
        words = set(strings.values())
        if self._tests_for_code_that_names(node, self.params["device"]):
            return  # Gaudi would run what the test picks, which names the device itself
        # In a module others import (it serves NVIDIA users too), a list of
        # the CPU and CUDA is such a list as well.
        others = self.accelerators | ({"cpu"} if self.ctx.gaudi_optional else frozenset())
        if self.params["device"] in words and words & others and self.params["replacement"] not in words:
            for string, word in strings.items():
                if word == self.params["device"]:
                    self.extended_lists.setdefault(string, node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """`"cpu" not in device and "cuda" not in device` (`device == "cuda"
        or device == "mps"`): one test per device some code serves. Like a
        list of them, the chain gains a test of the replacement."""
        if any(isinstance(n, cst.BooleanOperation) for n in self.around_chains):
            return  # the outermost operation of a chain reads it all
        self.around_chains.append(node)
        joined = device_chain(node)
        if joined is None:
            return
        operator, tests = joined
        words = {word: (string, test) for string, word, test in tests}
        devices = set(words)
        others = self.accelerators | ({"cpu"} if self.ctx.gaudi_optional else set())
        device, replacement = self.params["device"], self.params["replacement"]
        if device in devices and devices & others and replacement not in devices and devices <= self.siblings | self.accelerators | {device, "cpu"}:
            string, test = words[device]
            self.extended_tests.setdefault(string, (test, operator))

    def leave_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if self.around_chains and self.around_chains[-1] is node:
            self.around_chains.pop()

    def _tests_for_code_that_names(self, node, device: str) -> bool:
        guard = next((n for n in reversed(self.around) if isinstance(n, (cst.If, cst.While)) and contains(n.test, node)), None)
        return guard is not None and device in self.ctx.module.code_for_node(guard.body)

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        # `generators[f"cuda:{idx}"]`: a key under which something is stored.
        if isinstance(node.slice, cst.Index):
            self.dict_keys.update(strings_in(node.slice.value))

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        func = node.func
        if isinstance(func, cst.Name) and func.value in ATTRIBUTE_FUNCTIONS and len(node.args) > 1:
            # getattr(x, "cuda"): the name of an attribute, not a device.
            if isinstance(node.args[1].value, cst.SimpleString):
                self.ctx.claim(node.args[1].value)
            if func.value == "getattr" and len(node.args) > 2 and self._names_a_role_string(node.args[1].value):
                self._mark(node.args[2].value)  # getattr(args, "device", "cuda")
            return
        self._keep_registered_device(node)
        self._keep_device_generator(node)
        self._keep_unsupported_dtype(node)
        self._keep_nvidia_switches(node)
        self._keep_parsed_name(node)
        self._note_device_index(node)
        if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, cst.SimpleString):
            self.templates.add(func.value)
            self._note_indexed_template(func.value, node)
        if isinstance(func, cst.Attribute) and func.attr.value in LIST_ADDS and written(func.value) in self.device_lists:
            for arg in node.args:
                self._mark(arg.value)
        self._mark_arguments(node)

    def _keep_registered_device(self, node: cst.Call) -> None:
        """`@torch.library.custom_op(..., device_types="cuda")`,
        `op.register_kernel("cuda")`: the code registered is that device's
        (a Triton or CUDA kernel); renamed, it would be registered for the
        replacement, which it was never written for."""
        if not any(next(strings_in(arg.value), None) is not None for arg in node.args):
            return  # no string for it to keep
        hit = self.ctx.qualify(node.func)
        called = hit[0] if hit is not None else written(node.func)
        if hit is not None and self.has_own_devices(called):
            reason = Held("nvidia-only", f"`{shown_briefly(written(node.func))}` runs its own kernels and knows only \"cpu\" and {self.params['device']!r}: on Gaudi give it \"cpu\"")
            return self._keep_arguments(node, reason)
        if not self.registers_code(called):
            return
        reason = Held("nvidia-only", f"`{shown_briefly(written(node.func))}` registers code written for {self.params['device']!r}, not for {self.params['replacement']!r}")
        self._keep_arguments(node, reason)

    def _keep_arguments(self, node: cst.Call, reason: Held) -> None:
        """Keep, for ``reason``, the strings the arguments of ``node`` evaluate to."""
        for arg in node.args:
            for string in strings_in(arg.value):
                self.kept.setdefault(string, reason)

    def _keep_device_generator(self, node: cst.Call) -> None:
        """`torch.Generator(device="cuda")`: Gaudi has no generator on the
        device (`torch.Generator(device="hpu")` fails); a person makes it on
        the CPU, where the random numbers then come from."""
        if last_name(node.func) != "Generator" or self.params["device"] != "cuda" or not node.args:
            return
        hit = self.ctx.qualify(node.func)
        if hit is None or hit[0] != "torch.Generator":
            return
        self._keep_arguments(node, Held("by-hand", "Gaudi has no random generator on the device: create it on the CPU (`torch.Generator()`), or seed the HPU's own with `torch.hpu.manual_seed`"))

    def _keep_unsupported_dtype(self, node: cst.Call) -> None:
        """`torch.tensor(..., dtype=torch.float64, device="cuda")`: the
        replacement device cannot hold the tensor; a person chooses the CPU
        or another dtype."""
        unsupported = self.params["unsupported-dtypes"]
        if not unsupported:
            return
        dtype = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "dtype"), None)
        hit = self.ctx.qualify(dtype) if isinstance(dtype, (cst.Name, cst.Attribute)) else None
        if hit is None or hit[0] not in unsupported:
            return
        reason = Held("by-hand", f"the tensor is `{written(dtype)}`, which {self.params['replacement']!r} cannot hold: keep it on the CPU or choose another dtype")
        self._keep_arguments(node, reason)

    def _keep_nvidia_switches(self, node: cst.Call) -> None:
        """`FaissKMeans(gpu=device.type == "cuda")`: the value switches on a
        library's CUDA code, which Gaudi cannot run."""
        for arg in node.args:
            if arg.keyword is not None and name_parts(arg.keyword.value) & self.kernel_switches:
                self._keep_kernel_switch(arg.keyword.value, arg.value)
            if arg.keyword is None or not (name_parts(arg.keyword.value) & self.switch_words):
                continue
            reason = Held("nvidia-only", f"the test answers `{arg.keyword.value}=` of `{shown_briefly(written(node.func))}`, a switch for NVIDIA GPUs' code")
            # The device of a torch.cuda call goes with the call, which is ported.
            going = {a.value for c in descendants(arg.value) if isinstance(c, cst.Call) and self._device_api(c.func) for a in c.args}
            for string in descendants(arg.value):
                if isinstance(string, (cst.SimpleString, cst.FormattedString)) and string not in going:
                    self.kept.setdefault(string, reason)

    def _keep_parsed_name(self, node: cst.Call) -> None:
        """`int(str(self.device).strip("cuda:"))`: the code reads the index out
        of the device's name. Renamed, it breaks where the replacement's
        device is written without an index (`str(torch.device("hpu"))` is
        `hpu`), so a person writes it for both devices."""
        func = node.func
        if self.params["device"] != "cuda" or not isinstance(func, cst.Attribute) or func.attr.value not in NAME_PARSERS or not node.args:
            return
        first = node.args[0].value
        if not isinstance(first, cst.SimpleString) or not self.params["exact"].fullmatch(first.raw_value):
            return
        reason = Held("by-hand", f"`{shown_briefly(written(node))}` takes a device's name apart: on Gaudi the name may have no index (`hpu`), so read the index with `torch.hpu.current_device()` or write it for both devices")
        self.kept.setdefault(first, reason)

    def _mark_arguments(self, node: cst.Call) -> None:
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        option = any(self._names_a_role_string(arg.value) for arg in positional)
        for arg in node.args:
            if arg.keyword is not None and (self._role(arg.keyword.value) or (option and arg.keyword.value in OPTION_VALUES)):
                self._mark(arg.value)
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in KEYED_DEFAULTS and len(positional) > 1 and self._names_a_role_string(positional[0].value):
            self._mark(positional[1].value)
        if positional and self._device_call(node.func):
            self._mark(positional[0].value)
        if positional and self._device_api(node.func):
            # `torch.cuda.set_rng_state(state, "cuda")`: the API is ported, and its device with it.
            for arg in positional:
                self._mark(arg.value)
        # `args.device.startswith("cuda")`, `str(device).endswith("cuda")`
        if isinstance(func, cst.Attribute) and func.attr.value in STRING_TESTS and self._names_a_role(func.value):
            for arg in positional:
                self._mark(arg.value)

    def _reads_a_role_entry(self, expr: cst.BaseExpression) -> bool:
        """`os.getenv("DEVICE", "cuda")`, `cfg.get("device")`, `getattr(args,
        "device", "cuda")`: an entry named by a role word, whose default is
        renamed with the strings it is compared to."""
        if not isinstance(expr, cst.Call):
            return False
        positional = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in KEYED_DEFAULTS:
            return bool(positional) and self._names_a_role_string(positional[0])
        return isinstance(func, cst.Name) and func.value == "getattr" and len(positional) > 1 and self._names_a_role_string(positional[1])

    def _names_a_role_string(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.SimpleString) and self._role(str(literal_value(written(expr))))

    def _device_api(self, func: cst.BaseExpression) -> bool:
        """A function of the device's own torch module (`torch.cuda.get_rng_state`)."""
        if not isinstance(func, cst.Attribute) or self.params["device"] not in written(func.value):
            return False
        hit = self.ctx.qualify(func)
        return hit is not None and hit[0].startswith(f"torch.{self.params['device']}.")

    def _device_call(self, func: cst.BaseExpression) -> bool:
        if isinstance(func, cst.Attribute) and func.attr.value in self.params["role-methods"]:
            return True
        if isinstance(func, cst.Name) and func.value in self.role_call_aliases:
            return True
        if last_name(func) not in self._role_call_names:
            return False
        hit = self.ctx.qualify(func)
        # Unresolved (`torch` never imported here): the name as written.
        name = hit[0] if hit is not None else written(func)
        return name in self.params["role-calls"]

    @cached_property
    def _role_call_names(self) -> frozenset:
        return frozenset(call.rsplit(".", 1)[-1] for call in self.params["role-calls"])

    # Strings whose role as a template is visible from the expression around them.
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Modulo, cst.Add)) and isinstance(node.left, cst.SimpleString):
            self.templates.add(node.left)
            self._note_indexed_template(node.left, node)

    # -- the strings --------------------------------------------------------------

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.ctx.docstring_depth or "b" in node.prefix.lower() or node in self.dict_keys:
            return
        raw, params = node.raw_value, self.params
        exact = params["exact"].fullmatch(raw) and (raw != params["device"] or self._bare_word_counts(node))
        # `backend="NCCL"`: the names are read case-insensitively where they are used.
        shouted = raw.lower() == params["device"] and raw != params["device"] and node in self.in_role
        if exact or shouted or (node in self.templates and params["template"].fullmatch(raw)):
            new_raw = params["replacement"] + raw[len(params["device"]):]
            self._report(node, lambda updated: updated.with_changes(
                value=updated.prefix + updated.quote + new_raw + updated.quote
            ))

    def _bare_word_counts(self, node: cst.CSTNode) -> bool:
        return not self.params["role-words"] or node in self.in_role

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if self.ctx.docstring_depth or not node.parts or node in self.dict_keys:
            return
        self._keep_inside_text(node)
        first, rest = node.parts[0], node.parts[1:]
        if not isinstance(first, cst.FormattedStringText):
            return
        params, text = self.params, first.value
        exact = params["exact"].fullmatch(text) and not rest and (text != params["device"] or self._bare_word_counts(node))
        built = text == params["device"] + ":" and len(rest) == 1 and isinstance(rest[0], cst.FormattedStringExpression)
        if built and params["device"] == "cuda" and not current_device(rest[0]):
            # `f"cuda:{local_rank}"`: one Gaudi per process, its device 0.
            self._report(node, plain_string(params["replacement"] + ":0"))
        elif exact or built:
            self._report(node, replace_first_part(params["replacement"] + text[len(params["device"]):]))

    def _keep_inside_text(self, node: cst.FormattedString) -> None:
        """`f"{'cuda' if on_gpu else 'cpu'}_time_total"`: a string spliced into
        longer text is part of another name (a profiler key), not a device; a
        device string built from parts (`f"{kind}:{index}"`) is one."""
        text = "".join(part.value for part in node.parts if isinstance(part, cst.FormattedStringText))
        if not text.strip(":0123456789"):
            return
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                for string in strings_in(part.expression):
                    self.kept.setdefault(string, Held("not-a-device", f"part of the longer text {shown_briefly(written(node))}, not a device by itself"))

    def _report(self, node, edit) -> None:
        if not self.ctx.claim(node):
            return
        rule = self.rule
        message = rule.message.format(name=written(node), replacement=rule.params["replacement"])
        listed_in = self.extended_lists.get(node)
        kept = self._why_kept(node)
        tested = self.extended_tests.get(node)
        if tested is not None and kept is None:
            replacement = rule.params["replacement"]
            message = f"{written(node)} is tested with other devices; add a test of {replacement!r} beside it"
            test, operator = tested
            self.ctx.report(rule, node, message, self.ctx.replace(test, extended_test(node, replacement, operator)), extends=True)
            return
        if listed_in is not None and kept is None:
            replacement = rule.params["replacement"]
            message = f"{written(node)} is listed with other accelerators; add {replacement!r} beside it"
            self.ctx.report(rule, node, message, self.ctx.replace(listed_in, added_after(node, replacement)), extends=True)
            return
        if kept:
            self.ctx.report(rule, node, message, kept=kept)
            return
        self.renamed.add(node)
        if node in self.indexed:
            whole, edit_of_whole = self.indexed[node]
            self.ctx.report(rule, node, message, self.ctx.replace(whole, edit_of_whole(edit, node)))
            return
        hit = self.ctx.report(rule, node, message, self.ctx.replace(node, edit))
        guard = next((g for g in reversed(self.around) if isinstance(g, (cst.If, cst.While)) and contains(g.test, node)), None)
        if guard is not None and not negated(written(guard.test)):
            # `if device.type == "cuda": torch.cuda.empty_cache()`: judged as a CUDA check is.
            self.flipped.append((hit, guard))

    def leave_Module(self, node) -> None:
        keep_guards_over_kept_cuda(self.ctx, self.flipped)


def _is_truth_value(expr: cst.BaseExpression) -> bool:
    """A comparison, a string test (`device.startswith("cuda")`), or `and`/`or`/`not` of them."""
    if isinstance(expr, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
        return True
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in STRING_TESTS


def _contiguous_call(value: cst.BaseExpression) -> bool:
    return (
        isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "contiguous"
    )


def _template_of(key: cst.BaseExpression) -> list:
    """The template a key is built from (`"cuda:%d" % 0`, `"cuda:{}".format(i)`):
    a key, like an indexed literal one, names where a checkpoint's storages
    were (`map_location={"cuda:%d" % 0: ...}`), not a device to use."""
    if isinstance(key, cst.BinaryOperation) and isinstance(key.operator, (cst.Modulo, cst.Add)) and isinstance(key.left, cst.SimpleString):
        return [key.left]
    func = key.func if isinstance(key, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, cst.SimpleString):
        return [func.value]
    return []
