"""How the ``call-rewrite`` kind matches and fixes code (see ``hpu_port.kinds.call_rewrite``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._arms import Choices, in_another_arm
from hpu_port.visitors._enclosing import enclosing
from hpu_port.visitors._references import (
    NOT_A_LITERAL,
    ReferenceVisitor,
    literal_value,
    same_literal,
    written,
)
from hpu_port.visitors._call_arguments import keyword_arg, named_arguments, with_commas
from hpu_port.walk import contains, descendants, walk
from hpu_port.branches import Held

Functions = enclosing("functions", "FunctionDef")


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _CallRewriteVisitor(ctx, rules)


class _CallRewriteVisitor(Choices, Functions, ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table = {}
        for rule in rules:
            for name, entry in rule.params["rewrites"].items():
                self.table.setdefault(name, (rule, entry))
        super().__init__(ctx, set(self.table))
        self.choices: list[cst.CSTNode] = []
        self.functions: list[cst.FunctionDef] = []
        # Per function (or the module): the qualified names it calls with a
        # device it picks (see `_is_fallback`).
        self.called_with_variables: dict[cst.CSTNode, set[str]] = {}
        # Calls of the table's names left as they are, and rewrites made in
        # an arm of a choice, judged once every arm has been seen.
        self.left_alone: set[cst.Call] = set()
        self.in_arms: list[tuple] = []
        # Tests of conditional expressions that pick float16 or bfloat16, and
        # whether float16 is their first arm (found when first needed).
        self.fp16_tests: Optional[dict[str, bool]] = None

    def visit_Call(self, node: cst.Call) -> None:
        hit = self.ctx.qualify(node.func)
        if hit is None or hit[0] not in self.table or not self.ctx.claim(node.func):
            return
        rule, entry = self.table[hit[0]]
        arguments = named_arguments(node, entry["positional"])
        sizes = _sizes(node) if arguments is None and entry["sequence"] else None
        if sizes is not None:
            # `torch.cuda.FloatTensor(n, c, t)`: an uninitialised tensor of that shape.
            message = rule.message.format(name=written(node.func), replacement=entry["to"])
            why = f"with several sizes ({sizes}) it makes an uninitialised tensor: use `torch.empty({sizes}, dtype=..., device=\"hpu\")`"
            self.ctx.report(rule, node, message, kept=Held("unclear", why))
            return
        if arguments is None or not _required(arguments, entry["require"]) or self._is_fallback(entry) or _already_set(arguments, entry):
            self.left_alone.add(node)
            return
        target = _target(arguments, entry)
        message = rule.message.format(name=written(node.func), replacement=target or entry["to"])
        refused = _refused(arguments, entry["report-unless"])
        if refused is not None:
            self.ctx.report(rule, node, message, kept=Held("unclear", f"`{refused}` has no counterpart there"))
            return
        unclear = _not_a_sequence(arguments, entry["sequence"])
        if unclear is not None:
            self.ctx.report(rule, node, message, kept=Held("unclear", f"`{unclear}` may be a size rather than data"))
            return
        if target is None:
            self.ctx.report(rule, node, message, kept=Held("unclear", f"`{entry['switch-keyword']}` is not a literal"))
            return
        fp16_test = self._fp16_arm(entry, node)
        if fp16_test is not None:
            why = f"it is made only when the code picks float16 over its own bfloat16 path (`{fp16_test}`); on Gaudi pick bfloat16, where it is not made"
            self.ctx.report(rule, node, message, kept=Held("dtype-role", why))
            return
        named = _enabled_for_named_float16(entry, node)
        if named is not None:
            why = f"it is on only where the code's precision option names float16 (`{named}`), which then computes in float16 and needs it; on Gaudi pick that option's bfloat16 value, where it is off"
            self.ctx.report(rule, node, message, kept=Held("dtype-role", why))
            return
        unplaced = _without_position(arguments, entry)
        if unplaced is not None:
            self.ctx.report(rule, node, message, kept=Held("unclear", f"`{unplaced}` has no place in a call that takes its arguments by position"))
            return
        dropped = [f"`{name}={written(arguments[name].value)}`" for name in sorted(entry["drop"]) if name in arguments]
        if dropped:
            message += f" (drops {', '.join(dropped)}, which `{target.rsplit('.', 1)[-1]}` does not take)"
        spelling = self.ctx.spell(target, from_imports=rule.params["from-import"])
        if spelling is None:
            return
        new_call = _new_call(node, arguments, entry, spelling.code)
        if written(new_call) == written(node):
            return
        edit = lambda updated: _new_call(updated, named_arguments(updated, entry["positional"]), entry, spelling.code)
        if self.choices and entry["arms-agree"]:
            self.in_arms.append((list(self.choices), rule, node, message, spelling, hit[1], edit))
            return
        self._apply(rule, node, message, spelling, hit[1], edit)

    def leave_Module(self, node) -> None:
        # `torch.amp.GradScaler(device=device) if new_torch else
        # torch.cuda.amp.GradScaler()`: ported alone, one arm would disagree
        # with the other on Gaudi.
        for choices, rule, call, message, spelling, binding, edit in self.in_arms:
            other = in_another_arm(choices, call, self.left_alone)
            if other is not None:
                self.ctx.report(rule, call, message, kept=Held("other-device", f"another arm calls `{written(other.func)}`, which stays as it is"))
            else:
                self._apply(rule, call, message, spelling, binding, edit)

    def _fp16_arm(self, entry, call: cst.Call) -> Optional[str]:
        """The test, as written, of the choice around the call when that test
        elsewhere picks float16 over bfloat16 (`torch.float16 if fp16 else
        torch.bfloat16`) and the call is in the same arm as float16 there;
        None otherwise."""
        if not entry["kept-in-fp16-arm"] or not self.choices:
            return None
        if self.fp16_tests is None:
            self.fp16_tests = _tests_choosing_float16(self.ctx.module)
        for choice in reversed(self.choices):
            if not isinstance(choice, (cst.If, cst.IfExp)):
                continue
            test = written(choice.test)
            in_body = contains(choice.body, call)
            if test in self.fp16_tests and self.fp16_tests[test] == in_body:
                return test
        return None

    def _is_fallback(self, entry) -> bool:
        """Whether the code around the call also calls the device-generic form
        the entry names (`fallback-of`) with a device it picks (a variable,
        not a literal `"cuda"`): the call is then that code's fallback for
        older versions (`try: torch.get_autocast_dtype(device) except
        TypeError: torch.get_autocast_gpu_dtype()`)."""
        if not entry["fallback-of"]:
            return False
        scope = self.functions[-1] if self.functions else self.ctx.module
        called = self.called_with_variables.get(scope)
        if called is None:
            finder = _CallsWithVariableFirstArgument(self.ctx)
            # At module level, the module's own statements: the functions and
            # classes are units of their own (and `check` may stub them out).
            roots = [scope] if scope is not self.ctx.module else [
                statement for statement in scope.body if not isinstance(statement, (cst.FunctionDef, cst.ClassDef))
            ]
            for root in roots:
                walk(root, [finder])
            called = self.called_with_variables[scope] = finder.names
        return not called.isdisjoint(entry["fallback-of"])

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if isinstance(node.decorator, cst.Call):
            return
        hit = self.ctx.qualify(node.decorator)
        if hit is None or hit[0] not in self.table or not self.ctx.claim(node.decorator):
            return
        rule, entry = self.table[hit[0]]
        spelling = self.ctx.spell(entry["to"], from_imports=rule.params["from-import"])
        if spelling is None:
            return
        message = rule.message.format(name=written(node.decorator), replacement=entry["to"])
        call = cst.Call(func=node.decorator)
        self._apply(rule, node, message, spelling, hit[1], lambda updated: updated.with_changes(
            decorator=_new_call(call, {}, entry, spelling.code)
        ))

    def _apply(self, rule, node, message, spelling, binding, edit) -> None:
        self.ctx.report(rule, node, message, self.ctx.replace(node, edit), spelling, binding)

    def on_reference(self, node, qualified, binding) -> None:
        rule, entry = self.table[qualified]
        if self._is_fallback(entry):
            return
        if entry["quiet-as-value"]:
            return
        message = rule.message.format(name=written(node), replacement=entry["to"])
        self.ctx.report(rule, node, message + " (used as a value here: rewrite it by hand)")


_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


class _CallsWithVariableFirstArgument:
    """The qualified names of the calls whose first argument is not a string literal."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if node.args and not node.args[0].star and not isinstance(node.args[0].value, _STRINGS):
            hit = self.ctx.qualify(node.func)
            if hit is not None:
                self.names.add(hit[0])




