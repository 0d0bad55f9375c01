"""Skip conditions of tests: `@pytest.mark.skipif(not torch.cuda.is_available(), ...)`.

A test skipped where there is no CUDA device is ported with its condition
only when what it tests can run on Gaudi. When its body needs Triton, CUDA
graphs or another NVIDIA-only feature (or keeps CUDA code the port cannot
change), the ported condition would make the test run on Gaudi and fail
instead of being skipped: the condition stays CUDA's and is reported once.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.visitors._guards import kept_cuda_inside, nvidia_only_use
from hpu_port.visitors._references import shown_briefly, written
from hpu_port.walk import descendants
from hpu_port.branches import Held

# Words of a decorator or assignment that skips or requires (`skipif`,
# `skipUnless`, `requires_cuda`, `require_torch_gpu`).
_SKIP_WORDS = ("skip", "require")


class SkipConditions:
    """Mixin for a visitor: notes the checks it renames inside a test's skip condition."""

    def init_skip_conditions(self) -> None:
        self.skip_depth = 0
        # (hit, the decorator or the module-level `pytestmark = ...` statement)
        self.skip_hits: list = []

    def visit_Decorator(self, node) -> None:
        if _skips(node.decorator):
            self.skip_depth += 1

    def leave_Decorator(self, node) -> None:
        if _skips(node.decorator):
            self.skip_depth -= 1

    def note_skip_condition(self, hit, node) -> None:
        if self.skip_depth and hit is not None and hit.has_fix:
            self.skip_hits.append((hit, node))


def keep_skips_of_nvidia_only_tests(ctx, skip_hits: list, patterns: frozenset) -> None:
    """Withdraw the rename of a skip condition whose test needs NVIDIA-only code."""
    if not skip_hits:
        return
    for hit, node in skip_hits:
        test = _decorated(ctx.module, node)
        if test is None:
            continue
        why = _needs_nvidia(ctx, test, patterns)
        if why:
            name = test.name.value
            why = f"it skips `{name}`, which {why}: on Gaudi the test would run and fail instead of being skipped"
            ctx.withdraw_fix(hit, Held("skip-guard", why, test))


def _needs_nvidia(ctx, test: cst.CSTNode, patterns: frozenset) -> Optional[str]:
    used = nvidia_only_use(test, ctx, patterns)
    if used and used not in _ported_names(ctx, test):
        return f"uses `{used}`, which has no Gaudi equivalent"
    kept = kept_cuda_inside(ctx, test.body)
    if kept is not None:
        return f"keeps `{shown_briefly(written(kept.node))}`, which the port could not change"
    return None


def _ported_names(ctx, test: cst.CSTNode) -> set:
    """What the port rewrites in ``test`` (`torch.cuda.CUDAGraph` becomes an
    HPU graph): a test of it runs on Gaudi once ported."""
    names = set()
    for hit in ctx.hits_inside(test):
        if hit.fixable and isinstance(hit.node, (cst.Name, cst.Attribute)):
            qualified = ctx.qualify(hit.node)
            names.add(qualified[0] if qualified else written(hit.node))
    return names


def _decorated(module: cst.Module, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The function or class whose decorator holds ``node``."""
    for definition in descendants(module):
        if isinstance(definition, (cst.FunctionDef, cst.ClassDef)) and definition.decorators:
            for decorator in definition.decorators:
                if node is decorator or node in set(descendants(decorator)):
                    return definition
    return None


def _skips(expression: cst.BaseExpression) -> bool:
    called = expression.func if isinstance(expression, cst.Call) else expression
    text = written(called).lower()
    return any(word in text for word in _SKIP_WORDS)
