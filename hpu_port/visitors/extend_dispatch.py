"""How the ``extend-dispatch`` kind adds an HPU arm (see ``hpu_port.kinds.extend_dispatch``)."""

from __future__ import annotations

import re
import textwrap
from typing import Optional

import libcst as cst

from hpu_port.branches import (
    CUDA_PROBE,
    Held,
    LIGHTNING_GPU_TEST,
    chain_arms,
    cuda_arm_of_dispatch,
    cuda_case_of_dispatch,
    cuda_entry_of_table,
    cuda_fallback_of_dispatch,
    enum_member,
    sibling_dispatch,
)
from hpu_port.context import FileContext
from hpu_port.device.declarations import HPU_PROBE_NAME
from hpu_port.model import Rule
from hpu_port.visitors._class_state import ClassChoices, attributes_read
from hpu_port.visitors._references import shown_briefly, written
from hpu_port.walk import descendants

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
        self.functions: list[cst.FunctionDef] = []
        # The classes the walk is in, each with the CUDA arms left without an
        # HPU twin and the HPU arms its methods would get (decided as the class
        # is left: see ``_class_state``).
        self.classes: list[ClassChoices] = []
        self.head: Optional[cst.CSTNode] = None

    def visit_FunctionDef(self, node) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, node) -> None:
        self.functions.pop()

    def visit_ClassDef(self, node) -> None:
        self.classes.append(ClassChoices(node, len(self.functions)))

    def leave_ClassDef(self, node) -> None:
        choices = self.classes.pop()
        unset = choices.unset_on_gaudi(self.ctx)
        for method, at, message, fix in choices.extensions:
            read = sorted(attributes_read(method) & unset) if unset else ()
            if read:
                why = f"the HPU arm would read `self.{read[0]}`, which only a CUDA arm left without an HPU twin sets (in this class); add both arms by hand"
                self.ctx.report(self.rule, at, message, fix, kept=Held("by-hand", why), extends=True)
            else:
                self.ctx.report(self.rule, at, message, fix, extends=True)

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
        self.head = head
        if self.ctx.port_snippet is None or head not in self.ctx.branches.extended and not self._dispatch(head):
            return
        arm = cuda_arm_of_dispatch(head, self.ctx.module, self.ctx.branches.other_probe)
        if arm is None:
            last = cuda_fallback_of_dispatch(head, self.ctx.module, self.ctx.branches.other_probe)
            if last is not None:
                self._extend_fallback(head, last)
            return
        if isinstance(arm, cst.If):
            self._extend(arm, _ends_without_else(head))
        elif self.lines:
            self._extend_expression(head, arm)

    def visit_Match(self, node: cst.Match) -> None:
        """`match device.type: case "cuda": ... case "mps": ...`: a `case
        "hpu":` with the CUDA case's code as ported goes right after it."""
        if self.ctx.port_snippet is None or node not in self.ctx.branches.extended:
            return
        case = cuda_case_of_dispatch(node, self.ctx.branches.other_probe)
        if case is None:
            return
        hpu, lacking = self._hpu_key(case.pattern.value)
        if hpu is None:
            return self._report_missing(case.pattern, lacking)
        test = cst.Comparison(node.subject, [cst.ComparisonTarget(cst.Equal(), case.pattern.value)])
        arm = cst.If(test=test, body=case.body)
        ported = self.ctx.port_snippet(self._in_function(self.ctx.module.code_for_node(arm)))
        if self._missing(case.pattern, ported):
            return
        last = _last_statement(ported.module, inside_function=bool(self.functions))
        if not isinstance(last, cst.If):
            return
        if self.ctx.module.code_for_node(last.body) == self.ctx.module.code_for_node(case.body):
            return self._report_missing(case.pattern, "its case holds nothing the port changes for Gaudi; if Gaudi should take it, write the HPU case by hand")
        new_case = case.with_changes(pattern=cst.MatchValue(hpu), body=last.body, leading_lines=[])
        message = self.rule.message.format(name=f"case {written(case.pattern)}", arm=f"case {written(hpu)}:")
        imports = ported.imports

        def insert(updated: cst.Match) -> cst.Match:
            cases = list(updated.cases)
            index = next(i for i, c in enumerate(node.cases) if c is case)
            return updated.with_changes(cases=[*cases[: index + 1], new_case, *cases[index + 1:]])

        self._report_extension(case.pattern, message, lambda plan: _plan_edit(plan, node, insert, imports))

    def visit_Dict(self, node: cst.Dict) -> None:
        """`{"cuda": "nccl", "npu": "hccl"}`: an `"hpu"` entry, with the CUDA
        entry's value as ported, goes right after it."""
        if self.ctx.port_snippet is None or node not in self.ctx.branches.extended:
            return
        entry = cuda_entry_of_table(node, self.ctx.branches.other_probe)
        if entry is None:
            return
        hpu, lacking = self._hpu_key(entry.key)
        if hpu is None:
            return self._report_missing(entry.key, lacking)
        value, imports = self._table_value(entry)
        if value is None:
            return self._report_missing(entry.key, f"its entry's value is nothing the port changes for Gaudi; add the `{written(hpu)}` entry by hand")
        if _needs_gaudi_when_built(value):
            # A table is built when its code runs, on every machine: an entry
            # that reads `torch.hpu` would fail where Gaudi's software is not.
            return self._report_missing(entry.key, f"`{shown_briefly(written(value))}` would be read when the table is built, also where Gaudi's software is missing; add the `{written(hpu)}` entry by hand (a lambda defers it)")
        index = next(i for i, e in enumerate(node.elements) if e is entry)
        last = index == len(node.elements) - 1
        # The new entry takes the CUDA entry's place in the layout, comma and all.
        new_entry = entry.with_changes(key=hpu, value=value)
        message = self.rule.message.format(name=f"{written(entry.key)}: ...", arm=f"{written(hpu)}: {shown_briefly(written(value))}")

        def insert(updated: cst.Dict) -> cst.Dict:
            elements = list(updated.elements)
            cuda = elements[index]
            if last and not isinstance(cuda.comma, cst.Comma):
                cuda = cuda.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            return updated.with_changes(elements=[*elements[:index], cuda, new_entry, *elements[index + 1:]])

        self._report_extension(entry, message, lambda plan: _plan_edit(plan, node, insert, imports))

    def _hpu_key(self, key: cst.BaseExpression) -> tuple[Optional[cst.BaseExpression], str]:
        """The HPU's key beside CUDA's ``key`` (`"hpu"`, `DeviceType.HPU`),
        or None and what is missing: an enum's key needs the enum to have
        an HPU member, which only the project can add."""
        if isinstance(key, cst.SimpleString):
            return cst.SimpleString(f"{key.quote}hpu{key.quote}"), ""
        base = enum_member(key)[0]
        name, member = base.rsplit(".", 1)[-1], "HPU"
        members = _module_enum_members(self.ctx.module, name)
        if members is None:
            members = self.ctx.facts.enum_members(name)
        if members is None:
            return None, f"`{name}` is not an enum this project defines: add its HPU member and the `{base}.{member}` entry by hand"
        if member not in members:
            return None, f"`{name}` has no `{member}` member: add it, then the `{base}.{member}` entry"
        return key.with_changes(attr=cst.Name(member)), ""

    def _table_value(self, entry: cst.DictElement):
        """The HPU entry's value: the rule's own for a plain string
        (`"nccl"` -> `"hccl"`), else the CUDA value as ported; None when the
        port leaves it as it is."""
        known = self.rule.params["table-values"]
        if isinstance(entry.value, cst.SimpleString) and entry.value.evaluated_value in known:
            quote = entry.value.quote
            return cst.SimpleString(f"{quote}{known[entry.value.evaluated_value]}{quote}"), ()
        line = f"value = {self.ctx.module.code_for_node(_marked(entry.value))}\n"
        ported = self.ctx.port_snippet(self._in_function(line))
        if ported.missing or ported.module is None:
            return None, ()
        finder = _MarkFinder()
        ported.module.visit(finder)
        if finder.found is None:
            return None, ()
        value = finder.found.with_changes(lpar=finder.found.lpar[1:], rpar=finder.found.rpar[:-1])
        return (None, ()) if written(value) == written(entry.value) else (value, ported.imports)

    def visit_IndentedBlock(self, node) -> None:
        self._siblings(node.body)

    def visit_Module(self, node) -> None:
        self._siblings(node.body)

    def _siblings(self, statements) -> None:
        """`if is_torch_cuda_available(): return ...` then `if
        is_torch_npu_available(): return ...`: one `if` per device, side by side."""
        if self.ctx.port_snippet is None:
            return
        arm = sibling_dispatch(statements, self.ctx.module, self.ctx.branches.other_probe)
        if arm is not None:
            self._extend(arm, True, beside=True)

    def _extend(self, arm: cst.If, optional: bool, beside: bool = False) -> None:
        """Add the HPU twin of ``arm``; ``optional``: nothing runs when no arm
        is taken, so an arm that would do nothing on Gaudi is not added."""
        lightning = _lightning_hpu_test(arm.test)
        # The test names Lightning's accelerator, not a device the port knows: only the body is ported.
        tested = arm.with_changes(test=cst.Name("True")) if lightning is not None else arm
        code = self.ctx.module.code_for_node(tested.with_changes(orelse=None, leading_lines=[]))
        ported = self.ctx.port_snippet(self._in_function(code))
        if self._missing(arm, ported):
            return
        last = _last_statement(ported.module, inside_function=bool(self.functions))
        if not isinstance(last, cst.If):
            return
        if optional and all(_is_pass(s) for s in _statements_of(last.body)):
            return  # what the CUDA arm does has no counterpart to do on Gaudi
        if self.ctx.module.code_for_node(last.body) == self.ctx.module.code_for_node(arm.body):
            return self._report_missing(arm, "its arm holds nothing the port changes for Gaudi; if Gaudi should take it, write the HPU arm by hand")
        probe, probe_imports = (lightning, ()) if lightning is not None else self._probe(last.test)
        if probe is None:
            return self._report_missing(arm, "its test has no HPU counterpart the port can write")
        body, backend_imports = _gaudi_backend(last.body)
        new_arm = last.with_changes(test=probe, body=body, orelse=None, leading_lines=[])
        probe_imports = (*probe_imports, *backend_imports)
        first_line = self.ctx.module.code_for_node(new_arm).splitlines()[0]
        shown = first_line if beside else f"elif {first_line[3:]}"
        message = self.rule.message.format(name=shown_briefly(written(arm.test)), arm=shown)
        imports = (*ported.imports, *probe_imports)
        self._report_extension(arm.test, message, lambda plan: _plan(plan, arm, new_arm, imports, beside))

    def _extend_expression(self, head: cst.IfExp, arm: cst.IfExp) -> None:
        line = self.lines[-1].deep_replace(head, _marked(arm.body))
        snippet = f"if {written(arm.test)}:\n" + textwrap.indent(self.ctx.module.code_for_node(line), "    ")
        ported = self.ctx.port_snippet(self._in_function(snippet))
        if self._missing(arm, ported) or ported.module is None:
            return
        finder = _MarkFinder()
        ported.module.visit(finder)
        if finder.found is None or finder.test is None:
            return
        value = finder.found.with_changes(lpar=finder.found.lpar[1:], rpar=finder.found.rpar[:-1])
        if written(value) == written(arm.body):
            return self._report_missing(arm, "its value is nothing the port changes for Gaudi; if Gaudi should take it, add the HPU arm by hand")
        probe, probe_imports = self._probe(finder.test)
        if probe is None:
            return self._report_missing(arm, "its test has no HPU counterpart the port can write")
        new_arm = cst.IfExp(test=probe, body=value, orelse=arm.orelse)
        message = self.rule.message.format(name=shown_briefly(written(arm.test)), arm=_shown_arm(new_arm))
        imports = (*ported.imports, *probe_imports)
        self._report_extension(arm.test, message, lambda plan: _plan(plan, arm, new_arm, imports))

    def _extend_fallback(self, head, last) -> None:
        """`"xpu" if is_torch_xpu_available() else "cuda"`: the HPU arm goes
        before the CUDA fallback, which stays the `else`."""
        probe, probe_imports = self._hpu_probe()
        if isinstance(last, cst.If):
            fallback = last.orelse.body
            snippet = self.ctx.module.code_for_node(cst.If(test=cst.Name("True"), body=fallback))
            ported = self.ctx.port_snippet(self._in_function(snippet))
            if self._missing(last, ported):
                return
            ported_if = _last_statement(ported.module, inside_function=bool(self.functions))
            if not isinstance(ported_if, cst.If) or self.ctx.module.code_for_node(ported_if.body) == self.ctx.module.code_for_node(fallback):
                return
            if all(_is_pass(statement) for statement in _statements_of(ported_if.body)):
                return  # the fallback does nothing Gaudi needs
            body, backend_imports = _gaudi_backend(ported_if.body)
            new_arm = cst.If(test=probe, body=body)
            probe_imports = (*probe_imports, *backend_imports)
            edit = lambda updated: updated.with_changes(orelse=new_arm.with_changes(orelse=updated.orelse))
            shown = f"elif {written(probe)}:"
        else:
            if not self.lines:
                return
            line = self.lines[-1].deep_replace(head, _marked(last.orelse))
            ported = self.ctx.port_snippet(self._in_function(self.ctx.module.code_for_node(line)))
            if self._missing(last, ported) or ported.module is None:
                return
            finder = _MarkFinder()
            ported.module.visit(finder)
            if finder.found is None:
                return
            value = finder.found.with_changes(lpar=finder.found.lpar[1:], rpar=finder.found.rpar[:-1])
            if written(value) == written(last.orelse):
                return
            edit = lambda updated: updated.with_changes(orelse=cst.IfExp(test=probe, body=value, orelse=updated.orelse))
            shown = f"... if {written(probe)} else ..."
        message = self.rule.message.format(name=shown_briefly(written(last.test)), arm=shown)
        message = message.replace("picks CUDA among other devices", "falls back to CUDA after other devices")
        imports = (*ported.imports, *probe_imports)
        self._report_extension(last.test, message, lambda plan: _plan_edit(plan, last, edit, imports))

    def _in_function(self, code: str) -> str:
        """``code`` inside a function of the same name as the one it is in:
        rules read what a value is for from it (`def backend(): return "nccl"`)."""
        if not self.functions:
            return code
        return f"def {self.functions[-1].name.value}():\n" + textwrap.indent(code, "    ")

    def _missing(self, arm, ported) -> bool:
        if ported.missing:
            self._report_missing(arm, ported.missing)
        return bool(ported.missing)

    def _report_missing(self, arm, what: str) -> None:
        """Report ``arm`` (an arm with its test, a case's pattern, a table's key) with what it lacks."""
        at = getattr(arm, "test", arm)
        message = self.rule.params["missing-message"].format(name=shown_briefly(written(at)), arm=what)
        self.ctx.report(self.rule, at, message)
        if self.classes and isinstance(arm, cst.If):
            self.classes[-1].missing.append((arm, self.head))

    def _report_extension(self, at, message: str, fix) -> None:
        """Report an HPU arm to add; in a method, once its class is read whole."""
        choices = self.classes[-1] if self.classes else None
        if choices is None or len(self.functions) <= choices.depth:
            return self.ctx.report(self.rule, at, message, fix, extends=True)
        choices.extensions.append((self.functions[choices.depth], at, message, fix))

    def _dispatch(self, head) -> bool:
        tests = "\n".join(self.ctx.module.code_for_node(a.test) for a in chain_arms(head))
        if LIGHTNING_GPU_TEST.search(tests):
            return True
        return "cuda" in tests.lower() and self.ctx.branches.other_probe.search(tests) is not None

    def _probe(self, test: cst.BaseExpression) -> tuple[Optional[cst.BaseExpression], tuple]:
        """The HPU arm's test and the imports it needs: the ported CUDA test,
        behind `hasattr(torch, "hpu")` when it calls `torch.hpu`; where the
        port left the CUDA probe (a project's own helper, a device enum),
        that probe alone replaced by the HPU's, the rest of the test kept.
        Where the project has its own test for Gaudi, it is the HPU's probe."""
        helper, imports = self._project_probe()
        code = written(test)
        if "hpu" in code.lower():
            if helper is not None:
                replaced = test.visit(_AvailabilityReplacer(helper))
                if written(replaced) != code:
                    return replaced, imports
            used = _TORCH_HPU.search(code)
            if used is None or "hasattr(" in code:
                return test, ()
            if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)):
                code = f"({code})"
            return cst.parse_expression(f'hasattr({used.group(1)}, "hpu") and {code}'), ()
        probe, imports = self._hpu_probe((helper, imports))
        replacer = _ProbeReplacer(probe, test)
        replaced = test.visit(replacer)
        return (replaced, imports) if replacer.done else (None, ())

    def _hpu_probe(self, found: Optional[tuple] = None) -> tuple[cst.BaseExpression, tuple]:
        """The test for Gaudi an added arm uses: the project's own (``found``,
        if already looked up), else the rule's `probe`."""
        helper, imports = found if found is not None else self._project_probe()
        if helper is not None:
            return helper, imports
        return cst.parse_expression(self.rule.params["probe"]), ()

    def _project_probe(self) -> tuple[Optional[cst.Call], tuple]:
        """A call of a test for Gaudi this module already has (`def
        is_hpu_available()`, or imported), or of the project's own from a
        module this one imports from, with the import that needs; None if
        there is none. Either exists in the version the user runs."""
        inside = self.functions[-1].name.value if self.functions else None
        bound = _module_bindings(self.ctx.module)
        for name in sorted(bound):
            if HPU_PROBE_NAME.match(name) and name != inside:
                return cst.Call(cst.Name(name)), ()
        here = self.ctx.facts.module_name(self.ctx.path) if self.ctx.path else ""
        imported_from = _modules_imported_from(self.ctx.module, here, self.ctx.path or "")
        for qualified in self.ctx.facts.hpu_probes:
            module, name = qualified.rsplit(".", 1) if "." in qualified else ("", qualified)
            if module in imported_from and name not in bound and name != inside:
                return cst.Call(cst.Name(name)), (f"from {imported_from[module]} import {name}",)
        return None, ()


