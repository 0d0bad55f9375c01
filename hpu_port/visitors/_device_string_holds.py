"""Why a device string is reported rather than renamed: what the code around
it tests and guards (the ``device-string`` kind's holds)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.branches import Held
from hpu_port.visitors._device_string_index import (
    gpu_enumeration,
    second_gpu,
)
from hpu_port.visitors._device_string_parts import (
    CudaCalls,
    KeptTest,
    UnresolvedCudaCalls,
    strings_in,
)
from hpu_port.visitors._guards import (
    cuda_branch,
    guarded_by,
    hold_guarded_body,
    library_switch,
    negated,
    nvidia_name_in,
    nvidia_only_use,
    own_hpu_path,
    passed_as,
)
from hpu_port.visitors._references import (
    literal_value,
    shown_briefly,
    written,
)
from hpu_port.walk import contains, descendants, walk


class DeviceStringHolds:
    """The reasons of ``_DeviceStringVisitor`` (``hpu_port.visitors.device_string``)
    for keeping a device string as it is; they read what its walk keeps:
    ``kept``, ``around``, ``functions``, ``blocks``, ``renamed``, ``nvidia``."""

    def _why_kept(self, node) -> Optional[Held]:
        """Why a device string is reported rather than renamed, if it is."""
        if node in self.kept:
            return self.kept[node]
        replacement = self.params["replacement"]
        if self.params["device"] == "cuda" and second_gpu(node):
            return Held("by-hand", f"a process drives one Gaudi, `\"{replacement}:0\"`: a second device of the same process has no Gaudi counterpart; place this on \"{replacement}:0\" or give the work its own process")
        if self.taken is not None:
            return Held("name-taken", f"this module tests for \"{replacement}\" and uses `{self.taken}`, whose backend has that name too: renamed, this code would take that branch")
        if self.device_table is not None:
            return Held("other-device", f"`{self.device_table}` in this module lists the devices it knows and has no \"{replacement}\" yet")
        used = self._guarded_nvidia_code(node)
        if used:
            return Held("nvidia-only", f"the code this test guards uses `{used}`, which has no Gaudi equivalent")
        enumeration = gpu_enumeration(node, self.around) if self.params["device"] == "cuda" else None
        if enumeration and not self._loop_of_nvidia_code(enumeration[1]):
            return Held("by-hand", f"it names each GPU in turn (`{shown_briefly(enumeration[0])}`), for one process to use them all: a Gaudi process drives one card; give each its own process")
        switch = library_switch(self.around, self.ctx)
        if switch:
            return Held("unclear", f"the test is handed to `{switch}` of another library, whose CUDA code the port does not change")
        test = self._kept_test_around(node)
        if test:
            return Held("other-device", f"{test}, so this branch runs only there")
        probe = self._nvidia_probe_around(node)
        if probe:
            return Held("nvidia-only", f"this function also tests `{probe}`: it decides whether code for NVIDIA GPUs runs")
        return None

    def _nvidia_probe_around(self, node) -> Optional[str]:
        """An NVIDIA-only name that another test of the function holding
        ``node``'s test uses (`if not torch.backends.cudnn.enabled: return
        False`, then `if x.device.type != "cuda": return False`): together
        they answer whether a cuDNN-only path can run, and Gaudi cannot."""
        if self.nvidia is None or not self.functions:
            return None
        function = self.functions[-1]
        guard = next((g for g in reversed(self.around) if isinstance(g, cst.If) and contains(g.test, node)), None)
        if guard is None or not isinstance(function.body, cst.IndentedBlock) or guard not in function.body.body:
            return None
        tests = [s.test for s in function.body.body if isinstance(s, cst.If) and s is not guard]
        return next(filter(None, (nvidia_name_in(test, self.ctx, self.nvidia) for test in tests)), None)

    def _kept_test_around(self, node) -> Optional[str]:
        """Why an enclosing branch is taken only on the device itself, when the
        port leaves its test as it is (`if CUDAAccelerator.is_available():
        return "cuda"`, `if t == "cuda": flag = "cuda"` where `t` plays no
        device role, `if IS_CUDA_SYSTEM: major = torch.cuda.get_device_capability()`):
        renamed, the branch would name the HPU where CUDA is."""
        for guard in reversed(self.around):
            if isinstance(guard, (cst.If, cst.While)):
                inside = guard.body in self.blocks
            elif isinstance(guard, cst.IfExp):
                inside = any(string is node for string in strings_in(guard.body))
            else:
                continue
            test = written(guard.test)
            if not inside or negated(test):
                continue
            # A conditional expression's test comes after its first arm: its
            # strings are not visited yet, so only its calls count.
            strings = not isinstance(guard, cst.IfExp)
            if self._stays_a_device_test(guard.test, strings):
                return f"`{shown_briefly(test)}` stays a test for {self.params['device']!r}"
            unresolved = UnresolvedCudaCalls(self.ctx)
            walk(guard.test, [unresolved])
            if unresolved.found:
                return f"`{shown_briefly(test)}` stays, as `{unresolved.found}` is not known to be torch's here (the module takes `torch` through a `*` import)"
            used = cuda_branch(guard, self.ctx, self.nvidia) if self.nvidia is not None else None
            if used:
                return f"`{shown_briefly(test)}` tests for CUDA and its branch uses `{used}`"
            hpu = self._asks_cuda(guard.test) and own_hpu_path(self.ctx)
            if hpu:
                # The check itself is kept for the same reason (see the rename kind).
                return f"`{shown_briefly(test)}` stays, as this function has its own path for the HPU (`{hpu}`)"
        return None

    def _asks_cuda(self, test: cst.BaseExpression) -> bool:
        """Whether a test calls torch.cuda (`torch.cuda.is_available()`)."""
        calls = CudaCalls(self.ctx)
        walk(test, [calls])
        return calls.found

    def _stays_a_device_test(self, test: cst.BaseExpression, strings: bool) -> bool:
        kept = KeptTest(self.ctx, self.params, self.kept_checks, self.renamed if strings else None)
        walk(test, [kept])
        return kept.found

    def _loop_of_nvidia_code(self, loop) -> bool:
        """A `for` loop over the GPUs whose body uses NVIDIA-only code: kept
        whole as a CUDA check's body is (HPU615 says so once)."""
        return isinstance(loop, cst.For) and self.nvidia is not None and bool(nvidia_only_use(loop, self.ctx, self.nvidia))

    def _guarded_nvidia_code(self, node) -> Optional[str]:
        patterns = self.nvidia
        guard = guarded_by(node, self.around) if patterns is not None else None
        if guard is None or self._tests_a_renamed_value(guard, node):
            return None
        used = nvidia_only_use(guard, self.ctx, patterns) or passed_as(guard, self.around, patterns)
        if used:
            hold_guarded_body(guard, self.ctx, used, node)
        return used

    def _tests_a_renamed_value(self, guard, node) -> bool:
        """`backend = "gloo" if cpu else "nccl"`, then `if backend == "nccl":`
        in the same function (or at the module's level): the test reads a
        value this port renames above it, so it is renamed with it; kept, its
        branch would never run."""
        test = getattr(guard, "test", None)
        if not isinstance(test, cst.Comparison):
            return False
        parts = [test.left, *(target.comparator for target in test.comparisons)]
        names = {part.value for part in parts if isinstance(part, cst.Name)}
        value = literal_value(written(node))
        for assign in descendants(self.functions[-1] if self.functions else self.ctx.module):
            if not isinstance(assign, cst.Assign) or not any(
                isinstance(target.target, cst.Name) and target.target.value in names for target in assign.targets
            ):
                continue
            if any(string in self.renamed and literal_value(written(string)) == value for string in strings_in(assign.value)):
                return True
        return False
