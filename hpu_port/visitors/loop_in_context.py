"""How the ``loop-in-context`` kind matches and fixes code (see ``hpu_port.kinds.loop_in_context``)."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.kinds.loop_in_context import _BUILTINS, _MODEL_METHODS, is_bookkeeping, names_a_model
from hpu_port.model import Rule
from hpu_port.visitors._references import last_name, written
from hpu_port.walk import children


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _LoopVisitor(ctx, rule)


class _LoopVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        self.params = rule.params
        self.context_nodes: list[tuple[cst.CSTNode, str]] = []
        self.loop: Optional[cst.CSTNode] = None
        self.loop_context = ""
        self.loop_is_handled = False
        self.loop_runs_model = False
        self.candidates: list[tuple[cst.CSTNode, str]] = []
        self.file_is_handled = False
        # Loops entered outside any context: one may enter the context inside.
        self.plain_loops: list[cst.CSTNode] = []

    def _context_name(self, expr) -> Optional[str]:
        func = expr.func if isinstance(expr, cst.Call) else expr
        hit = self.ctx.qualify(func)
        if hit is not None and hit[0] in self.params["contexts"]:
            return written(expr)
        return None

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            name = self._context_name(item.item)
            if name:
                self.context_nodes.append((node, name))
                if self.loop is None and self.plain_loops:
                    # `for x in loader: with torch.no_grad(): ...` runs the loop under it.
                    self._start_loop(self.plain_loops[-1], name)
                    # Calls visited before the `with` count too: a training
                    # loop that renders a sample under no_grad now and then.
                    if self._calls_a_skipped_method(self.loop):
                        self.loop_is_handled = True
                return

    def _calls_a_skipped_method(self, loop) -> bool:
        """Whether the loop itself calls one of the skip methods (`loss.backward()`),
        not a loop, function or class inside it (an epoch's training loop
        beside its validation loop)."""
        skipped = self.params["skip-methods"]
        stack = list(children(loop.body))
        while stack:
            node = stack.pop()
            if isinstance(node, _OWN_SCOPES):
                continue
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in skipped:
                return True
            stack.extend(children(node))
        return False

    def leave_With(self, node: cst.With) -> None:
        self._pop(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            name = self._context_name(decorator.decorator)
            if name:
                self.context_nodes.append((node, "@" + name))
                return

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop(node)

    def _pop(self, node) -> None:
        if self.context_nodes and self.context_nodes[-1][0] is node:
            self.context_nodes.pop()

    def visit_For(self, node) -> None:
        self._enter_loop(node)

    def visit_While(self, node) -> None:
        self._enter_loop(node)

    def _enter_loop(self, node) -> None:
        if self.loop is None and self.context_nodes:
            self._start_loop(node, self.context_nodes[-1][1])
        elif self.loop is None:
            self.plain_loops.append(node)

    def _start_loop(self, node, context: str) -> None:
        self.loop, self.loop_context, self.loop_is_handled = node, context, False
        self.loop_runs_model = not self.params["forward-calls"]
        if self.params["forward-calls"] and _walks_weights(node):
            self.loop_is_handled = True  # `for p in self.params:` edits weights, it runs no batches

    def leave_For(self, node) -> None:
        self._leave_loop(node)

    def leave_While(self, node) -> None:
        self._leave_loop(node)

    def _leave_loop(self, node) -> None:
        if self.plain_loops and self.plain_loops[-1] is node:
            self.plain_loops.pop()
        if node is self.loop:
            if not self.loop_is_handled and self.loop_runs_model:
                self.candidates.append((node, self.loop_context))
            self.loop = None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        handled = isinstance(func, cst.Attribute) and func.attr.value in self.params["skip-methods"]
        hit = self.ctx.qualify(func)
        if hit is not None and hit[0] in self.params["satisfied-by"]:
            handled = True
        if hit is not None and hit[0] in self.params["file-satisfied-by"]:
            self.file_is_handled = True
        if handled and self.loop is not None:
            self.loop_is_handled = True
        if self.loop is not None and hit is None and (_looks_like_a_model(func, self.ctx) or _runs_a_model(node)):
            self.loop_runs_model = True

    def leave_Module(self, node) -> None:
        if self.file_is_handled:
            return
        for loop, context in self.candidates:
            self.ctx.report(self.rule, loop, self.rule.message.format(name=context))


# Code inside a loop that runs on its own terms: what it calls is not the loop's.
_OWN_SCOPES = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)


_WEIGHT_WORDS = re.compile(r"param|buffer|state_dict|weight", re.IGNORECASE)


def _walks_weights(loop) -> bool:
    """A loop over a model's parameters, buffers or state dict (`for p in
    model.parameters():`, `for name, buf in self.named_buffers():`)."""
    return isinstance(loop, cst.For) and bool(_WEIGHT_WORDS.search(written(loop.iter)))


def _runs_a_model(call: cst.Call) -> bool:
    """A method of something named like a model (`model.get_intermediate_layers(x)`),
    or a call handed one (`self.p_sample(model, x, t)`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and not is_bookkeeping(func.attr.value) and names_a_model(last_name(func.value)):
        return True
    return any(names_a_model(last_name(arg.value)) for arg in call.args)


def _looks_like_a_model(func, ctx) -> bool:
    """A call of the file's own callable, or of a model-like method (`self.model(x)`)."""
    if isinstance(func, cst.Name):
        binding = ctx.scope.lookup(func.value)
        return binding is not None or func.value not in _BUILTINS
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        return name in _MODEL_METHODS or "model" in name.lower()
    return False