def _module_bindings(module: cst.Module) -> set:
    """The names the top level of ``module`` imports or defines as functions."""
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    names.update(written(a.asname.name if a.asname else a.name) for a in small.names)
    return names


def _modules_imported_from(module: cst.Module, here: str, path: str) -> dict:
    """The absolute names of the modules the top level of ``module`` (named
    ``here``) imports names from, relative imports resolved, each with the
    way the module writes it (`.devices`)."""
    package = here if path.endswith("__init__.py") else here.rpartition(".")[0]
    found = {}
    for statement in module.body:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        for small in smalls:
            if not isinstance(small, cst.ImportFrom):
                continue
            name = written(small.module) if small.module is not None else ""
            spelled = "." * len(small.relative) + name
            if small.relative:
                base = package.split(".") if package else []
                base = base[: len(base) - (len(small.relative) - 1)] if len(small.relative) > 1 else base
                name = ".".join([*base, name] if name else base)
            found.setdefault(name, spelled)
    return found


# Keywords that name the collective backend (`init_process_group(backend=...)`,
# `deepspeed.init_distributed(dist_backend=...)`).
_BACKEND_KEYWORDS = frozenset({"backend", "dist_backend"})
_HCCL_IMPORT = "import habana_frameworks.torch.distributed.hccl"


