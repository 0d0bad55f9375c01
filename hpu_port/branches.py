"""Branches for other devices: code that already chooses the HPU itself.

Multi-device code picks its device in an ``if``/``elif`` chain or a conditional
expression: ``if is_hpu_available(): ... elif torch.cuda.is_available(): ...``,
``"hpu" if use_hpu else "cuda"``, or in one `if` per device side by side
(``if is_hpu_available(): ...`` then ``if is_cuda_available(): ...`` doing
the same for CUDA). Once one test of the chain names the HPU (or an HPU
check beside does the same thing), the other arms are written for other
devices on purpose: ported, the CUDA arm becomes a second HPU arm (duplicate
entries, a CUDA fallback that is no longer one). A fix inside such a chain or
such a CUDA check is reported, not applied; fixes that only add code next to
a node (``mark_step``, imports) are not affected.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import libcst as cst

from hpu_port.device.probes import CUDA_PROBE, probed_in, probes_of
from hpu_port.walk import contains, descendants

NAMES_THE_HPU = re.compile(r"(?<![A-Za-z])(hpu|HPU)(?![A-Za-z])")
# A test for the HPU may name Gaudi's software instead
# (`importlib.util.find_spec("habana_frameworks")`, `is_gaudi2()`).
TESTS_THE_HPU = re.compile(r"(?<![A-Za-z])(hpu|HPU|habana|Habana|HABANA|gaudi|Gaudi)(?![A-Za-z])")
_NAMES_THE_HPU_IN_BYTES = re.compile(TESTS_THE_HPU.pattern.encode())
# The words of TESTS_THE_HPU: a pattern that starts with a look-behind is
# tried at every byte of a file, where a substring search skips ahead.
_HPU_WORDS = (b"hpu", b"HPU", b"habana", b"Habana", b"HABANA", b"gaudi", b"Gaudi")


def may_choose_among_devices(source: bytes, other_devices: Sequence[str]) -> bool:
    """Whether ``source`` could hold a test that chooses among devices: a
    probe of one of ``other_devices`` or a Lightning accelerator test. Every
    test of a chain is text of the file, so a file without one has none."""
    return b"ccelerator" in source.lower() or probed_in(source, other_devices, code=source)


def names_the_hpu_in(source: bytes) -> bool:
    """Whether ``source`` names the HPU or Gaudi's software as a word of its own."""
    return any(word in source for word in _HPU_WORDS) and _NAMES_THE_HPU_IN_BYTES.search(source) is not None
NAMES_CUDA = re.compile(r"(?<![A-Za-z])(cuda|CUDA|Cuda)(?![A-Za-z])")
# Lightning names its accelerators: a test of the chosen one against "gpu"
# picks NVIDIA's arm among the accelerators the user can name ("hpu" is Gaudi's).
LIGHTNING_GPU_TEST = re.compile(
    r"""accelerator\w*(?:\.\w+\(\))*\s*==\s*["']gpu["']|["']gpu["']\s*==\s*[\w.]*accelerator""", re.IGNORECASE
)
# Kinds whose fixes add code next to a node rather than change it (what
# they add does nothing on other devices: Gaudi's import where optional, a
# mark_step behind it, PT_HPU_LAZY_MODE, which only Gaudi's bridge reads).
ADDING_KINDS = frozenset({"insert-after", "ensure-import", "entry-point"})
# The kind that adds the HPU arm to a chain: the chain's own fix.
EXTENDING_KINDS = frozenset({"extend-dispatch"})
REASON = "the code already chooses the HPU in another branch; this one is for another device"
EXTEND_REASON = "the code chooses among devices: this arm stays for its own device, and an HPU arm is added beside it"
SHARED_REASON = (
    "this module serves several devices and the code is shared by all of them: converted, it would run HPU code "
    "on NVIDIA GPUs too; make it choose the device (an HPU arm beside CUDA's) by hand"
)
# Direct probes of a device in a test: an availability call or a comparison
# with the device's name. A chain with a CUDA probe and a probe of another
# accelerator chooses among devices: it is extended, never converted.
_CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Held:
    """Why a fix is withheld: its kind (``results.KEPT_REASONS``), the words
    the finding adds (``not rewritten: <why>``) and the node of the unit
    that holds it, where its own finding is (None: no unit does)."""

    reason: str
    why: str
    unit: Optional[cst.CSTNode] = None
    # The code held as it is (a branch, a function, a chain), when not ``unit`` itself.
    region: Optional[cst.CSTNode] = None
    # Another device's code where the HPU has (or gets) its own: right as it
    # is, so the finding is not reported at all.
    quiet: bool = False

    @property
    def evidence(self) -> str:
        """The code the reason names first: what says the fix must wait."""
        found = _CODE.search(self.why)
        return found.group(1) if found else ""


