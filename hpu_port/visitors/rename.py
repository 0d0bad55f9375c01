"""How the ``rename`` kind matches and fixes code (see ``hpu_port.kinds.rename``)."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from hpu_port.branches import Held, held_if
from hpu_port.context import FileContext
from hpu_port.device.evidence import of_options
from hpu_port.edits import replace_expression
from hpu_port.model import Rule
from hpu_port.patterns import matches_any
from hpu_port.visitors._device_positions import device_values, used_as_a_device, used_as_a_rank
from hpu_port.visitors._fp16 import Fp16Choices, hold_split_casts, is_a_choice
from hpu_port.visitors._guard_reasons import counts_for_data_parallel, enumerates_gpus, why_the_check_stays
from hpu_port.visitors._guards import (
    Surroundings,
    guarded_by,
    keep_guards_over_kept_cuda,
    negated_at,
    nvidia_evidence,
)
from hpu_port.visitors._references import (
    ReferenceVisitor,
    last_name,
    literal_value,
    written,
)
from hpu_port.visitors._skip_guards import (
    SkipConditions,
    keep_skips_of_nvidia_only_tests,
)

# `device`, `eval_device`; not `device_id`, `device_index`, `device_count`.
_DEVICE_NAME = re.compile(r"(^|_)device$")


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _RenameVisitor(ctx, rules)


class _RenameVisitor(Fp16Choices, SkipConditions, Surroundings, ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table = {}
        for rule in rules:
            for old, new in rule.params["renames"].items():
                self.table.setdefault(old, (rule, new))
        super().__init__(ctx, set(self.table))
        # The choices around the node being visited: dicts, ifs, statements.
        self.around: list[cst.CSTNode] = []
        # Values tested or listed rather than used: operands of a comparison,
        # items of a list/tuple/set display, the argument of finfo().
        self.looked_at: set[cst.CSTNode] = set()
        # Values given somewhere a dtype may be produced -> ("name", the
        # keyword, parameter or target), ("argument", the callee) or
        # ("rounded", "to") for `.to(x)` cast back at once.
        self.slots: dict[cst.CSTNode, tuple[str, str]] = {}
        self.rounded: set[cst.CSTNode] = set()
        # Classes a value is tested against: `isinstance(n, FusedLayerNorm)`.
        self.type_tested: set[cst.CSTNode] = set()
        self.init_fp16()
        # Guards renamed to test for the HPU, with the code they guard.
        self.flipped: list = []
        evidence = of_options(ctx.options)
        # Names that test for CUDA: renamed only when their code is not NVIDIA's.
        self.cuda_checks = frozenset(evidence.cuda_checks)
        # Autocast devices whose float16 the port may turn into bfloat16.
        self.port_devices = frozenset(evidence.port)
        self.init_skip_conditions()
        # Calls by their callee, and the values that sit where a device goes:
        # `torch.cuda.current_device()` there is a device, elsewhere an index.
        self.call_of: dict[cst.CSTNode, cst.Call] = {}
        self.device_places: set[cst.CSTNode] = set()
        # Calls whose value a statement keeps, by the name or attribute it is
        # assigned to, as written (`device = torch.cuda.current_device()`,
        # `opt.num_gpu = torch.cuda.device_count()`).
        self.assigned_to: dict[cst.Call, str] = {}
        # The f-strings the walk is in, innermost last; how deep in type hints it is.
        self.fstrings: list[cst.FormattedString] = []
        self.annotations = 0
        # (scope, name) of dtype names assigned a float16 (`dtype = torch.float16 if fp16 else torch.float32`).
        self.float16_names: set[tuple] = set()
        self.dtype_positions = next(
            (rule.params["positions"] for rule, _ in self.table.values() if rule.params.get("positions") is not None), None
        )

    def _dtype_name(self, name: str) -> bool:
        positions = self.dtype_positions
        return positions is not None and _names_a_dtype(positions, name)

    def visit_Annotation(self, node) -> None:
        self.annotations += 1

    def leave_Annotation(self, node) -> None:
        self.annotations -= 1

    def visit_FormattedString(self, node) -> None:
        self.fstrings.append(node)

    def leave_FormattedString(self, node) -> None:
        self.fstrings.pop()

    def visit_Comparison(self, node) -> None:
        compared = self._compute_dtype_compared(node)
        if compared is not None:
            # `if dtype == torch.float16:` after `dtype = torch.float16 if fp16 else
            # torch.float32`: the test follows the value it tests, converted or not.
            for target in node.comparisons:
                self._slot(target.comparator, ("name", compared))
            return
        self.looked_at.add(node.left)
        self.looked_at.update(target.comparator for target in node.comparisons)
        for target in node.comparisons:
            if isinstance(target.comparator, (cst.List, cst.Tuple, cst.Set)):
                self.looked_at.update(e.value for e in target.comparator.elements)

    def visit_List(self, node) -> None:
        self.looked_at.update(e.value for e in node.elements)

    def visit_Tuple(self, node) -> None:
        self.looked_at.update(e.value for e in node.elements)

    def visit_Set(self, node) -> None:
        self.looked_at.update(e.value for e in node.elements)

    def visit_Call(self, node) -> None:
        super().visit_Call(node)
        func = node.func
        self.call_of[func] = node
        self.device_places.update(device_values(node, self.ctx))
        if isinstance(func, cst.Attribute) and func.attr.value in ("finfo", "iinfo") and node.args:
            self.looked_at.add(node.args[0].value)
        if isinstance(func, cst.Attribute) and func.attr.value in ("float", "double") and _is_to_call(func.value):
            self.rounded.add(func.value)
        if isinstance(func, cst.Name) and func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            tested = node.args[1].value
            self.type_tested.update(e.value for e in tested.elements) if isinstance(tested, cst.Tuple) else self.type_tested.add(tested)
        callee = last_name(func)
        for arg in node.args:
            if arg.keyword is not None:
                self._slot(arg.value, ("name", arg.keyword.value))
            elif not arg.star:
                self._slot(arg.value, ("rounded", callee) if node in self.rounded else ("argument", callee))

    def _compute_dtype_compared(self, node: cst.Comparison) -> Optional[str]:
        """The name a comparison tests with `==`/`!=` when this scope assigned it a
        float16 in a dtype's place (`dtype = torch.float16 if fp16 else ...`)."""
        if not isinstance(node.left, cst.Name) or len(node.comparisons) != 1:
            return None
        if not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return None
        name = node.left.value
        return name if (self.ctx.scope.node, name) in self.float16_names else None

    def visit_Assign(self, node) -> None:
        if len(node.targets) == 1 and isinstance(node.value, cst.Call):
            self.assigned_to[node.value] = written(node.targets[0].target)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            if _picks_float16(node.value) and self._dtype_name(name):
                self.float16_names.add((self.ctx.scope.node, name))
        for target in node.targets:
            name = last_name(target.target) or _string_key(target.target)
            if name:
                self._slot(node.value, ("name", name))

    def visit_AnnAssign(self, node) -> None:
        name = last_name(node.target)
        if name and node.value is not None:
            self._slot(node.value, ("name", name))

    def visit_Param(self, node) -> None:
        if node.default is not None:
            self._slot(node.default, ("name", node.name.value))

    def _slot(self, value: cst.CSTNode, slot: tuple[str, str]) -> None:
        """Where ``value`` goes, for it and for each value it may be: the arms
        of a conditional expression, the operands of `or`/`and`."""
        self.slots.setdefault(value, slot)
        if isinstance(value, cst.IfExp):
            self._slot(value.body, slot)
            self._slot(value.orelse, slot)
        elif isinstance(value, cst.BooleanOperation):
            self._slot(value.left, slot)
            self._slot(value.right, slot)

    def on_reference(self, node, qualified, binding) -> None:
        rule, target = self.table[qualified]
        message = rule.message.format(name=written(node), replacement=target)
        kept = self._kept_for(rule, node) if rule.params["keep-beside"] else None
        if self.annotations and self.ctx.gaudi_optional:
            # Evaluated when the module loads, also where Gaudi's software is
            # missing (no `torch.hpu` then); `torch.cuda.Event` is a fine hint anywhere.
            kept = Held("harmless", "a type hint, read when the module loads: `torch.hpu` may be missing then")
        if node in self.type_tested:
            # `isinstance(n, nn.LayerNorm)` would also match what was never a FusedLayerNorm.
            kept = Held("unclear", f"a type test: against `{target}` it would match other classes too; check what it should test on Gaudi")
        if rule.params["positions"] is not None:
            kept = kept or held_if("dtype-role", self._not_produced(rule.params["positions"], node) or self.fp16_reason(rule, node))
        if qualified in self.cuda_checks:
            kept = kept or why_the_check_stays(node, self.around, self.ctx, self.definitions)
        if qualified.endswith(".device_count"):
            kept = kept or held_if("by-hand", enumerates_gpus(node, self.around, self.ctx))
            kept = kept or held_if("by-hand", self._count_for_data_parallel(node))
        if qualified.endswith(".current_device"):
            kept = kept or held_if("by-hand", self._index_as_rank(node))
        if qualified in rule.params["result-keys"]:
            kept = kept or held_if("unclear", self._read_with_other_keys(node, rule.params["result-keys"][qualified], target))
        if kept:
            self.ctx.report(rule, node, message, kept=kept)
            return
        call = self.call_of.get(node)
        if qualified in rule.params["as-device"] and call is not None and not call.args and self._a_device(call):
            device = rule.params["as-device"][qualified]
            message = f"`{written(call)}` as a device is a CUDA GPU index (`cuda:<n>`); use `{device}`"
            self.ctx.report(rule, call, message, self.ctx.replace(call, replace_expression(device)), None, binding)
            return
        spelling = self.ctx.spell(target, rule.params["import-as"])
        if spelling is None:
            self.ctx.report(rule, node, message, kept=Held("name-taken", f"a local name hides `{target}`"))
            return
        if qualified in rule.params["without-arguments"] and call is not None and call.args:
            # `torch.cuda.synchronize(device)`: Gaudi's takes no argument.
            message += " (without arguments: it takes none)"
            self.ctx.report(rule, node, message, self.ctx.replace(call, replace_expression(f"{spelling.code}()")), spelling, binding)
            return
        probe = self._optional_probe(node, qualified, spelling.code)
        if probe is not None:
            # Where Gaudi's import is optional, `torch.hpu` may not exist: the
            # probe asks for it first, and the CPU path still runs there.
            call, code, tested = probe
            hit = self.ctx.report(rule, node, message, self.ctx.replace(call, _probe_edit(code, tested)), spelling, binding)
        else:
            hit = self.ctx.report(
                rule, node, message, self.ctx.replace(node, replace_expression(spelling.code)), spelling, binding
            )
        if qualified in self.cuda_checks:
            guard = guarded_by(node, self.around)
            if isinstance(guard, (cst.If, cst.While, cst.IfExp)) and not negated_at(guard.test, node):
                self.flipped.append((hit, guard))
            self.note_skip_condition(hit, node)

    def _a_device(self, call: cst.Call) -> bool:
        """Whether the value of ``call`` goes where a device goes: there, or
        through a name called a device that only such places read."""
        if call in self.device_places:
            return True
        name = self._name_of(call)
        if name is None or not _DEVICE_NAME.search(name):
            return False
        scope = next((d for d in reversed(self.definitions) if isinstance(d, cst.FunctionDef)), self.ctx.module)
        return used_as_a_device(scope, name, self.ctx)

    def _name_of(self, call: Optional[cst.Call]) -> Optional[str]:
        """The plain name a statement keeps ``call``'s value in, if any."""
        target = self.assigned_to.get(call) if call is not None else None
        return target if target is not None and target.isidentifier() else None

    def _count_for_data_parallel(self, node) -> Optional[str]:
        call = self.call_of.get(node)
        return counts_for_data_parallel(call, self.around, self.assigned_to.get(call), self.ctx)

    def _index_as_rank(self, node) -> Optional[str]:
        """Why a current device index stays: its name picks the process's
        share of the work (`gpu_idx * slice_idx`), and on Gaudi every
        process's device is 0."""
        call = self.call_of.get(node)
        name = self._name_of(call)
        scope = next((d for d in reversed(self.definitions) if isinstance(d, cst.FunctionDef)), self.ctx.module)
        if name is None or not used_as_a_rank(scope, name):
            return None
        return f"`{name}` picks this process's share of the work, and on Gaudi every process's device is 0: use the process's rank (`torch.distributed.get_rank()`, `LOCAL_RANK`)"

    def _optional_probe(self, node, qualified: str, spelled: str):
        """(the call, its code) for `torch.cuda.is_available()` in a module
        whose Gaudi import is optional: `hasattr(torch, "hpu") and
        torch.hpu.is_available()`, in parentheses unless it is a test itself."""
        call = self.call_of.get(node)
        if not self.ctx.gaudi_optional or qualified != "torch.cuda.is_available" or call is None or call.args:
            return None
        # Inside an f-string's braces, its own quote ends the string before 3.12.
        quote = "'" if self.fstrings and '"' in self.fstrings[-1].start else '"'
        code = f'hasattr({spelled.split(".")[0]}, {quote}hpu{quote}) and {spelled}()'
        tested = any(getattr(n, "test", None) is call for n in self.around if isinstance(n, (cst.If, cst.IfExp, cst.While)))
        return call, code, tested

    def leave_Module(self, node) -> None:
        hold_split_casts(self.ctx)
        keep_guards_over_kept_cuda(self.ctx, self.flipped)
        if self.skip_hits:
            keep_skips_of_nvidia_only_tests(self.ctx, self.skip_hits, nvidia_evidence(self.ctx))

    def _kept_for(self, rule, node) -> Optional[Held]:
        """Why this use must keep its name, if it must."""
        if node in self.looked_at:
            return Held("dtype-role", "a dtype tested or listed, not one the code computes in; check what it should be on Gaudi")
        if any(isinstance(n, cst.Dict) for n in self.around):
            return Held("dtype-role", "a table of values; check which entry Gaudi should use")
        other = _autocast_for_another_device(self.around, self.port_devices)
        if other:
            return Held("other-device", f"the dtype of autocast for {other!r}, another device")
        choice = next((n for n in reversed(self.around) if isinstance(n, cst.IfExp) or is_a_choice(n)), None)
        if choice is not None and any(text in written(choice) for text in rule.params["keep-beside"]):
            return Held("dtype-role", "one arm of a choice that has the other already", choice)
        return None

    def _not_produced(self, positions, node) -> Optional[str]:
        """Why ``node`` is not a dtype the code produces, if it is not."""
        kind, name = self.slots.get(node, ("", ""))
        if kind == "name" and _names_a_dtype(positions, name):
            return None
        if kind == "argument" and name not in positions["not-arguments-of"]:
            return None
        if kind == "rounded":
            return "a round trip through float16 (cast back at once), not a dtype the code computes in"
        return "a dtype tested, listed or handed on, not one the code computes in; check what it should be on Gaudi"

    def _read_with_other_keys(self, node, keys: frozenset, target: str) -> Optional[str]:
        """Why a call is not renamed when its dict is read with a key the
        replacement's dict lacks (`torch.cuda.memory_stats()["num_alloc_retries"]`)."""
        statement = next((n for n in reversed(self.around) if isinstance(n, cst.SimpleStatementLine)), None)
        if statement is None:
            return None
        called = written(node)
        read = _keys_read(written(statement), called + "()")
        small = statement.body[0] if len(statement.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call) and small.value.func is node:
            read += _keys_read(self.ctx.module.code_for_node(self.ctx.scope.node), written(small.targets[0].target))
        other = next((key for key in read if key not in keys), None)
        if other is None:
            return None
        return f"its result is read with {other!r}, a key the dict of `{target}` does not have ({', '.join(sorted(keys))})"