def _gaudi_backend(body):
    """``body`` of a new HPU arm with a backend the caller passes (`backend=
    backend`, "nccl" by default for CUDA's arm) made `"hccl"`, and the import
    HCCL needs: the arm only runs on Gaudi, whose backend that is."""
    strings = [node for node in descendants(body) if isinstance(node, cst.SimpleString)]
    # Written in the quotes the arm's own strings use.
    replacer = _BackendReplacer(strings[0].quote[0] if strings else '"')
    body = body.visit(replacer)
    return body, ((_HCCL_IMPORT,) if replacer.done else ())


class _BackendReplacer(cst.CSTTransformer):
    def __init__(self, quote: str) -> None:
        super().__init__()
        self.quote = quote
        self.done = False

    def leave_Arg(self, original, updated):
        keyword = updated.keyword.value if updated.keyword is not None else None
        if keyword in _BACKEND_KEYWORDS and isinstance(updated.value, (cst.Name, cst.Attribute)):
            self.done = True
            return updated.with_changes(value=cst.SimpleString(f"{self.quote}hccl{self.quote}"))
        return updated


def _module_enum_members(module: cst.Module, name: str) -> Optional[set]:
    """The member names of the class ``name`` defined at the top of ``module``."""
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == name:
            return {
                target.target.value
                for line in statement.body.body
                if isinstance(line, cst.SimpleStatementLine)
                for small in line.body
                if isinstance(small, cst.Assign)
                for target in small.targets
                if isinstance(target.target, cst.Name)
            }
    return None