def held_if(reason: str, why: Optional[str]) -> Optional[Held]:
    """A ``Held`` of kind ``reason`` when there is a ``why``."""
    return Held(reason, why) if why else None


class DeviceBranches:
    """Follows the walk into and out of chains that have an HPU arm, and CUDA
    checks beside an HPU check in the same block that do the same for CUDA
    (`if is_hpu_available(): s["hpu"] = torch.hpu.get_rng_state_all()` then
    the same with cuda: one `if` per device)."""

    def __init__(self, module: cst.Module, other_devices=()) -> None:
        self.module = module
        self.other_devices = tuple(other_devices)
        self.other_probe = probes_of(other_devices)
        self.chains: set[cst.CSTNode] = set()
        self.beside_hpu: set[cst.CSTNode] = set()
        self.depth = 0
        self.open: list[cst.CSTNode] = []
        # Chains that choose among devices without an HPU arm: one gets added.
        self.extended: set[cst.CSTNode] = set()
        # The module probes another accelerator: it serves several devices,
        # and its code outside a device's own arm is shared by all of them.
        self.serves_several = False
        # Whether the file names the HPU or Gaudi anywhere: if not, no test
        # of a chain does, and none is written out to be searched.
        self.hpu_named = True
        # Whether the file's text holds a probe of another accelerator or a
        # Lightning accelerator test: if not, no chain's tests do, and none
        # is written out to be searched for one.
        self.choice_possible = True
        self._tests: dict[cst.CSTNode, str] = {}

    def enter_block(self, statements) -> None:
        """Before the walk enters a block: its CUDA checks that repeat, for
        CUDA, what an HPU check beside them does for the HPU."""
        if sum(_first_if(s) is not None for s in statements) < 2:
            return
        checks = [s for s in statements if isinstance(s, cst.If)]
        side_by_side = sibling_dispatch(statements, self.module, self.other_probe) if self.choice_possible else None
        if side_by_side is not None:
            self.extended.add(side_by_side)
        if not self.hpu_named:
            return
        hpu_bodies = {self._as_cuda(s.body) for s in checks if TESTS_THE_HPU.search(self._tests_of(s))}
        if not hpu_bodies:
            return
        for check in checks:
            if NAMES_CUDA.search(self._tests_of(check)) and self.module.code_for_node(check.body) in hpu_bodies:
                self.beside_hpu.add(check)

    def _as_cuda(self, body: cst.CSTNode) -> str:
        """The code of an HPU branch as its CUDA twin would be written."""
        return NAMES_THE_HPU.sub(lambda m: "cuda" if m.group() == "hpu" else "CUDA", self.module.code_for_node(body))

    def enter(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Dict):
            # A table keyed by device names: with an "hpu" entry, its other
            # entries are other devices'; without, it may gain one.
            keys = set(table_keys(node))
            if not ("hpu" in keys and "cuda" in keys) and not self._extends(node):
                return
        elif not (node in self.beside_hpu or self._tests_the_hpu(node) or self._extends(node)):
            return
        self.chains.add(node)
        self.depth += 1
        self.open.append(node)

    def _extends(self, node: cst.CSTNode) -> bool:
        if node in self.extended:
            return True
        if isinstance(node, (cst.Match, cst.Dict)):
            found = cuda_case_of_dispatch(node, self.other_probe) if isinstance(node, cst.Match) else cuda_entry_of_table(node, self.other_probe)
            if found is None:
                return False
            self.extended.add(node)
            return True
        if not self.choice_possible:
            return False
        tests = self._tests_of(node)  # read once per chain: most have no probe at all
        if not (self.other_probe.search(tests) or LIGHTNING_GPU_TEST.search(tests)) or (
            cuda_arm_of_dispatch(node, self.module, self.other_probe) is None
            and cuda_fallback_of_dispatch(node, self.module, self.other_probe) is None
        ):
            return False
        self.extended.add(node)
        return True

    def _tests_the_hpu(self, node: cst.CSTNode) -> bool:
        return self.hpu_named and TESTS_THE_HPU.search(self._tests_of(node)) is not None

    def _tests_of(self, node: cst.CSTNode) -> str:
        """The tests of the chain that starts at ``node``, as written."""
        if node not in self._tests:
            self._tests[node] = "\n".join(self.module.code_for_node(test) for test in _chain_tests(node))
        return self._tests[node]

    def leave(self, node: cst.CSTNode) -> None:
        if node in self.chains:
            self.depth -= 1
            if self.open and self.open[-1] is node:
                self.open.pop()

    def held(self, kind: str) -> Optional[Held]:
        """Why a fix made now (by a rule of ``kind``) must not be applied, if it must not."""
        chain = self.open[-1] if self.open else None
        if kind in EXTENDING_KINDS:
            return None
        if chain is None and self.serves_several and kind not in ADDING_KINDS:
            return Held("shared-code", SHARED_REASON)
        if chain in self.extended:
            # Nothing is added to another device's arm either: it must run as before.
            return Held("other-device", EXTEND_REASON, chain, quiet=True)
        if not self.depth or kind in ADDING_KINDS:
            return None
        return Held("other-device", REASON, chain, quiet=True)