def _already_set(arguments, entry) -> bool:
    """With ``done-when-set``: the call already passes what the rewrite sets
    (`GradScaler(enabled=False)`), so it already does on Gaudi what the
    rewrite would make it do."""
    wanted = entry["set"]
    return entry["done-when-set"] and bool(wanted) and all(
        name in arguments and written(arguments[name].value) == value for name, value in wanted.items()
    )


def _required(arguments, require) -> bool:
    for keyword, accepted in require.items():
        arg = arguments.get(keyword)
        if arg is not None and literal_value(written(arg.value)) not in [literal_value(v) for v in accepted]:
            return False
    return True


def _refused(arguments, report_unless) -> Optional[str]:
    """``keyword=value`` of the first argument whose value the new callable cannot honour."""
    for keyword, accepted in report_unless.items():
        arg = arguments.get(keyword)
        if arg is not None and literal_value(written(arg.value)) not in [literal_value(v) for v in accepted]:
            return f"{keyword}={written(arg.value)}"
    return None


_SEQUENCES = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)


def _sizes(call: cst.Call) -> Optional[str]:
    """The sizes a legacy constructor is given, as written, when it is given
    several by position and nothing else (`torch.cuda.FloatTensor(3, 4)`)."""
    if len(call.args) < 2 or any(arg.keyword is not None or arg.star for arg in call.args):
        return None
    return ", ".join(written(arg.value) for arg in call.args)