def _needs_gaudi_when_built(value: cst.BaseExpression) -> bool:
    """Whether evaluating ``value`` reads an HPU API (outside a lambda)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Lambda):
            continue
        if isinstance(node, cst.Attribute) and node.attr.value == "hpu" or isinstance(node, cst.Name) and node.value in ("htcore", "hthpu"):
            return True
        stack.extend(node.children)
    return False


def _plan_edit(plan, node, edit, imports) -> None:
    plan.replace(node, edit)
    for statement in imports:
        plan.add_import(statement)
    plan.guard_imports = True


def _plan(plan, arm, new_arm, imports, beside: bool = False) -> None:
    # The CUDA arm keeps every byte; what followed it now follows the HPU arm.
    if beside:
        plan.replace(arm, lambda updated: cst.FlattenSentinel([updated, new_arm]))
    else:
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
        # Expressions hold a sequence of parentheses; a def or class one, or none.
        if isinstance(lpar, (list, tuple)) and lpar and isinstance(lpar[0], cst.LeftParen):
            space = lpar[0].whitespace_after
            comment = space.first_line.comment if isinstance(space, cst.ParenthesizedWhitespace) else None
            if comment is not None and comment.value == _ARM_MARK:
                self.found, self.test = node, (self.tests[-1] if self.tests else None)
                return False
        return super().on_visit(node)


class _AvailabilityReplacer(cst.CSTTransformer):
    """Puts ``probe`` in place of each `<module>.hpu.is_available()` of a test."""

    def __init__(self, probe: cst.BaseExpression) -> None:
        super().__init__()
        self.probe = probe

    def leave_Call(self, original, updated):
        return self.probe if written(updated.func).endswith(".hpu.is_available") else updated

    def leave_BooleanOperation(self, original, updated):
        # `hasattr(torch, "hpu") and <probe>`: the project's test needs no guard.
        left = updated.left
        guard = isinstance(left, cst.Call) and written(left.func) == "hasattr" and "hpu" in written(left)
        if guard and isinstance(updated.operator, cst.And) and written(updated.right) == written(self.probe):
            return updated.right.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated


class _ProbeReplacer(cst.CSTTransformer):
    """Puts ``probe`` in place of the first CUDA probe of a test."""

    def __init__(self, probe: cst.BaseExpression, test: cst.BaseExpression) -> None:
        super().__init__()
        self.probe = probe
        self.test = test
        self.done = False

    def on_leave(self, original, updated):
        if not self.done and isinstance(updated, (cst.Call, cst.Comparison)) and CUDA_PROBE.search(written(updated)):
            self.done = True
            if original is self.test:
                return self.probe
            # Inside `and`/`or`/`not`: kept apart from what is around it.
            return self.probe.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated


def _lightning_hpu_test(test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`args.accelerator.upper() == "GPU"` as Gaudi's arm tests it (`== "HPU"`,
    in the same case); None for a test that is not of Lightning's accelerator."""
    if not LIGHTNING_GPU_TEST.search(written(test)):
        return None
    return test.visit(_GpuNameReplacer())


class _GpuNameReplacer(cst.CSTTransformer):
    def leave_SimpleString(self, original, updated):
        if str(updated.evaluated_value).lower() != "gpu":
            return updated
        name = "HPU" if updated.raw_value.isupper() else "hpu"
        return updated.with_changes(value=f"{updated.prefix}{updated.quote}{name}{updated.quote}")


def _last_statement(module: Optional[cst.Module], inside_function: bool):
    if module is None or not module.body:
        return None
    last = module.body[-1]
    if inside_function:
        body = last.body.body if isinstance(last, cst.FunctionDef) and isinstance(last.body, cst.IndentedBlock) else []
        return body[-1] if body else None
    return last


def _ends_without_else(head: cst.If) -> bool:
    arms = chain_arms(head)
    return arms[-1].orelse is None


def _statements_of(body) -> list:
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    smalls = []
    for statement in body.body:
        smalls += list(statement.body) if isinstance(statement, cst.SimpleStatementLine) else [statement]
    return smalls


def _is_pass(statement) -> bool:
    return isinstance(statement, cst.Pass)


def _shown_arm(expression: cst.IfExp) -> str:
    return f"... if {written(expression.test)} else ..."