def cuda_case_of_dispatch(node: cst.Match, other_probe: "re.Pattern") -> Optional[cst.MatchCase]:
    """The `case "cuda":` (or `case DeviceType.CUDA:`) of a `match` over
    devices that has a case for another accelerator and none for the HPU;
    None when there is none."""
    names = {case: _case_device(case) for case in node.cases}
    values = [value for value in names.values() if value is not None]
    if "hpu" in values or not any(other_probe.search(f'== "{value}"') for value in values if value != "cuda"):
        return None
    return next((case for case, value in names.items() if value == "cuda"), None)


def cuda_entry_of_table(node: cst.Dict, other_probe: "re.Pattern") -> Optional[cst.DictElement]:
    """The CUDA entry of a table keyed by devices (`"cuda"`, or an enum's
    `DeviceType.CUDA`) that has an entry for another accelerator and none
    for the HPU; None when there is none."""
    keys = table_keys(node)
    if "cuda" not in keys or None in keys or "hpu" in keys:
        return None
    if not any(other_probe.search(f'== "{key}"') for key in keys if key != "cuda"):
        return None
    return node.elements[keys.index("cuda")]


def table_keys(node: cst.Dict) -> list:
    """The device each entry of ``node`` is for, in lower case: a plain
    string key's text, or the member of a device enum (`DeviceType.NPU`)
    when every such key names a member of the same enum; None for others."""
    keys = [e.key if isinstance(e, cst.DictElement) else None for e in node.elements]
    enums = {enum_member(key)[0] for key in keys if enum_member(key) is not None}
    return [string_value(key) if len(enums) > 1 or enum_member(key) is None else enum_member(key)[1].lower() for key in keys]


def enum_member(node) -> Optional[tuple[str, str]]:
    """(`DeviceType`, `NPU`) for a key or pattern that names an upper-case
    member of a class (`DeviceType.NPU`, `devices.DeviceType.NPU`)."""
    if not isinstance(node, cst.Attribute) or not node.attr.value.isupper():
        return None
    base = node.value
    parts = []
    while isinstance(base, cst.Attribute):
        parts.append(base.attr.value)
        base = base.value
    if not isinstance(base, cst.Name):
        return None
    return ".".join([base.value, *reversed(parts)]), node.attr.value


def string_value(node) -> Optional[str]:
    """The text of a plain string literal; None for anything else."""
    return node.evaluated_value if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str) else None


def _case_device(case: cst.MatchCase) -> Optional[str]:
    pattern = case.pattern
    if case.guard is not None or not isinstance(pattern, cst.MatchValue):
        return None
    member = enum_member(pattern.value)
    return member[1].lower() if member is not None else string_value(pattern.value)


