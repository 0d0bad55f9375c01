"""How the ``insert-after`` kind matches and fixes code (see ``hpu_port.kinds.insert_after``)."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.edits import behind_name_test
from hpu_port.model import Rule
from hpu_port.names import dotted_name
from hpu_port.visitors._references import last_name, written
from hpu_port.walk import children, descendants


def visitor_for_rule(rule: Rule, ctx: FileContext) -> cst.BatchableCSTVisitor:
    return _InsertAfterVisitor(ctx, rule)


STEP, NOT_STEP, UNKNOWN = "step", "not-step", "unknown"
# What a test's code says when it may put tensors on a device: a device or
# accelerator named, a move, or state of the test case (set up elsewhere).
_MAY_REACH_A_DEVICE = re.compile(r"(?i)cuda|hpu|device|gpu|accelerat|\.to\(|\bself\.(?!assert)|fixture|global\b")


def _name_matches(qualified: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        return qualified.startswith(pattern[:-1])
    return qualified == pattern


class _InsertAfterVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rule) -> None:
        super().__init__()
        self.ctx = ctx
        self.rule = rule
        self.params = rule.params
        self.next_statement: dict[cst.CSTNode, cst.CSTNode] = {}
        self.bound: dict[str, str] = {}
        self.backward_scopes: set[cst.CSTNode] = set()
        self.steps: list[tuple[cst.Expr, cst.Call, cst.CSTNode]] = []
        # One entry per enclosing class or function: whether it is part of an
        # autograd function, whose backward runs inside autograd's own.
        self.inside_autograd: list[bool] = []
        # The classes the walk is in, innermost last: `self.backward(loss)`
        # calls a method of the innermost one.
        self.classes: list[cst.ClassDef] = []
        # Per enclosing class (`self.trainer`) and function (`trainer`): the
        # project classes whose instances the names hold, by class name.
        self.instances: list[dict[str, str]] = []
        self._cpu_tests: dict[cst.CSTNode, bool] = {}
        self.called_in_backward: frozenset = frozenset()

    # -- autograd functions -------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.inside_autograd.append(any(self._is_autograd_base(base.value) for base in node.bases) or self._steps_for_its_caller(node))
        self.classes.append(node)
        # What a base class of the same module assigns to `self` (its
        # `__init__` makes `self.mp_trainer`) the subclass's methods hold too.
        held = {}
        for base in reversed(self._module_bases(node)):
            held.update(self._project_instances(base, "self."))
        self.instances.append({**held, **self._project_instances(node, "self.")})

    def leave_ClassDef(self, node) -> None:
        self.inside_autograd.pop()
        self.classes.pop()
        self.instances.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = node.params.params
        first = params[0].name.value if params else None
        self.inside_autograd.append(
            (first is not None and first == self.params["not-in-functions-taking"])
            or node.name.value in self.called_in_backward
            or self._calls_excluded_method(node)
        )
        self.instances.append(self._project_instances(node.body, ""))

    def _calls_excluded_method(self, node: cst.FunctionDef) -> bool:
        """`self.manual_backward(loss)` in the function (``not-in-functions-calling``)."""
        names = self.params["not-in-functions-calling"]
        if not names or not any(name.encode() in (self.ctx.source or b"") for name in names):
            return False
        return any(
            isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in names
            for call in descendants(node.body)
        )

    def leave_FunctionDef(self, node) -> None:
        self.inside_autograd.pop()
        self.instances.pop()

    def _project_instances(self, tree: cst.CSTNode, prefix: str) -> dict[str, str]:
        """`self.trainer = MixedPrecisionTrainer(...)` in a class (``prefix``
        "self."), `trainer = Trainer(...)` in a function: the names that hold
        an instance of a project class whose backward method the project
        facts know, found before the walk reaches their uses."""
        syncing = self.ctx.facts.syncing_methods
        if not syncing:
            return {}
        classes = {method.split(".")[0] for method in syncing}
        found = {}
        for assign in _assignments(tree):
            value = assign.value
            if not isinstance(value, cst.Call) or last_name(value.func) not in classes or not self._project_name(value.func):
                continue
            for target in assign.targets:
                name = dotted_name(target.target)
                if name is not None and (name.startswith(prefix) if prefix else "." not in name):
                    found[name] = last_name(value.func)
        return found

    def _module_bases(self, node: cst.ClassDef, seen: frozenset = frozenset()) -> list:
        """The classes of this module that ``node`` derives from, nearest first."""
        classes = {c.name.value: c for c in self.ctx.module.body if isinstance(c, cst.ClassDef)}
        found = []
        for base in node.bases:
            parent = classes.get(base.value.value) if isinstance(base.value, cst.Name) else None
            if parent is not None and parent.name.value not in seen:
                found += [parent, *self._module_bases(parent, seen | {node.name.value, parent.name.value})]
        return found

    def _project_name(self, func: cst.BaseExpression) -> bool:
        """Whether ``func`` is the project's own (defined here, imported from a
        first-party module or relatively), not a library's of the same name."""
        hit = self.ctx.qualify(func)
        return hit is None or hit[0].split(".")[0] in self.ctx.facts.first_party

    def _calls_project_method_that_syncs(self, func: cst.Attribute) -> bool:
        """`self.mp_trainer.backward(loss)`, where `mp_trainer` holds an instance
        of a project class whose `backward` ends with a backward pass (which
        gets its own mark_step where it is written)."""
        name = dotted_name(func.value)
        for scope in reversed(self.instances):
            if name in scope:
                return f"{scope[name]}.{func.attr.value}" in self.ctx.facts.syncing_methods
        return False

    def _steps_for_its_caller(self, node: cst.ClassDef) -> bool:
        """An optimizer class of a script (`class Lookahead(torch.optim.Optimizer)`)
        whose `step` steps the optimizers it wraps: the script's loop calls its
        `step`, which gets the mark_step. A library's is stepped by code the
        port does not see, so its own steps keep theirs."""
        if self.ctx.gaudi_optional or not self.params["not-in-script-subclasses-of"]:
            return False
        return any(
            _name_matches(qualified, pattern)
            for base in node.bases
            for qualified in [func_qualified(self.ctx, base.value)]
            if qualified is not None
            for pattern in self.params["not-in-script-subclasses-of"]
        )

    def _is_autograd_base(self, expr) -> bool:
        qualified = func_qualified(self.ctx, expr)
        return qualified is not None and any(
            _name_matches(qualified, pattern) for pattern in self.params["not-in-subclasses-of"]
        )

    # -- what follows each small statement, for the already-there check ---------

    def visit_Module(self, node) -> None:
        self._link(node.body)
        self.called_in_backward = self._called_in_autograd_backward(node)

    def _called_in_autograd_backward(self, module: cst.Module) -> frozenset:
        """The names of what the `backward` of a custom autograd function of
        this module calls (`layer.backward_pass(y, dy)` in a reversible
        network): its backward passes run within autograd's own too."""
        if b"backward" not in (self.ctx.source or b"backward") or b"Function" not in (self.ctx.source or b"Function"):
            return frozenset()
        names = set()
        for klass in (n for n in descendants(module) if isinstance(n, cst.ClassDef)):
            if not any(self._is_autograd_base(base.value) for base in klass.bases):
                continue
            for method in (n for n in klass.body.body if isinstance(n, cst.FunctionDef) and n.name.value == "backward"):
                names |= {last_name(call.func) for call in descendants(method.body) if isinstance(call, cst.Call)}
        return frozenset(names - {None, "backward"})

    def visit_IndentedBlock(self, node) -> None:
        self._link(node.body)

    def visit_SimpleStatementSuite(self, node) -> None:
        self._link_small(node.body, None)

    def _link(self, statements) -> None:
        for index, statement in enumerate(statements):
            if isinstance(statement, cst.SimpleStatementLine):
                following = statements[index + 1] if index + 1 < len(statements) else None
                self._link_small(statement.body, _first_small(following))

    def _link_small(self, smalls, after) -> None:
        for index, small in enumerate(smalls):
            self.next_statement[small] = smalls[index + 1] if index + 1 < len(smalls) else after

    # -- what names are bound to ------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def _bind(self, target, value) -> None:
        if not isinstance(value, cst.Call):
            return
        hit = self.ctx.qualify(value.func)
        if hit is None:
            return
        elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else None
        for pattern, index in self.params["not-step-constructors"]:
            if _name_matches(hit[0], pattern) and index is None:
                self._record(target, NOT_STEP)
                return
        for pattern, index in self.params["step-constructors"]:
            if not _name_matches(hit[0], pattern):
                continue
            if index is None:
                self._record(target, STEP)
            elif elements is not None and index < len(elements):
                self._record(elements[index].value, STEP)

    def _record(self, target, kind: str) -> None:
        key = dotted_name(target)
        if key is not None:
            self.bound[key] = kind

    # -- anchors ------------------------------------------------------------------

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or any(self.inside_autograd):
            return
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.params["after-methods"]:
            self.backward_scopes.add(self.ctx.scope.node)
            syncs = self._calls_own_method_that_syncs(func) or self._calls_project_method_that_syncs(func)
            if not syncs and not self._cpu_only_test(self.ctx.scope.node):
                self._anchor(node, call, "the backward pass")
        elif func_qualified(self.ctx, func) in self.params["after-calls"]:
            self.backward_scopes.add(self.ctx.scope.node)
            if not self._cpu_only_test(self.ctx.scope.node):
                self._anchor(node, call, "the backward pass")
        elif isinstance(func, cst.Attribute) and func.attr.value == self.params["step-method"]:
            if not self._calls_own_method_that_syncs(func):
                self.steps.append((node, call, self.ctx.scope.node, self.ctx.other_backend.innermost()))

    def _cpu_only_test(self, scope_node) -> bool:
        """A test function that builds everything it uses on the CPU: no
        fixture, no device, nothing from `self` but assertions. Its backward
        pass never runs on Gaudi, so a mark_step there (and the Gaudi import
        it needs) would only make the test depend on Gaudi's packages."""
        if not isinstance(scope_node, cst.FunctionDef) or not scope_node.name.value.startswith("test"):
            return False
        if scope_node not in self._cpu_tests:
            params = scope_node.params
            own = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            takes_nothing = own in ([], ["self"]) and params.star_arg is cst.MaybeSentinel.DEFAULT and params.star_kwarg is None
            text = self.ctx.module.code_for_node(scope_node.body)
            self._cpu_tests[scope_node] = takes_nothing and not _MAY_REACH_A_DEVICE.search(text)
        return self._cpu_tests[scope_node]

    def _calls_own_method_that_syncs(self, func: cst.Attribute) -> bool:
        """`self.backward(loss)` where this class's `backward` ends with a
        backward pass or an optimizer step (which gets its own mark_step) or
        with a mark_step: another one after the call would only repeat it."""
        if not self.classes or not isinstance(func.value, cst.Name) or func.value.value != "self":
            return False
        method = next(
            (
                s
                for s in self.classes[-1].body.body
                if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value
            ),
            None,
        )
        last = _last_effect(method.body) if method is not None else None
        if not isinstance(last, cst.Expr) or not isinstance(last.value, cst.Call):
            return False
        inner = last.value.func
        if func_qualified(self.ctx, inner) in (self.params["function"], *self.params["after-calls"]):
            return True
        if not isinstance(inner, cst.Attribute):
            return False
        if inner.attr.value in self.params["after-methods"]:
            return True
        return inner.attr.value == self.params["step-method"] and self._receiver_verdict(inner.value) == STEP

    def leave_Module(self, node) -> None:
        # Steps are judged at the end: an optimizer may be bound after the
        # method that steps it (`__init__` after `train_step`, say).
        verdicts = [self._step_verdict(call) for _, call, _, _ in self.steps]
        stepping = {statement for (statement, *_), verdict in zip(self.steps, verdicts) if verdict == STEP}
        for (statement, call, scope_node, unit), verdict in zip(self.steps, verdicts):
            if verdict == STEP and self._cpu_only_test(scope_node):
                continue
            if verdict == STEP and self.next_statement.get(statement) in stepping:
                continue  # steps in a row (one per sub-model): one mark_step after the last runs them all
            if verdict == STEP:
                with self.ctx.other_backend.reopened(unit):
                    self._anchor(statement, call, "the optimizer step")
            elif verdict == UNKNOWN and scope_node in self.backward_scopes:
                message = self.params["unsure-message"].format(name=written(call.func.value))
                if message:
                    self.ctx.report(self.rule, call, message)

    def _step_verdict(self, call: cst.Call) -> str:
        verdict = self._receiver_verdict(call.func.value)
        if verdict != UNKNOWN:
            if verdict == NOT_STEP and any(self._receiver_verdict(a.value) == STEP for a in call.args):
                return STEP  # scaler.step(optimizer): the scaler steps the optimizer
            return verdict
        if any(self._receiver_verdict(arg.value) == STEP for arg in call.args if arg.keyword is None):
            return STEP
        return UNKNOWN

    def _receiver_verdict(self, expr) -> str:
        key = dotted_name(expr)
        if key is None:
            return UNKNOWN
        if key in self.bound:
            return self.bound[key]
        last = key.rsplit(".", 1)[-1]
        if self.params["not-step-names"] is not None and self.params["not-step-names"].search(last):
            return NOT_STEP
        if self.params["step-names"] is not None and self.params["step-names"].fullmatch(last):
            return STEP
        return UNKNOWN

    def _anchor(self, statement: cst.Expr, call: cst.Call, what: str) -> None:
        if self._already_followed(statement):
            return
        spelling = self.ctx.spell(self.params["function"], self.params["import-as"])
        if spelling is None:
            return
        code = f"{spelling.code}()"
        message = self.rule.message.format(name=written(call.func), call=code, what=what)
        guarded = spelling.binding is not None and spelling.binding.guarded
        if (self.ctx.gaudi_optional and spelling.new_import) or guarded:
            # The import may have failed (no Gaudi here): then the name is None.
            code = behind_name_test(spelling.code.split(".")[0], code, self.ctx.module.config_for_parsing)
        self.ctx.report(
            self.rule, call, message, lambda plan: plan.insert_after(statement, code), spelling
        )

    def _already_followed(self, statement) -> bool:
        following = self.next_statement.get(statement)
        if not isinstance(following, cst.Expr) or not isinstance(following.value, cst.Call):
            return False
        func = following.value.func
        if func_qualified(self.ctx, func) == self.params["function"]:
            return True
        # A call spelled like the function but through an import this file
        # lacks (`htcore.mark_step()` with no htcore import) still counts.
        name = dotted_name(func)
        return name is not None and name.rsplit(".", 1)[-1] == self.params["function"].rsplit(".", 1)[-1]


