"""Kind ``step-loop-without``: a training step loop in a file that never uses any of ``names`` (report only).

``names`` are qualified names (``torch.autocast``, ``torch.bfloat16``); if
the file refers to one of them anywhere, it is taken as handled. Otherwise the
first step loop (the innermost loop calling ``.backward()``) is reported once.
"""

from __future__ import annotations

import libcst as cst

from hpu_port.kinds import Kind, last_words, register_kind, string_list
from hpu_port.kinds._references import RulesVisitor
from hpu_port.kinds.in_step_loop import StepLoopVisitor
from hpu_port.triggers import text_trigger


@register_kind
class StepLoopWithout(Kind):
    name = "step-loop-without"
    KEYS = {"names": (list, True)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        return {"names": set(string_list(table["names"], "names"))}

    def triggers(self, rule):
        return [text_trigger(".backward(")]

    def context_words(self, rule):
        # One use of a name anywhere in the file is enough.
        return last_words(rule.params["names"])

    def visitor(self, rules, ctx):
        return _Visitor(ctx, rules)


class _Visitor(RulesVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__(ctx, rules)
        self.names = set().union(*(r.params["names"] for r in rules))
        self.used: set[str] = set()
        self.first_loop = None
        self.loops = StepLoopVisitor(ctx, [], self._step_loop)

    def _step_loop(self, visitor, frame) -> None:
        if self.first_loop is None:
            self.first_loop = frame.node

    # Only noted, never claimed: other rules may rewrite these names.
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._note(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._note(node)

    def _note(self, node) -> None:
        hit = self.ctx.qualify(node)
        if hit is not None and hit[0] in self.names:
            self.used.add(hit[0])

    # The step-loop bookkeeping is shared with in-step-loop.
    def visit_For(self, node) -> None:
        self.loops.visit_For(node)

    def visit_While(self, node) -> None:
        self.loops.visit_While(node)

    def leave_For(self, node) -> None:
        self.loops.leave_For(node)

    def leave_While(self, node) -> None:
        self.loops.leave_While(node)

    def visit_Call(self, node) -> None:
        self.loops.visit_Call(node)

    def leave_Module(self, node) -> None:
        if self.first_loop is None:
            return
        for rule in self.rules:
            if not (self.used & rule.params["names"]):
                line = self.ctx.module.code_for_node(self.first_loop).splitlines()[0].strip()
                self.ctx.report(rule, self.first_loop, rule.message.format(name=line))