def chain_arms(node: cst.CSTNode) -> list:
    """The arms of the chain that starts at ``node`` that have a test: `if`
    and each `elif` (or each conditional expression of a nested one)."""
    arms = []
    while isinstance(node, (cst.If, cst.IfExp)):
        arms.append(node)
        node = node.orelse
    return arms


def cuda_arm_of_dispatch(node: cst.CSTNode, module: cst.Module, other_probe: "re.Pattern"):
    """The CUDA arm of a chain that chooses among devices (a CUDA probe, a
    probe of another accelerator, no HPU), or None when ``node`` starts no such chain."""
    return _the_cuda_test(chain_arms(node), module, other_probe)


def _the_cuda_test(tested: list, module: cst.Module, other_probe: "re.Pattern"):
    """Of ``tested`` (arms or `if` statements that choose among devices), the
    one whose test is CUDA's, when exactly one is, none is the HPU's and
    another is another accelerator's."""
    tests = [module.code_for_node(node.test) for node in tested]
    if any(TESTS_THE_HPU.search(test) for test in tests):
        return None
    lightning = [node for node, test in zip(tested, tests) if LIGHTNING_GPU_TEST.search(test)]
    if len(lightning) == 1 and not _negated(module.code_for_node(lightning[0].test)):
        return lightning[0]
    if not any(other_probe.search(t) for t in tests):
        return None
    cuda = [node for node, test in zip(tested, tests) if CUDA_PROBE.search(test) and not other_probe.search(test)]
    if len(cuda) != 1 or _negated(module.code_for_node(cuda[0].test)):
        return None
    return cuda[0]


def _negated(test: str) -> bool:
    return test.lstrip("( ").startswith("not ")


def cuda_fallback_of_dispatch(node: cst.CSTNode, module: cst.Module, other_probe: "re.Pattern"):
    """The last tested arm of a chain that probes other accelerators and
    falls back to CUDA (`"xpu" if is_torch_xpu_available() else "cuda"`):
    its `else` is CUDA's arm. None when ``node`` starts no such chain."""
    arms = chain_arms(node)
    if not arms or arms[-1].orelse is None:
        return None
    tests = [module.code_for_node(arm.test) for arm in arms]
    if any(TESTS_THE_HPU.search(t) or CUDA_PROBE.search(t) for t in tests) or not all(other_probe.search(t) for t in tests):
        return None
    if any(_negated(t) for t in tests):
        return None  # `if not is_torch_npu_available(): ... else:`: the `else` is the NPU's
    fallback = arms[-1].orelse
    code = module.code_for_node(fallback.body if isinstance(fallback, cst.Else) else fallback)
    return arms[-1] if NAMES_CUDA.search(code) and not NAMES_THE_HPU.search(code) else None


def sibling_dispatch(statements, module: cst.Module, other_probe: "re.Pattern") -> Optional[cst.If]:
    """The CUDA `if` of a block that chooses among devices one `if` per device,
    with no HPU one: each ending its function (`if is_torch_cuda_available():
    return ...` then `if is_torch_npu_available(): return ...`), or each
    setting the same name, a later one overriding an earlier one (`if
    torch.cuda.is_available(): device = "cuda"` then, maybe in a `try`, `if
    torch.backends.mps.is_available(): device = "mps"`). None if none."""
    checks = [s for s in statements if isinstance(s, cst.If) and s.orelse is None and _exits(s.body)]
    if len(checks) >= 2:
        return _the_cuda_test(checks, module, other_probe)
    setting = [check for check in map(_first_if, statements) if check is not None]
    cuda = _the_cuda_test(setting, module, other_probe) if len(setting) >= 2 else None
    if cuda is None:
        return None
    names = _names_set(cuda.body)
    others = [check for check in setting if check is not cuda and other_probe.search(module.code_for_node(check.test))]
    return cuda if names and any(names & _names_set(check.body) for check in others) else None


def _first_if(statement) -> Optional[cst.If]:
    """``statement`` if it is an `if`; the `if` a `try` starts with."""
    if isinstance(statement, cst.Try) and statement.body.body:
        statement = statement.body.body[0]
    return statement if isinstance(statement, cst.If) else None