def _assignments(tree: cst.CSTNode) -> list[cst.Assign]:
    found, stack = [], list(children(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign):
            found.append(node)
        elif not isinstance(node, (cst.BaseExpression, cst.ClassDef)):
            stack.extend(children(node))
    return found


def _last_effect(body) -> Optional[cst.CSTNode]:
    """The last small statement of a function body that does something: a
    trailing `return` of a name or nothing is passed over."""
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
    for statement in reversed(statements):
        if isinstance(statement, cst.If) and statement.orelse is None:
            # `if htcore is not None: htcore.mark_step()`: the call it guards.
            return _first_small(statement)
        if not isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return None
        for small in reversed(statement.body):
            if isinstance(small, cst.Return) and (small.value is None or isinstance(small.value, (cst.Name, cst.Attribute))):
                continue
            return small
    return None


def _first_small(statement) -> Optional[cst.CSTNode]:
    """The first small statement of ``statement``; for an ``if`` without
    ``else`` (``if args.use_lazy_mode: htcore.mark_step()``), the first of its
    body: a call the source already guards by a flag of its own is there."""
    if isinstance(statement, cst.SimpleStatementLine):
        return statement.body[0]
    if isinstance(statement, cst.If) and statement.orelse is None:
        body = statement.body.body
        if isinstance(statement.body, cst.SimpleStatementSuite):
            return body[0] if body else None
        return _first_small(body[0]) if body and isinstance(body[0], cst.SimpleStatementLine) else None
    return None


def func_qualified(ctx, func) -> Optional[str]:
    hit = ctx.qualify(func)
    return hit[0] if hit else None
