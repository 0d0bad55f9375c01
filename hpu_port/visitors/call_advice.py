"""How the ``call-advice`` kind matches code (see ``hpu_port.kinds.call_advice``)."""

from __future__ import annotations

import ast

import string
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.device.evidence import of_options
from hpu_port.kinds.call_advice import ANY_CALL, ANY_VALUE, EXPRESSION
from hpu_port.model import Rule
from hpu_port.visitors._references import NOT_A_LITERAL, RulesVisitor, literal_value, shown_briefly, written
from hpu_port.visitors.keyword_args import calls_match, same_value
from hpu_port.walk import descendants


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _CallAdviceVisitor(ctx, rules)


class _CallAdviceVisitor(RulesVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__(ctx, rules)
        self.wanted = set()
        for rule in rules:
            self.wanted |= rule.params["unless-used"]
            for entry in rule.params["calls"].values():
                self.wanted |= {m for m in entry["only-in-files-with"] if not m.startswith(".")}
        self.wanted_last_words = {name.rsplit(".", 1)[-1] for name in self.wanted}
        self.used: set[str] = set()  # qualified names, and `.method` for methods called
        # Where each name of a rule's `unless-used` is used: the outermost
        # function, or None for the module's own statements.
        self.used_in: dict[str, set] = {}
        self.held: list[tuple] = []  # (rule, entry, call, message, outermost function): decided once the file was seen
        self.other_device_bodies: set[cst.CSTNode] = set()
        self.other_device_depth = 0
        # A test naming another accelerator: its body is written for that device, and
        # advice about Gaudi has no place there (`if device.type == "npu": ...`).
        self.other_device_test = of_options(ctx.options).other_device_test
        # The literal defaults of the fields of each class the walk is in
        # (`padding: str = "longest"`), read for a call passing `self.padding`.
        self.class_defaults: list[dict] = []
        # Each function the walk is in, and the names it assigns once (read
        # for a call passing such a name: `map_location=loc_type`).
        self.functions: list[cst.FunctionDef] = []
        self._assigned_once: dict[cst.FunctionDef, dict] = {}
        self.module_functions = {s.name.value for s in ctx.module.body if isinstance(s, cst.FunctionDef)}

    def _module_function(self, name: cst.Name) -> bool:
        """Whether ``name`` calls a function the module defines, not a local
        name (a parameter) of the same spelling."""
        if name.value not in self.module_functions:
            return False
        bound = self.ctx.scope.binding_scope(name.value)
        return bound is None or bound is self.ctx.scopes.module

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_defaults.append(_field_defaults(node))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_defaults.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()

    def _names_of_function(self) -> dict:
        if not self.functions:
            return {}
        function = self.functions[-1]
        if function not in self._assigned_once:
            self._assigned_once[function] = _assigned_once(function)
        return self._assigned_once[function]

    # -- branches for other devices ----------------------------------------------

    def visit_If(self, node: cst.If) -> None:
        if self.other_device_test.search(written(node.test)):
            self.other_device_bodies.add(node.body)

    def visit_IndentedBlock(self, node) -> None:
        self.other_device_depth += node in self.other_device_bodies

    def leave_IndentedBlock(self, node) -> None:
        self.other_device_depth -= node in self.other_device_bodies

    def visit_SimpleStatementSuite(self, node) -> None:
        self.visit_IndentedBlock(node)

    def leave_SimpleStatementSuite(self, node) -> None:
        self.leave_IndentedBlock(node)

    # -- what the file uses elsewhere -------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `x.y` stands for a name ending in `y`, however `x` was imported.
        if node.attr.value in self.wanted_last_words:
            self._note(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._note(node)

    def _note(self, node) -> None:
        # Only noted, never claimed: other rules may act on the same names.
        if self.wanted:
            hit = self.ctx.qualify(node)
            if hit is not None and hit[0] in self.wanted:
                self.used.add(hit[0])
                self.used_in.setdefault(hit[0], set()).add(self._outermost())

    # -- the calls ----------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.used.add("." + node.func.attr.value)
        if self.other_device_depth:
            return
        hit = self.ctx.qualify(node.func)
        qualified = hit[0] if hit is not None else None
        if qualified is None and isinstance(node.func, cst.Name) and self._module_function(node.func):
            qualified = node.func.value  # a function of the module: its bare name
        for rule in self.rules:
            entry = _entry_for(rule.params["calls"], qualified)
            if entry is None:
                continue
            advice = advice_for(entry, node, self.class_defaults[-1] if self.class_defaults else {}, self._names_of_function())
            if advice is not None:
                message = rule.message.format(name=written(node.func), advice=advice)
                self.held.append((rule, entry, node, message, self._outermost()))

    def _satisfied(self, rule: Rule, scope: Optional[cst.FunctionDef]) -> bool:
        """Whether a name of the rule's `unless-used` is used where it counts
        for a call in ``scope`` (see the kind's `unless-used-in`)."""
        names = rule.params["unless-used"]
        if rule.params["unless-used-in"] == "file":
            return bool(self.used & names)
        return any(scope in self.used_in.get(name, ()) for name in names)

    def _outermost(self) -> Optional[cst.FunctionDef]:
        return self.functions[0] if self.functions else None

    def leave_Module(self, node) -> None:
        for rule, entry, call, message, scope in self.held:
            if self._satisfied(rule, scope):
                continue
            markers = entry["only-in-files-with"]
            if markers and not self.used & set(markers) and not (entry["or-in-cuda-projects"] and self.ctx.facts.uses_cuda):
                continue
            self.ctx.report(rule, call, message)


def _entry_for(calls: dict, qualified: Optional[str]) -> Optional[dict]:
    if qualified is not None:
        for name, entry in calls.items():
            if name != ANY_CALL and calls_match(qualified, {name}):
                return entry
    return calls.get(ANY_CALL)


def advice_for(entry: dict, call: cst.Call, defaults: Optional[dict] = None, names: Optional[dict] = None) -> Optional[str]:
    """The advice for ``call`` with its notes, or None when it does not apply.
    ``defaults``: the literal defaults of the fields of the class the call is
    in, by name: an argument ``self.<field>`` counts as that default.
    ``names``: the names the enclosing function assigns once, and the code
    each is assigned: an argument that is such a name counts as that code."""
    passed = arguments(call, entry["signature"])
    from_fields, from_names = {}, {}
    for parameter, code in passed.items():
        field = code[len("self."):] if code.startswith("self.") else None
        if defaults and field in defaults:
            passed[parameter] = defaults[field]
            from_fields[parameter] = code
        elif names and code in names:
            passed[parameter] = names[code]
            from_names[parameter] = code
    unpacks = any(arg.star == "**" for arg in call.args)
    deciding = [*entry["only-if"], *entry["skip-when"], *entry["skip-unless"]]
    if unpacks and not all(parameter in passed for parameter in deciding):
        return None  # the mapping may pass what decides
    for parameter, values in entry["only-if"].items():
        if parameter not in passed or not matches(passed[parameter], values):
            return None
    for parameter, values in entry["skip-when"].items():
        if parameter in passed and matches(passed[parameter], values):
            return None
    for parameter, values in entry["skip-unless"].items():
        value = passed.get(parameter)
        if value is not None and literal_value(value) is not NOT_A_LITERAL and not matches(value, values):
            return None
    fields = _Fields(passed)
    text = string.Formatter().vformat(entry["advice"], (), fields)
    notes = [
        string.Formatter().vformat(note["text"], (), fields)
        for parameter, note in entry["notes"].items()
        if parameter in passed and not matches(passed[parameter], note["unless"] + entry["skip-unless"].get(parameter, []))
    ]
    notes += [f"`{code}` is `{passed[parameter]}` unless the class is given another" for parameter, code in from_fields.items() if parameter in entry["only-if"]]
    notes += [f"`{parameter}={code}`, and `{code}` is `{shown_briefly(passed[parameter])}` here" for parameter, code in from_names.items() if parameter in deciding]
    return "; ".join([text, *notes])


def _field_defaults(node: cst.ClassDef) -> dict:
    """Field name -> its default as written, for the class's fields whose
    default is a literal: `padding: str = "longest"`, `padding = True`,
    `padding: str = field(default="longest")`."""
    found = {}
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                name, value = small.target.value, small.value
            elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                name, value = small.targets[0].target.value, small.value
            else:
                continue
            if isinstance(value, cst.Call) and written(value.func) in ("field", "dataclasses.field"):
                value = next((arg.value for arg in value.args if arg.keyword is not None and arg.keyword.value == "default"), None)
            if value is not None and literal_value(written(value)) is not NOT_A_LITERAL:
                found[name] = written(value)
    # A field its `__init__` sets (`self.padding = padding`) takes the value the caller gives.
    return {name: value for name, value in found.items() if name not in _set_in_init(body)}


def _set_in_init(body) -> set:
    init = next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        return set()
    return {
        target.target.attr.value
        for node in _walk_statements(init.body)
        for target in getattr(node, "targets", ())
        if isinstance(target.target, cst.Attribute) and isinstance(target.target.value, cst.Name) and target.target.value.value == "self"
    }


def _walk_statements(block):
    """The small statements of a block and of the blocks inside it."""
    for statement in getattr(block, "body", ()):
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif hasattr(statement, "body"):
            yield from _walk_statements(statement.body)


def arguments(call: cst.Call, signature: list[str]) -> dict[str, str]:
    """Parameter -> the argument's code, by keyword or by position."""
    passed = {arg.keyword.value: written(arg.value) for arg in call.args if arg.keyword is not None}
    for index, arg in enumerate(call.args):
        if arg.keyword is not None or index >= len(signature):
            break
        if arg.star:
            break  # `*args`: the positions after it are unknown
        passed.setdefault(signature[index], written(arg.value))
    return passed


def matches(code: str, values: list[str]) -> bool:
    """Whether ``code`` is one of ``values``: equal literals, or the same
    text; ``<any>`` is any value but None, ``<expression>`` any code that is
    not a literal (a value chosen elsewhere)."""
    if ANY_VALUE in values and literal_value(code) is not None and not _may_be_none(code):
        return True
    if EXPRESSION in values and literal_value(code) is NOT_A_LITERAL and not _none_on_gaudi(code):
        return True
    return same_value(code, values)


def _none_on_gaudi(code: str) -> bool:
    """A conditional with a `None` arm whose test does not ask for CUDA
    (`torch.device("cpu") if to_cpu else None`): None on Gaudi too, wherever
    the test goes the other way. A test of CUDA's (`None if
    torch.cuda.is_available() else "cpu"`) stays CUDA's: Gaudi takes the other arm."""
    choice = _choice_with_none(code)
    return choice is not None and "cuda" not in ast.unparse(choice.test).lower()


def _assigned_once(function: cst.FunctionDef) -> dict:
    """The names ``function`` assigns exactly once, by a plain `x = ...` in
    its own body (not in functions it defines), and the code assigned to
    each. A name bound any other way too (a loop, unpacking, `+=`, `with
    ... as`) is left out: its value is not that code everywhere."""
    counts: dict[str, int] = {}
    values: dict[str, str] = {}

    def bound(target) -> None:
        for name in (n for n in [target, *descendants(target)] if isinstance(n, cst.Name)):
            counts[name.value] = counts.get(name.value, 0) + 2

    stack = list(function.body.children)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    counts[target.target.value] = counts.get(target.target.value, 0) + 1
                    values[target.target.value] = written(node.value)
                else:
                    bound(target.target)
            stack.append(node.value)
            continue
        if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor)):
            bound(node.target)
        elif isinstance(node, cst.AsName):
            bound(node.name)
        stack.extend(node.children)
    return {name: values[name] for name, count in counts.items() if count == 1 and name in values}


def _may_be_none(code: str) -> bool:
    """A conditional with a `None` arm (`8 if args.fp16 else None`): unset
    whenever its condition goes the other way, as it does in bf16 on Gaudi."""
    return _choice_with_none(code) is not None


def _choice_with_none(code: str) -> Optional[ast.IfExp]:
    """``code`` as a conditional expression one of whose arms is `None`, or None."""
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.IfExp) and any(isinstance(arm, ast.Constant) and arm.value is None for arm in (node.body, node.orelse)):
        return node
    return None


class _Fields(dict):
    """The arguments by parameter name; a parameter the call does not pass shows as ``<name>``."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"
