"""How the ``extend-dispatch`` kind adds an HPU arm (see ``hpu_port.kinds.extend_dispatch``)."""

from __future__ import annotations

import re
import textwrap
from typing import Optional

import libcst as cst

from hpu_port.branches import chain_arms, cuda_arm_of_dispatch
from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import shown_briefly, written

# The value an arm of a conditional expression gives, in the statement that
# carries it through the port (an assignment in an `if`).
_ARM_MARK = "# __hpu_port_arm__"
_TORCH_HPU = re.compile(r"\b(\w+)\.hpu\.")


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _ExtendVisitor(ctx, rule)


class _ExtendVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        # Arms after the first of a chain: a chain is judged once, at its head.
        self.inner: set[cst.CSTNode] = set()
        # The statement lines and functions the walk is in: a conditional
        # expression's arm is ported inside its own statement and function
        # (`def backend(): return "nccl"`), where rules can tell what it is for.
        self.lines: list[cst.SimpleStatementLine] = []
        self.functions: list[str] = []

    def visit_FunctionDef(self, node) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, node) -> None:
        self.functions.pop()

    def visit_SimpleStatementLine(self, node) -> None:
        self.lines.append(node)

    def leave_SimpleStatementLine(self, node) -> None:
        self.lines.pop()

    def visit_If(self, node: cst.If) -> None:
        self._chain(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._chain(node)

    def _chain(self, head) -> None:
        if head in self.inner:
            return
        self.inner.update(chain_arms(head)[1:])
        if self.ctx.port_snippet is None or head not in self.ctx.branches.extended and not self._dispatch(head):
            return
        arm = cuda_arm_of_dispatch(head, self.ctx.module, self.ctx.branches.other_probe)
        if arm is None:
            return
        if isinstance(arm, cst.If):
            snippet = self.ctx.module.code_for_node(arm.with_changes(orelse=None, leading_lines=[]))
        elif self.lines:
            line = self.lines[-1].deep_replace(head, _marked(arm.body))
            snippet = f"if {written(arm.test)}:\n" + textwrap.indent(self.ctx.module.code_for_node(line), "    ")
            if self.functions:
                snippet = f"def {self.functions[-1]}():\n" + textwrap.indent(snippet, "    ")
        else:
            return
        ported = self.ctx.port_snippet(snippet)
        shown = shown_briefly(written(arm.test))
        if ported.missing:
            self.ctx.report(self.rule, arm.test, self.rule.params["missing-message"].format(name=shown, arm=ported.missing))
            return
        new_arm = self._hpu_arm(arm, ported.module)
        if new_arm is None:
            return
        first_line = self.ctx.module.code_for_node(new_arm).splitlines()[0] if isinstance(new_arm, cst.If) else None
        message = self.rule.message.format(name=shown, arm=f"elif {first_line[3:]}" if first_line else _shown_arm(new_arm))
        self.ctx.report(self.rule, arm.test, message, lambda plan: _plan(plan, arm, new_arm, ported.imports))

    def _dispatch(self, head) -> bool:
        tests = "\n".join(self.ctx.module.code_for_node(a.test) for a in chain_arms(head))
        return "cuda" in tests and self.ctx.branches.other_probe.search(tests) is not None

    def _hpu_arm(self, arm, ported: Optional[cst.Module]):
        """The HPU arm: the ported CUDA arm behind a probe that holds on any machine."""
        if ported is None or not ported.body:
            return None
        if isinstance(arm, cst.If):
            last = ported.body[-1]
            return last.with_changes(test=self._probe(last.test), orelse=None, leading_lines=[]) if isinstance(last, cst.If) else None
        finder = _MarkFinder()
        ported.visit(finder)
        if finder.found is None or finder.test is None:
            return None
        value = finder.found.with_changes(lpar=finder.found.lpar[1:], rpar=finder.found.rpar[:-1])
        return cst.IfExp(test=self._probe(finder.test), body=value, orelse=arm.orelse)

    def _probe(self, test: cst.BaseExpression) -> cst.BaseExpression:
        code = written(test)
        if "hpu" not in code:
            return cst.parse_expression(self.rule.params["probe"])
        used = _TORCH_HPU.search(code)
        if used is None or "hasattr(" in code:
            return test
        if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)):
            code = f"({code})"
        return cst.parse_expression(f'hasattr({used.group(1)}, "hpu") and {code}')



def _plan(plan, arm, new_arm, imports) -> None:
    # The CUDA arm keeps every byte; what followed it now follows the HPU arm.
    plan.replace(arm, lambda updated: updated.with_changes(orelse=new_arm.with_changes(orelse=updated.orelse)))
    for statement in imports:
        plan.add_import(statement)
    plan.guard_imports = True


def _marked(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value`` in parentheses that carry a comment to find it by after the port."""
    opening = cst.LeftParen(
        whitespace_after=cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(comment=cst.Comment(_ARM_MARK)),
            last_line=cst.SimpleWhitespace(""),
        )
    )
    return value.with_changes(lpar=[opening, *value.lpar], rpar=[*value.rpar, cst.RightParen()])


class _MarkFinder(cst.CSTVisitor):
    """The marked value after the port, and the test of the `if` around it."""

    def __init__(self) -> None:
        super().__init__()
        self.found: Optional[cst.BaseExpression] = None
        self.test: Optional[cst.BaseExpression] = None
        self.tests: list[cst.BaseExpression] = []

    def visit_If(self, node) -> None:
        self.tests.append(node.test)

    def leave_If(self, node) -> None:
        self.tests.pop()

    def on_visit(self, node) -> bool:
        if self.found is not None:
            return False
        lpar = getattr(node, "lpar", None)
        if lpar and isinstance(lpar[0], cst.LeftParen):
            space = lpar[0].whitespace_after
            comment = space.first_line.comment if isinstance(space, cst.ParenthesizedWhitespace) else None
            if comment is not None and comment.value == _ARM_MARK:
                self.found, self.test = node, (self.tests[-1] if self.tests else None)
                return False
        return super().on_visit(node)


def _shown_arm(expression: cst.IfExp) -> str:
    return f"... if {written(expression.test)} else ..."
