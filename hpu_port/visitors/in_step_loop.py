"""How the ``in-step-loop`` kind matches and fixes code (see ``hpu_port.kinds.in_step_loop``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.kinds.in_step_loop import TENSOR_ONLY_METHODS
from hpu_port.model import Rule
from hpu_port.visitors._references import RulesVisitor, written
from hpu_port.walk import walk


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return StepLoopVisitor(ctx, rules, _report_in_step_loops)


_THROTTLE_WORDS = ("freq", "interval", "every", "log_steps")


@dataclass
class LoopFrame:
    node: cst.CSTNode
    trains: bool = False  # calls .backward() itself
    losses: set = field(default_factory=set)  # what .backward() was called on
    candidates: list = field(default_factory=list)  # (rule, node, names used in its arguments)


class StepLoopVisitor(RulesVisitor):
    """Finds step loops and collects, per loop, the calls the rules look for;
    ``on_step_loop(visitor, frame)`` decides what to report when a loop ends."""

    def __init__(self, ctx, rules, on_step_loop) -> None:
        super().__init__(ctx, rules)
        self.on_step_loop = on_step_loop
        self.frames: list[LoopFrame] = []
        self.throttles: list[cst.CSTNode] = []
        self.masks: set[str] = set()  # names assigned a comparison: boolean masks
        self.truth_rules = [rule for rule in rules if rule.params.get("truth-tests")]
        self.tensors_to_test: set[str] = set()  # names assigned one (`norm = clip_grad_norm_(...)`)

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Comparison):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.masks.add(target.target.value)
        if any(self._is_tensor_to_test(node.value, rule) for rule in self.truth_rules):
            self.tensors_to_test.update(written(target.target) for target in node.targets)

    # -- conditions that read a tensor on the host (``truth-tests``) --------------

    def visit_While(self, node) -> None:
        self.frames.append(LoopFrame(node))
        self._truth_tested(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._truth_tested(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._truth_tested(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._truth_tested(node.left)  # `norm or 1.0` tests `norm`

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._truth_tested(node.expression)

    def _truth_tested(self, test: cst.BaseExpression) -> None:
        if not self.frames or not self.truth_rules:
            return
        if isinstance(test, cst.BooleanOperation):
            self._truth_tested(test.right)  # its left operand is its own visit's
            return
        for rule in self.truth_rules:
            if self._is_tensor_to_test(test, rule):
                self._candidate(rule, test)

    def _is_tensor_to_test(self, expr: cst.BaseExpression, rule: Rule) -> bool:
        """Whether ``expr`` is a tensor whose truth Python would ask the device
        for: a result of one of the rule's functions, of a tensor-only
        method, `.any()`/`.all()` of one, a comparison with one, a name
        assigned one."""
        if isinstance(expr, cst.Call):
            func = expr.func
            hit = self.ctx.qualify(func)
            if hit is not None:
                return hit[0] in rule.params["truth-tests"]
            if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_ONLY_METHODS:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in ("any", "all"):
                return self._is_tensor_to_test(func.value, rule)
            return False
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            return any(self._is_tensor_to_test(e, rule) for e in (expr.left, *(c.comparator for c in expr.comparisons)))
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr)):
            return self._is_tensor_to_test(expr.left, rule) or self._is_tensor_to_test(expr.right, rule)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return written(expr) in self.tensors_to_test
        return False

    def visit_For(self, node) -> None:
        self.frames.append(LoopFrame(node))

    def leave_For(self, node) -> None:
        self._leave_loop(node)

    def leave_While(self, node) -> None:
        self._leave_loop(node)

    def _leave_loop(self, node) -> None:
        frame = self.frames.pop()
        if frame.trains:
            self.on_step_loop(self, frame)
        elif self.frames:  # a loop inside a step loop runs on every step too
            self.frames[-1].candidates.extend(frame.candidates)

    def visit_If(self, node: cst.If) -> None:
        if _is_throttle(node.test):
            self.throttles.append(node)
        self._truth_tested(node.test)

    def leave_If(self, node: cst.If) -> None:
        if self.throttles and self.throttles[-1] is node:
            self.throttles.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if not self.frames:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            frame = self.frames[-1]
            frame.trains = True
            frame.losses.add(written(func.value))
            # accelerator.backward(loss), scaler.scale(loss).backward()
            for call in (node, func.value):
                if isinstance(call, cst.Call) and call.args:
                    frame.losses.add(written(call.args[0].value))
            return
        for rule in self.rules:
            if self._wanted_call(rule, func):
                self._candidate(rule, node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.frames:
            return
        for rule in self.rules:
            if rule.params.get("comparison-subscripts") and any(self._is_mask(e.slice) for e in node.slice):
                self._candidate(rule, node)

    def _is_mask(self, element) -> bool:
        if isinstance(element, cst.Index) and isinstance(element.value, cst.Name):
            return element.value.value in self.masks
        return _has_comparison(element)

    def _wanted_call(self, rule, func) -> bool:
        params = rule.params
        if isinstance(func, cst.Attribute) and func.attr.value in params.get("methods", ()):
            return self.ctx.qualify(func) is None or self._qualified_in(func, params)
        return self._qualified_in(func, params)

    def _qualified_in(self, func, params) -> bool:
        calls = params.get("calls", ())
        if isinstance(func, cst.Name) and func.value in calls:
            return self.ctx.scope.lookup(func.value) is None  # the builtin, not a local
        hit = self.ctx.qualify(func)
        return hit is not None and hit[0] in calls

    def _candidate(self, rule, node) -> None:
        if rule.params.get("skip-throttled") and self.throttles:
            return
        self.frames[-1].candidates.append((rule, node, _argument_names(node)))


def _report_in_step_loops(visitor: StepLoopVisitor, frame: LoopFrame) -> None:
    for rule, node, arguments in frame.candidates:
        if rule.params["loss-in-arguments"] and not any(loss in arguments for loss in frame.losses):
            continue
        if visitor.ctx.claim(node):
            visitor.ctx.report(rule, node, rule.message.format(name=_shown(node)))


def _shown(node) -> str:
    text = written(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _argument_names(node) -> set:
    """The names and attribute chains used in a call's arguments (`loss`, `out.loss`)."""
    if not isinstance(node, cst.Call):
        return set()
    collector = _NameCollector()
    for arg in node.args:
        walk(arg.value, [collector])
    return collector.names


class _NameCollector:
    def __init__(self) -> None:
        self.names: set = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.names.add(written(node))


class _ThrottleFinder:
    def __init__(self) -> None:
        self.found = False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo):
            self.found = True

    def visit_Name(self, node: cst.Name) -> None:
        if any(word in node.value.lower() for word in _THROTTLE_WORDS):
            self.found = True


class _ComparisonFinder:
    def __init__(self) -> None:
        self.found = False

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.found = True


def _is_throttle(test: cst.BaseExpression) -> bool:
    finder = _ThrottleFinder()
    walk(test, [finder])
    return finder.found


def _has_comparison(element: Optional[cst.CSTNode]) -> bool:
    if not isinstance(element, cst.Index):
        return False
    finder = _ComparisonFinder()
    walk(element.value, [finder])
    return finder.found