def _names_set(body) -> set:
    """The plain names a block assigns at its own level (`device = "mps"`)."""
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return {
        target.target.value
        for line in lines
        if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        for small in line.body
        if isinstance(small, cst.Assign)
        for target in small.targets
        if isinstance(target.target, cst.Name)
    }


def _exits(body) -> bool:
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    if isinstance(body, cst.SimpleStatementSuite):
        last = body
    if not isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return False
    return isinstance(last.body[-1], (cst.Return, cst.Raise))


def _chain_tests(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.Match):
        return [case.pattern for case in node.cases]
    tests = []
    while isinstance(node, (cst.If, cst.IfExp)):
        tests.append(node.test)
        node = node.orelse
    return tests


class OtherBackendCode:
    """Modules, classes, functions and branches written for another device or
    an NVIDIA-only library (DeepSpeed's CUDA accelerator, a Triton kernel
    module, a function that drives TensorRT, the `if format == "coreml":` arm
    of an exporter): what a rule would fix inside them is reported, not
    applied, and the unit itself is reported once (see the ``other-backend``
    kind). The whole module, when it is such a unit, is held from the start;
    the others while the walk is inside them."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.units: dict[cst.CSTNode, str] = {}
        # The kind of each unit's reason (``results.KEPT_REASONS``).
        self.kinds: dict[cst.CSTNode, str] = {}
        # How a unit is named in its finding, and the node it is reported at,
        # when that is not the unit itself (a branch: its test).
        self.names: dict[cst.CSTNode, tuple[str, cst.CSTNode]] = {}
        self.open: list[cst.CSTNode] = []
        self.held_count: dict[cst.CSTNode, int] = {}
        # Findings with nothing to fix that each unit holds, said by its own finding.
        self.folded: dict[cst.CSTNode, int] = {}
        # Mark the arm of an `if` that is for another device, and the CUDA
        # entry of a per-device table, as the walk reaches them (set by the
        # ``other-backend`` kind).
        self.branch_watcher: Optional[Callable[[cst.CSTNode], None]] = None
        # Marked arms of conditional expressions the walk is in: expressions
        # are not entered one by one, so a fix is matched to them by containment.
        self.arms: list[cst.CSTNode] = []
        self.dict_watcher: Optional[Callable[[cst.Dict], None]] = None
        # Marks a statement that uses NVIDIA-only code, asked only when a fix
        # is about to be made in it (most statements never are).
        self.statement_watcher: Optional[Callable[[cst.SimpleStatementLine], None]] = None
        self._statements: list[cst.SimpleStatementLine] = []
        self._watched: set[cst.CSTNode] = set()
        # The blocks the walk is in, innermost last (the module's own body is not one).
        self.blocks: list[cst.IndentedBlock] = []
        # Each unit's nodes, once a fix is checked against it after the walk.
        self._contents: dict[cst.CSTNode, set] = {}

    def enter_if(self, node: cst.If) -> None:
        if self.branch_watcher is not None:
            self.branch_watcher(node)

    def enter_if_expression(self, node: cst.IfExp) -> None:
        if self.branch_watcher is not None:
            self.branch_watcher(node)
            self.arms += [arm for arm in (node.body, node.orelse) if arm in self.units]

    def leave_if_expression(self, node: cst.IfExp) -> None:
        while self.arms and self.arms[-1] in (node.body, node.orelse):
            self.arms.pop()

    def enter_dict(self, node: cst.Dict) -> None:
        if self.dict_watcher is not None:
            self.dict_watcher(node)

    def enter_block(self, node: cst.IndentedBlock) -> None:
        self.blocks.append(node)
        self.enter(node)

    def leave_block(self, node: cst.IndentedBlock) -> None:
        if self.blocks and self.blocks[-1] is node:
            self.blocks.pop()
        self.leave(node)

    def statements_here(self) -> Sequence[cst.CSTNode]:
        """The statements of the block the walk is in."""
        return self.blocks[-1].body if self.blocks else self.module.body

    def enter_statement(self, node: cst.SimpleStatementLine) -> None:
        if self.statement_watcher is not None:
            self._statements.append(node)
        self.enter(node)

    def leave_statement(self, node: cst.SimpleStatementLine) -> None:
        if self._statements and self._statements[-1] is node:
            self._statements.pop()
        self.leave(node)

    def mark(
        self,
        node: cst.CSTNode,
        reason: str,
        name: Optional[str] = None,
        at: Optional[cst.CSTNode] = None,
        kind: str = "nvidia-only",
    ) -> None:
        if node in self.units:
            return
        self.units[node] = reason
        self.kinds[node] = kind
        if name is not None:
            self.names[node] = (name, at if at is not None else node)
        if node is self.module:
            self.open.insert(0, node)

    def enter(self, node: cst.CSTNode) -> None:
        if node in self.units and node is not self.module:
            self.open.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        if self.open and self.open[-1] is node:
            self.open.pop()

    def held(self, node: Optional[cst.CSTNode] = None) -> Optional[Held]:
        """Why a fix made now (at ``node``) must not be applied (counted for
        the unit), if it must not."""
        if not self.open and self._statements:
            self._watch(self._statements[-1])
        return self._hold(self.open[-1] if self.open else self._arm_holding(node))

    def _hold(self, unit: Optional[cst.CSTNode]) -> Optional[Held]:
        if unit is None:
            return None
        self.held_count[unit] = self.held_count.get(unit, 0) + 1
        anchor = self.names[unit][1] if unit in self.names else unit
        return Held(self.kinds[unit], f"{self.units[unit]}; it is not ported", anchor, region=unit)

    def fold(self, node: cst.CSTNode, count: bool = True) -> Optional[cst.CSTNode]:
        """Count a finding with nothing to fix inside a unit into the unit's
        own finding, when a unit holds ``node``: the unit is reported once.
        The unit, if one does."""
        unit = self._innermost_holding(node)
        if not isinstance(unit, (cst.Module, cst.ClassDef, cst.FunctionDef)):
            return None  # a branch's own finding names what it is for, not what it holds
        if count:
            self.folded[unit] = self.folded.get(unit, 0) + 1
        return unit

    def held_by_containment(self, node: cst.CSTNode) -> Optional[Held]:
        """Like ``held``, for a fix decided before its unit was found (the
        arm of a conditional expression is walked before its test; a check
        is judged after the code before it): the innermost unit holding
        ``node``, whatever the walk's order."""
        return self._hold(self._innermost_holding(node))

    def _innermost_holding(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self.module in self.units:
            return self.module
        best, size = None, 0
        for unit in self.units:
            contents = self._contents.get(unit)
            if contents is None:
                contents = self._contents[unit] = {id(n) for n in descendants(unit)}
            if id(node) in contents and (best is None or len(contents) < size):
                best, size = unit, len(contents)
        return best

    def innermost(self) -> Optional[cst.CSTNode]:
        """The unit the walk is in now, if any."""
        return self.open[-1] if self.open else None

    @contextmanager
    def reopened(self, unit: Optional[cst.CSTNode]) -> Iterator[None]:
        """Fixes decided after the walk left ``unit`` (an optimizer step judged
        at the end of the module) are held as if made inside it."""
        if unit is not None:
            self.open.append(unit)
        try:
            yield
        finally:
            if unit is not None:
                self.open.pop()

    def _arm_holding(self, node: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
        return next((arm for arm in reversed(self.arms) if node is not None and contains(arm, node)), None)

    def _watch(self, statement: cst.SimpleStatementLine) -> None:
        if statement not in self._watched:
            self._watched.add(statement)
            self.statement_watcher(statement)
            self.enter(statement)

    def reported(self) -> list[tuple[cst.CSTNode, str, str, int, int]]:
        """The units in which fixes were held or findings folded: (where to
        report, name, why, how many held, how many folded); units reported at
        the same place for the same reason (the statements after an early
        exit) are one."""
        found: dict[tuple, list] = {}
        for unit in {**self.held_count, **self.folded}:
            name, at = self.names[unit] if unit in self.names else (self._name(unit), unit)
            counts = found.setdefault((at, name, self.units[unit]), [0, 0])
            counts[0] += self.held_count.get(unit, 0)
            counts[1] += self.folded.get(unit, 0)
        return [(at, name, reason, held, folded) for (at, name, reason), (held, folded) in found.items()]

    def _name(self, unit: cst.CSTNode) -> str:
        return "this module" if unit is self.module else f"`{unit.name.value}`"