def _names_a_dtype(positions: dict, name: str) -> bool:
    """Whether a keyword, parameter or target named ``name`` is where a dtype is produced."""
    return _matches(name, positions["names"]) and not _matches(name, positions["not-names"])


_FLOAT16_NAMES = ("torch.float16", "torch.half")


def _picks_float16(value: cst.BaseExpression) -> bool:
    """`torch.float16`, or a conditional expression with it as one arm: a
    dtype the code computes in (not a table's entry, not bfloat16)."""
    if isinstance(value, cst.IfExp):
        return _picks_float16(value.body) or _picks_float16(value.orelse)
    # Only an attribute can be one; writing out every assigned value costs.
    return isinstance(value, cst.Attribute) and written(value) in _FLOAT16_NAMES


def _string_key(target: cst.BaseExpression) -> str:
    """`torch_dtype` for `kwargs["torch_dtype"]`: the key a value is stored under."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return ""
    index = target.slice[0].slice
    value = literal_value(written(index.value)) if isinstance(index, cst.Index) else None
    return value if isinstance(value, str) else ""


def _probe_edit(code: str, tested: bool):
    """Put ``code`` (an `and`) in place of a call: in parentheses, unless it
    is a test by itself or the call has its own."""

    def edit(updated: cst.Call) -> cst.BaseExpression:
        new = cst.parse_expression(code)
        if updated.lpar or tested:
            return new.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    return edit


def _autocast_for_another_device(around: list, port_devices: frozenset) -> Optional[str]:
    """The device of the innermost enclosing `autocast(...)` call, when it
    is not one of ``port_devices`` (`torch.autocast("xla", dtype=torch.float16)`)."""
    call = next((n for n in reversed(around) if isinstance(n, cst.Call)), None)
    if call is None or last_name(call.func) != "autocast":
        return None
    device = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "device_type"), None)
    value = literal_value(written(device)) if isinstance(device, cst.SimpleString) else None
    return value if isinstance(value, str) and value not in port_devices else None


def _keys_read(text: str, name: str) -> list[str]:
    """The string keys ``name`` is read with in ``text`` (`name["k"]`, `name.get("k"`)."""
    pattern = re.compile(rf"""(?<![\w.]){re.escape(name)}\s*(?:\[|\.get\()\s*(['"])([^'"\n]+)\1""")
    return [match.group(2) for match in pattern.finditer(text)]


def _is_to_call(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "to"


def _matches(name: str, patterns) -> bool:
    return matches_any(name, patterns)
