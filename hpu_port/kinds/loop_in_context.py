"""Kind ``loop-in-context``: report loops that run under a given context (report only).

A ``for``/``while`` loop inside ``with <context>():`` or in a function decorated
with one of the ``contexts`` (``torch.no_grad``, ``torch.inference_mode``) is
reported once (the outermost such loop), unless it already calls one of the
``satisfied-by`` functions or one of the ``skip-methods`` (a loop that calls
``.backward()`` is training, not inference). A file that calls one of the
``satisfied-by`` functions outside any loop (``wrap_in_hpu_graph(model)``) is
taken as handled.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds._references import written
from hpu_port.triggers import name_trigger


@register_kind
class LoopInContext(Kind):
    name = "loop-in-context"
    KEYS = {"contexts": (list, True), "satisfied-by": (list, False), "skip-methods": (list, False)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        return {
            "contexts": set(string_list(table["contexts"], "contexts")),
            "satisfied-by": set(string_list(table.get("satisfied-by", []), "satisfied-by")),
            "skip-methods": set(string_list(table.get("skip-methods", []), "skip-methods")),
        }

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["contexts"]]

    def screen(self, rule, view):
        # A statement loop somewhere under a `with` or a decorator whose
        # expression ends in one of the contexts' names; imports are not
        # resolved here, so this only ever keeps too much.
        last_parts = {name.rsplit(".", 1)[-1] for name in rule.params["contexts"]}
        return _loop_under(view.tree, last_parts)

    def visitor(self, rules, ctx):
        return _LoopVisitor(ctx, rules[0]) if rules else None


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WITHS = (ast.With, ast.AsyncWith)


def _loop_under(tree: ast.AST, last_parts: set[str]) -> bool:
    stack = [(statement, False) for statement in getattr(tree, "body", [])]
    while stack:
        statement, inside = stack.pop()
        if isinstance(statement, _LOOPS) and inside:
            return True
        if isinstance(statement, _WITHS):
            inside = inside or any(_ends_in(item.context_expr, last_parts) for item in statement.items)
        elif isinstance(statement, _FUNCTIONS):
            inside = inside or any(_ends_in(d, last_parts) for d in statement.decorator_list)
        for child in _child_statements(statement):
            stack.append((child, inside))
    return False


def _child_statements(statement: ast.AST) -> list:
    children = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list):
            children.extend(value)
    for group in getattr(statement, "handlers", ()) or getattr(statement, "cases", ()):
        children.extend(group.body)
    return children


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

    def leave_For(self, node) -> None:
        self._leave_loop(node)

    def leave_While(self, node) -> None:
        self._leave_loop(node)

    def _leave_loop(self, node) -> None:
        if node is self.loop:
            if not self.loop_is_handled:
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

    def leave_Module(self, node) -> None:
        if self.file_is_handled:
            return
        for loop, context in self.candidates:
            self.ctx.report(self.rule, loop, self.rule.message.format(name=context))
