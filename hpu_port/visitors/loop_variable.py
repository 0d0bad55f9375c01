"""How the ``loop-variable`` kind matches and fixes code (see ``hpu_port.kinds.loop_variable``)."""

from __future__ import annotations

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.names import target_name_nodes
from hpu_port.visitors._references import RulesVisitor, written
from hpu_port.walk import walk


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _Visitor(ctx, [rule])


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
    """The names an expression computes with: not those only turned into text
    (an f-string, `str(i)`, `"%d" % i`, `.format(i)`) or used as dict keys,
    which make no tensor of the loop variable."""

    def __init__(self) -> None:
        self.found: set[str] = set()
        self.quiet = 0
        self.keys: set[cst.CSTNode] = set()

    def visit_Name(self, node: cst.Name) -> None:
        if not self.quiet and node not in self.keys:
            self.found.add(node.value)

    def visit_FormattedString(self, node) -> None:
        self.quiet += 1

    def leave_FormattedString(self, node) -> None:
        self.quiet -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if _makes_text(node):
            self.quiet += 1

    def leave_Call(self, node: cst.Call) -> None:
        if _makes_text(node):
            self.quiet -= 1

    def visit_BinaryOperation(self, node) -> None:
        if _formats_text(node):
            self.quiet += 1

    def leave_BinaryOperation(self, node) -> None:
        if _formats_text(node):
            self.quiet -= 1

    def visit_DictElement(self, node) -> None:
        self.keys.add(node.key)


def _makes_text(call: cst.Call) -> bool:
    func = call.func
    return (isinstance(func, cst.Name) and func.value in ("str", "repr")) or (
        isinstance(func, cst.Attribute) and func.attr.value == "format"
    )


def _formats_text(node) -> bool:
    return isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.FormattedString))
