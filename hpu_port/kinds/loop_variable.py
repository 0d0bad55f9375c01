"""Kind ``loop-variable``: a ``range`` loop's variable used as a constant of the graph (report only).

In ``for i in range(...)``, indexing a tensor with ``i`` (``steps[i]``) or
passing ``i`` to one of the ``calls`` (tensor factories such as
``torch.arange``) puts a different constant in the graph on every iteration.
A name counts as a tensor when it is assigned the result of a call of
something under one of the ``tensor-modules`` (``steps = torch.linspace(...)``)
in the same function, or in one that encloses it, or at module level.
"""

from __future__ import annotations

import ast

import libcst as cst

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.kinds._references import RulesVisitor, written
from hpu_port.names import target_name_nodes
from hpu_port.triggers import Trigger, ast_root
from hpu_port.walk import walk


@register_kind
class LoopVariable(Kind):
    name = "loop-variable"
    KEYS = {"calls": (list, True), "tensor-modules": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "variable"})

    def build_params(self, table):
        return {
            "calls": set(string_list(table["calls"], "calls")),
            "tensor-modules": tuple(m + "." for m in string_list(table["tensor-modules"], "tensor-modules")),
        }

    def triggers(self, rule):
        roots = {m.split(".")[0] for m in rule.params["tensor-modules"]}
        return [Trigger(words=frozenset({b"range", root.encode()})) for root in sorted(roots)]

    def screen(self, rule, view):
        # A `for <name> in range(...)` whose body indexes a torch-made tensor
        # with that name, or calls a factory named like one of the `calls`.
        torch_names = view.imported_names({m.rstrip(".").split(".")[0] for m in rule.params["tensor-modules"]})
        tensors = {
            target.id
            for assign in view.nodes(ast.Assign)
            if isinstance(assign.value, ast.Call) and ast_root(assign.value.func) in torch_names
            for target in assign.targets
            if isinstance(target, ast.Name)
        }
        factories = {c.rsplit(".", 1)[-1] for c in rule.params["calls"]}
        for loop in view.nodes(ast.For):
            if not _is_range_loop(loop):
                continue
            variable = loop.target.id
            for statement in loop.body:
                for node in ast.walk(statement):
                    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                        if node.value.id in tensors and _mentions(node.slice, variable):
                            return True
                    elif isinstance(node, ast.Call) and _last_part(node.func) in factories:
                        if any(_mentions(arg, variable) for arg in node.args):
                            return True
        return False

    def visitor(self, rules, ctx):
        return _Visitor(ctx, rules)


def _is_range_loop(loop: ast.For) -> bool:
    return (
        isinstance(loop.target, ast.Name)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Name)
        and loop.iter.func.id == "range"
    )


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _last_part(func: ast.AST):
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


class _Visitor(RulesVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__(ctx, rules)
        # Names bound to a tensor, per scope: `mask` made by torch in one
        # method says nothing of a numpy `mask` in another.
        self.tensors: dict[int, set[str]] = {}
        self.variables: list[tuple[cst.For, str]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and self._calls_tensor_module(node.value):
            names = self.tensors.setdefault(id(self.ctx.scope), set())
            for target in node.targets:
                names.update(n.value for n in target_name_nodes(target.target))

    def _is_tensor(self, name: str) -> bool:
        return any(name in self.tensors.get(id(scope), ()) for scope in self.ctx.scope.chain())

    def _calls_tensor_module(self, call: cst.Call) -> bool:
        hit = self.ctx.qualify(call.func)
        return hit is not None and any(hit[0].startswith(m) for r in self.rules for m in r.params["tensor-modules"])

    def visit_For(self, node: cst.For) -> None:
        if (
            isinstance(node.target, cst.Name)
            and isinstance(node.iter, cst.Call)
            and isinstance(node.iter.func, cst.Name)
            and node.iter.func.value == "range"
            and self.ctx.scope.lookup("range") is None
        ):
            self.variables.append((node, node.target.value))

    def leave_For(self, node: cst.For) -> None:
        if self.variables and self.variables[-1][0] is node:
            self.variables.pop()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.variables and isinstance(node.value, cst.Name) and self._is_tensor(node.value.value):
            self._check(node, [element.slice for element in node.slice])

    def visit_Call(self, node: cst.Call) -> None:
        if not self.variables:
            return
        hit = self.ctx.qualify(node.func)
        if hit is not None and any(hit[0] in r.params["calls"] for r in self.rules):
            self._check(node, [arg.value for arg in node.args])

    def _check(self, node, parts) -> None:
        names = _Names()
        for part in parts:
            walk(part, [names])
        for _, variable in self.variables:
            if variable in names.found:
                rule = self.rules[0]
                shown = written(node)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                self.ctx.report(rule, node, rule.message.format(name=shown, variable=variable))
                return


class _Names:
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)