def _not_a_sequence(arguments, names) -> Optional[str]:
    """The code of the first argument among ``names`` that is not written as a
    list, tuple or comprehension (a number or a name could be a size)."""
    for name in sorted(names):
        arg = arguments.get(name)
        if arg is not None and not isinstance(arg.value, _SEQUENCES):
            return written(arg.value)
    return None


def _target(arguments, entry) -> Optional[str]:
    keyword = entry["switch-keyword"]
    if keyword is None or keyword not in arguments:
        return entry["to"]
    value = literal_value(written(arguments[keyword].value))
    if value is NOT_A_LITERAL:
        return None
    for code, target in entry["switch"].items():
        if same_literal(literal_value(code), value):
            return target
    return entry["to"]


def _new_call(call: cst.Call, arguments, entry, func_code: str) -> cst.Call:
    """The rewritten call; existing keyword arguments keep their own layout."""
    skip = entry["drop"] | set(entry["prepend"]) | set(entry["set"])
    if entry["switch-keyword"]:
        skip.add(entry["switch-keyword"])
    kept = entry["positional"][: entry["keep-positional"]]
    # `query=q` goes to its place too when the rest are passed by position.
    by_position = bool(entry["as-positional"])
    args = [
        _by_position(arguments[name]) if by_position else arguments[name]
        for name in kept
        if name in arguments and (by_position or arguments[name].keyword is None)
    ]
    args = [cst.Arg(value=cst.parse_expression(code)) for code in entry["prepend-positional"]] + args
    args += _as_positional(arguments, entry["as-positional"])
    skip |= set(entry["as-positional"]) | (set(kept) if by_position else set())
    args += [keyword_arg(k, cst.parse_expression(v)) for k, v in entry["prepend"].items()]
    for name, arg in arguments.items():
        if name in skip or any(arg is a for a in args):
            continue
        args.append(arg if arg.keyword is not None else keyword_arg(name, arg.value, arg.comma))
    args += [keyword_arg(k, cst.parse_expression(v)) for k, v in entry["set"].items()]
    args += [keyword_arg(k, cst.parse_expression(v)) for k, v in entry["defaults"].items() if k not in arguments]
    args = with_commas(args, call.args[-1] if call.args else None)
    return call.with_changes(func=cst.parse_expression(func_code), args=args)


def _by_position(arg: cst.Arg) -> cst.Arg:
    return arg if arg.keyword is None else cst.Arg(value=arg.value)


def _without_position(arguments, entry) -> Optional[str]:
    """``keyword=value`` of an argument a by-position call has no place for
    (`enable_gqa=` for a callable that takes none of its own)."""
    if not entry["as-positional"]:
        return None
    known = set(entry["positional"]) | entry["drop"] | set(entry["set"]) | set(entry["prepend"])
    for name, arg in arguments.items():
        if name not in known:
            return f"{name}={written(arg.value)}"
    return None


def _as_positional(arguments, defaults: dict) -> list:
    given = [name for name in defaults if name in arguments]
    if not given:
        return []
    last = list(defaults).index(given[-1])
    return [
        cst.Arg(value=arguments[name].value if name in arguments else cst.parse_expression(defaults[name]))
        for name in list(defaults)[: last + 1]
    ]










_FLOAT16 = {"torch.float16", "torch.half", "float16", "half"}
_BFLOAT16 = {"torch.bfloat16", "bfloat16"}


# How precision options name float16 (`--precision fp16`, Lightning's "16-mixed").
_FLOAT16_OPTION_VALUES = frozenset({"fp16", "float16", "half", "16", "16-mixed", "fp16-mixed"})


def _enabled_for_named_float16(entry, call: cst.Call) -> Optional[str]:
    """The `enabled=` test, as written, when it compares a precision option
    with a string that names float16 (`enabled=args.precision in ["fp16"]`,
    `enabled=precision == "16-mixed"`): an option with named values has
    others, bfloat16 among them, under which the scaler is already off."""
    if not entry["kept-in-fp16-arm"]:
        return None
    value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "enabled"), None)
    if value is None:
        return None
    for comparison in (n for n in [value, *descendants(value)] if isinstance(n, cst.Comparison)):
        strings = [n for n in descendants(comparison) if isinstance(n, cst.SimpleString)]
        if any(literal_value(written(s)) in _FLOAT16_OPTION_VALUES for s in strings):
            return written(value)
    return None


def _tests_choosing_float16(module: cst.Module) -> dict[str, bool]:
    """The tests, as written, of `a if test else b` whose arms are float16 and
    bfloat16 (either way round), with whether float16 is the first arm."""
    found = _DtypeChoices()
    walk(module, [found])
    return found.tests


class _DtypeChoices:
    def __init__(self) -> None:
        self.tests: dict[str, bool] = {}

    def visit_IfExp(self, node: cst.IfExp) -> None:
        arms = {written(node.body), written(node.orelse)}
        if arms & _FLOAT16 and arms & _BFLOAT16:
            self.tests[written(node.test)] = written(node.body) in _FLOAT16
