"""Kind ``loop-in-context``: report loops that run under a given context (report only).

A ``for``/``while`` loop inside ``with <context>():`` or in a function decorated
with one of the ``contexts`` (``torch.no_grad``, ``torch.inference_mode``) is
reported once (the outermost such loop), unless it already calls one of the
``satisfied-by`` functions or one of the ``skip-methods`` (a loop that calls
``.backward()`` is training, not inference). A file that calls one of the
``satisfied-by`` functions outside any loop (``wrap_in_hpu_graph(model)``) is
taken as handled. With ``forward-calls``, only loops that call something that
looks like a model are reported: a callable of the file's own (``model(x)``,
``net(x)``; not an import or a builtin), or a method named like a model or a
forward pass (``self.model(x)``, ``model.generate(...)``); loops that only
initialise weights or tidy up under ``no_grad`` are left alone.
"""

from __future__ import annotations

import ast
import builtins
from typing import Optional

import libcst as cst

from hpu_port.kinds import Kind, last_words, register_kind, string_list
from hpu_port.kinds._references import written
from hpu_port.triggers import child_statements, name_trigger


@register_kind
class LoopInContext(Kind):
    name = "loop-in-context"
    KEYS = {
        "contexts": (list, True),
        "satisfied-by": (list, False),
        "skip-methods": (list, False),
        "forward-calls": (bool, False),
    }
    MESSAGE_FIELDS = frozenset({"name"})

    def context_words(self, rule):
        # A `satisfied-by` call anywhere marks the whole file as handled.
        return last_words(rule.params["satisfied-by"])

    def build_params(self, table):
        return {
            "contexts": set(string_list(table["contexts"], "contexts")),
            "satisfied-by": set(string_list(table.get("satisfied-by", []), "satisfied-by")),
            "skip-methods": set(string_list(table.get("skip-methods", []), "skip-methods")),
            "forward-calls": table.get("forward-calls", False),
        }

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["contexts"]]

    def screen(self, rule, view):
        # A statement loop somewhere under a `with` or a decorator whose
        # expression ends in one of the contexts' names; imports are not
        # resolved here, so this only ever keeps too much.
        last_parts = {name.rsplit(".", 1)[-1] for name in rule.params["contexts"]}
        loops = list(_loops_under(view.tree, last_parts))
        if not loops or not rule.params["forward-calls"]:
            return bool(loops)
        called = set()
        for loop in loops:
            if _calls_a_model_method(loop, called):
                return True
        # Imports and builtins are no model, unless the file rebinds the name
        # (which takes walking every expression, so it is asked last).
        maybe_models = called - view.imported_names() - _BUILTINS
        return bool(maybe_models) or (bool(called) and bool(called & _bound_names(view)))

    def visitor(self, rules, ctx):
        return _LoopVisitor(ctx, rules[0]) if rules else None


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WITHS = (ast.With, ast.AsyncWith)


def _loops_under(tree: ast.AST, last_parts: set[str]):
    stack = [(statement, False) for statement in getattr(tree, "body", [])]
    while stack:
        statement, inside = stack.pop()
        if isinstance(statement, _LOOPS) and inside:
            yield statement
            continue
        if isinstance(statement, _WITHS):
            inside = inside or any(_ends_in(item.context_expr, last_parts) for item in statement.items)
        elif isinstance(statement, _FUNCTIONS):
            inside = inside or any(_ends_in(d, last_parts) for d in statement.decorator_list)
        for child in child_statements(statement):
            stack.append((child, inside))


def _bound_names(view) -> set:
    """Names the file assigns or takes as parameters (they may hide imports and builtins)."""
    bound = {n.id for n in view.nodes(ast.Name) if isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for a in view.nodes(ast.arg)}
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        bound |= {n.name for n in view.nodes(kind)}
    return bound


def _calls_a_model_method(loop: ast.AST, called: set) -> bool:
    """The standard-parser twin of `_looks_like_a_model`, for the screen:
    whether ``loop`` calls a method named like a model's; the plain names it
    calls are added to ``called``."""
    for node in ast.walk(loop):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            called.add(func.id)
        elif isinstance(func, ast.Attribute) and (func.attr in _MODEL_METHODS or "model" in func.attr.lower()):
            return True
    return False


def _ends_in(expr: ast.AST, last_parts: set[str]) -> bool:
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Attribute):
        return expr.attr in last_parts
    return isinstance(expr, ast.Name) and expr.id in last_parts


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
                return

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
            self.loop, self.loop_context, self.loop_is_handled = node, self.context_nodes[-1][1], False
            self.loop_runs_model = not self.params["forward-calls"]

    def leave_For(self, node) -> None:
        self._leave_loop(node)

    def leave_While(self, node) -> None:
        self._leave_loop(node)

    def _leave_loop(self, node) -> None:
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
            if self.loop is None:
                self.file_is_handled = True
        if handled and self.loop is not None:
            self.loop_is_handled = True
        if self.loop is not None and hit is None and _looks_like_a_model(func, self.ctx):
            self.loop_runs_model = True

    def leave_Module(self, node) -> None:
        if self.file_is_handled:
            return
        for loop, context in self.candidates:
            self.ctx.report(self.rule, loop, self.rule.message.format(name=context))


_MODEL_METHODS = frozenset({"forward", "generate", "predict", "sample", "net", "encoder", "decoder", "backbone", "unet", "vae", "pipe", "pipeline"})
_BUILTINS = frozenset(dir(builtins))


def _looks_like_a_model(func, ctx) -> bool:
    """A call of the file's own callable, or of a model-like method (`self.model(x)`)."""
    if isinstance(func, cst.Name):
        binding = ctx.scope.lookup(func.value)
        return binding is not None or func.value not in _BUILTINS
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        return name in _MODEL_METHODS or "model" in name.lower()
    return False
