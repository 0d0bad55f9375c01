"""How the ``trainer-move`` kind matches and fixes code (see ``hpu_port.kinds.trainer_move``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from hpu_port.branches import Held
from hpu_port.context import FileContext, Spelling
from hpu_port.device.pins import always_before, always_from, pinned_within
from hpu_port.device.subclasses import PARSER_NAMES
from hpu_port.model import Rule
from hpu_port.visitors._call_arguments import keyword_arg, named_arguments, with_commas
from hpu_port.visitors._references import ReferenceVisitor, last_name, written

TRAINER, ARGUMENTS, REPORTED = "trainer", "arguments", "reported"
_CHAINS = (cst.Name, cst.Attribute)


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _TrainerMoveVisitor(ctx, rules)


@dataclass
class _Use:
    """One use of a trainer or arguments class (or of a subclass of the file)."""

    rule: Rule
    role: str
    entry: Optional[dict]
    node: cst.CSTNode  # the reference, or the call of a subclass
    call: Optional[cst.Call] = None
    spelling: Optional[Spelling] = None
    binding: object = None
    config: Optional[Spelling] = None  # GaudiConfig, for a trainer call
    subclass: Optional["_Subclass"] = None  # set for the call of a subclass of the file


@dataclass
class _Subclass:
    role: str
    rule: Rule
    entry: Optional[dict]
    passes_keywords: bool  # no `__init__` of its own, or one that takes **kwargs
    uses: list = field(default_factory=list)


class _TrainerMoveVisitor(ReferenceVisitor):
    def __init__(self, ctx, rules) -> None:
        self.table: dict[str, tuple] = {}
        for rule in rules:
            for table, role in (("trainers", TRAINER), ("arguments", ARGUMENTS)):
                for name, entry in rule.params[table].items():
                    self.table.setdefault(name, (rule, role if _needs_met(entry, ctx) else REPORTED, entry))
            for name, advice in rule.params["names"].items():
                self.table.setdefault(name, (rule, REPORTED, {"advice": advice}))
        super().__init__(ctx, set(self.table))
        self.call_of: dict[cst.CSTNode, cst.Call] = {}
        self.uses: list[_Use] = []
        self.classes: list[cst.ClassDef] = []
        # The module's classes: only a call of one of them may be a subclass's.
        self.module_classes = {s.name.value: s for s in ctx.module.body if isinstance(s, cst.ClassDef)}
        self.class_names = set(self.module_classes)
        self.subclasses: dict[str, _Subclass] = {}
        self.local_calls: list[tuple[cst.Call, object]] = []  # calls of a bare name, with the scope's spelling of GaudiConfig
        # Calls of a trainer subclass another module of the project defines,
        # with the scope's spelling of GaudiConfig and whether it passes keywords on.
        self.project_calls: list[tuple[cst.Call, object, bool, str]] = []
        self.parsers: list[cst.Call] = []  # open calls of an argument parser (`HfArgumentParser((..., TrainingArguments))`)
        self.parsed: set[cst.CSTNode] = set()  # the classes handed to one
        self.clashes: list[str] = []  # why a parser would refuse a moved class beside another

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.pop()
        subclass = self._subclass_of(node)
        if subclass is not None and len(self.classes) == 0:
            self.subclasses[node.name.value] = subclass

    def visit_Call(self, node: cst.Call) -> None:
        self.call_of[node.func] = node
        if isinstance(node.func, cst.Name) and node.func.value in self.class_names:
            self.local_calls.append((node, self._config_spelling()))
        if self.ctx.facts.subclasses:
            hit = self.ctx.qualify(node.func)
            passes = self.ctx.facts.subclass_passes_keywords(hit[0]) if hit is not None else None
            if passes is not None:
                self.project_calls.append((node, self._config_spelling(), passes, self.ctx.facts.subclass_base(hit[0])))
        if _is_parser(node):
            self.parsers.append(node)

    def leave_Call(self, node: cst.Call) -> None:
        if _is_parser(node):
            self.parsers.pop()

    def on_reference(self, node, qualified, binding) -> None:
        rule, role, entry = self.table[qualified]
        use = _Use(rule, role, entry, node, self.call_of.get(node), binding=binding)
        if self.parsers and use.call is None:
            self.parsed.add(node)
            if role == ARGUMENTS:
                self._look_for_clash(self.parsers[-1], use)
        if role != REPORTED:
            use.spelling = self.ctx.spell(entry["to"], from_imports=frozenset({entry["to"].rsplit(".", 1)[0]}))
            if role == TRAINER and use.call is not None:
                use.config = self._config_spelling()
        self.uses.append(use)

    def _look_for_clash(self, parser: cst.Call, use: _Use) -> None:
        """A parser makes one command-line option of each field: a class handed
        to it beside the moved one that has a field the Gaudi class adds makes
        the parser refuse the pair (TRL's `ModelConfig` and `attn_implementation`)."""
        added = use.rule.params["gaudi-options"]
        gaudi = use.entry["to"].rsplit(".", 1)[-1]
        for other in _handed_classes(parser):
            if other is use.node:
                continue
            options = self._options_of(other)
            if options is None and not self.ctx.facts.root:
                # No project read (a file on standard input): nothing tells its fields.
                self.clashes.append(f"the fields of `{written(other)}`, handed to the parser beside `{gaudi}`, are not known here")
            common = sorted(options & added) if options is not None else ()
            if common:
                self.clashes.append(
                    f"`{written(other)}` and `{gaudi}` both define the option --{common[0]}, so the parser would refuse "
                    f"the pair: rename or drop the field of `{written(other)}`, then move"
                )

    def _options_of(self, handed: cst.BaseExpression) -> Optional[frozenset]:
        """The fields (options) of a class of arguments: from the rule's table for
        a library's, from its annotated fields for one of the module; None when
        not known here (the project facts follow the project's own)."""
        if isinstance(handed, cst.Name) and handed.value in self.module_classes:
            return _annotated_fields(self.module_classes[handed.value])
        hit = self.ctx.qualify(handed) if isinstance(handed, _CHAINS) else None
        return self.rules_params()["argument-options"].get(hit[0]) if hit is not None else None

    def _config_spelling(self) -> Optional[Spelling]:
        name = self.rules_params()["gaudi-config"]
        return self.ctx.spell(name, from_imports=frozenset({name.rsplit(".", 1)[0]}))

    def rules_params(self) -> dict:
        return next(iter(self.table.values()))[0].params

    def _subclass_of(self, node: cst.ClassDef) -> Optional[_Subclass]:
        for base in node.bases:
            found = next((use for use in self.uses if use.node is base.value), None)
            if found is not None and found.role != REPORTED:
                return _Subclass(found.role, found.rule, found.entry, _passes_keywords(node))
            if isinstance(base.value, cst.Name) and base.value.value in self.subclasses:
                parent = self.subclasses[base.value.value]
                return _Subclass(parent.role, parent.rule, parent.entry, parent.passes_keywords and _passes_keywords(node))
        return None

    # -- deciding once the whole file was seen ------------------------------------

    def leave_Module(self, node) -> None:
        for call, config in self.local_calls:
            subclass = self.subclasses.get(call.func.value)
            if subclass is not None:
                self.uses.append(_Use(subclass.rule, subclass.role, subclass.entry, call, call, config=config, subclass=subclass))
        for call, config, passes, base in self.project_calls:
            if base in self.table and not (isinstance(call.func, cst.Name) and call.func.value in self.subclasses):
                rule, role, entry = self.table[base]
                self.uses.append(_Use(rule, role, entry, call, call, config=config, subclass=_Subclass(role, rule, entry, passes)))
        moved = [use for use in self.uses if use.role != REPORTED]
        why = self._why_not_moved(moved)
        for use in self.uses:
            self._report(use, why)

    def _why_not_moved(self, moved: list) -> Optional[str]:
        if self.clashes:
            return self.clashes[0]
        # Somewhere in the project a moved class would break (a parser that
        # would refuse it, a call the move does not reach): the files share
        # these classes, so none of them moves.
        for library, path, line, why in self.ctx.facts.argument_clashes:
            if library in self.table and self.table[library][1] != REPORTED:
                where = os.path.relpath(path, self.ctx.facts.root) if self.ctx.facts.root else path
                return f"{where}:{line}: {why}; the move is held in every file of the project, whose files share these classes"
        for use in moved:
            subclass = use.subclass
            if use.spelling is None and subclass is None:
                return f"a local name hides `{use.entry['to'].rsplit('.', 1)[-1]}`"
            if use.role != TRAINER or use.call is None:
                continue
            if subclass is not None and not subclass.passes_keywords:
                return f"`{written(use.call.func)}` takes parameters of its own: give it `gaudi_config=` by hand"
            if use.config is None:
                return f"a local name hides `{self.rules_params()['gaudi-config'].rsplit('.', 1)[-1]}`"
            problem = self._trainer_call_problem(use)
            if problem is not None:
                return problem
        return None

    def _trainer_call_problem(self, use: _Use) -> Optional[str]:
        call = use.call
        arguments = _keyword_arguments(call, use.entry["positional"])
        if arguments is None:
            return f"`{written(call.func)}(...)` passes arguments by position or with `*`, which the Gaudi trainer orders differently"
        if "gaudi_config" in arguments:
            return None
        args = arguments.get("args")
        if args is None:
            return f"`{written(call.func)}(...)` is given no `args=`: the Gaudi trainer's default arguments need `use_habana`"
        if isinstance(args.value, _CHAINS) or self._arguments_call(args.value) is not None:
            return None
        return f"the arguments of `{written(call.func)}(...)` are neither a name nor built in the call"

    def _arguments_call(self, value) -> Optional[_Use]:
        if not isinstance(value, cst.Call):
            return None
        return next((use for use in self.uses if use.call is value and use.role == ARGUMENTS), None)

    def _report(self, use: _Use, why: Optional[str]) -> None:
        rule = use.rule
        name = written(use.call.func if use.subclass is not None else use.node)
        message = rule.message.format(name=name, advice=use.entry["advice"]).strip()
        if use.role == REPORTED:
            self.ctx.report(rule, use.node, message)
            return
        if use.role == TRAINER:
            message += self._pinned_advice(rule)
        if use.node in self.parsed and rule.params["launch-flags"]:
            message += f" (read from the command line: launch the script with {rule.params['launch-flags']})"
        if why is not None:
            self.ctx.report(rule, use.node, message, kept=Held("unclear", why))
            return
        edit = self._edit(use)
        if edit is None:
            return
        if use.subclass is not None:
            self.ctx.report(rule, use.call, message, self._with_config(use, self.ctx.replace(use.call, edit)), moves_script=True)
            return
        at = use.call if use.call is not None else use.node
        fix = self.ctx.replace(at, edit)
        if use.config is not None:
            fix = self._with_config(use, fix)
        self.ctx.report(rule, at, message, fix, use.spelling, use.binding, moves_script=True)

    def _pinned_advice(self, rule) -> str:
        """What the version of the library the project pins changes in the advice."""
        pinned = rule.params["pinned"]
        specifiers = self.ctx.facts.pinned(pinned["package"]) if pinned else ()
        if not specifiers:
            return ""
        written = ", ".join(specifiers)
        older = any(always_before(spec, pinned["version"]) for spec in specifiers)
        newer = any(always_from(spec, pinned["version"]) for spec in specifiers)
        if older == newer:
            return ""
        return " (" + pinned["before" if older else "from"].format(specifiers=written) + ")"

    def _with_config(self, use: _Use, fix):
        if use.role != TRAINER:
            return fix

        def apply(plan) -> None:
            fix(plan)
            use.config.commit(self.ctx)

        return apply

    def _edit(self, use: _Use):
        params = use.rule.params
        new_name = None if use.subclass is not None else use.spelling.code
        if use.call is None:
            return lambda updated: cst.parse_expression(new_name)
        if use.role == ARGUMENTS:
            defaults = params["argument-defaults"]
            return lambda updated: _add_keywords(updated, new_name, defaults)
        config = self._config_code(use)
        return lambda updated: _trainer_call(updated, new_name, use.entry["positional"], config)

    def _config_code(self, use: _Use) -> Optional[str]:
        params = use.rule.params
        arguments = _keyword_arguments(use.call, use.entry["positional"]) or {}
        if "gaudi_config" in arguments:
            return None
        args = arguments["args"].value
        built = self._arguments_call(args)
        if built is not None:
            if any(arg.keyword is not None and arg.keyword.value == "gaudi_config_name" for arg in args.args):
                return None  # the trainer reads the configuration it names
            return params["gaudi-config-default"].format(config=use.config.code)
        return params["gaudi-config-from-arguments"].format(config=use.config.code, args=written(args))


def _needs_met(entry: dict, ctx: FileContext) -> bool:
    """Whether the project pins the releases the Gaudi class is built on (or the entry names none)."""
    if "needs" not in entry:
        return True
    package, lowest, below = entry["needs-range"]
    return pinned_within(ctx.facts.pinned(package), lowest, below)


def _handed_classes(parser: cst.Call) -> list:
    """The classes of arguments a parser call is given: a tuple or list of
    them, or one; first or as ``dataclass_types=``."""
    given = [next((arg.value for arg in parser.args if arg.keyword is None and not arg.star), None)]
    given += [arg.value for arg in parser.args if arg.keyword is not None and arg.keyword.value == "dataclass_types"]
    handed = []
    for value in given:
        if isinstance(value, (cst.Tuple, cst.List)):
            handed += [element.value for element in value.elements if not isinstance(element, cst.StarredElement)]
        elif value is not None:
            handed.append(value)
    return handed


def _annotated_fields(node: cst.ClassDef) -> frozenset:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return frozenset(
        small.target.value
        for statement in body if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
    )


def _is_parser(call: cst.Call) -> bool:
    return last_name(call.func).endswith(PARSER_NAMES)


def _keyword_arguments(call: cst.Call, positional: list) -> Optional[dict]:
    """The call's arguments by parameter name, a mapping unpacked with `**`
    aside (its keys are keywords, which the Gaudi trainer takes by the same
    names); None when some are passed by position beyond ``positional`` or
    unpacked with `*`."""
    return named_arguments(call.with_changes(args=[arg for arg in call.args if arg.star != "**"]), positional)


def _passes_keywords(node: cst.ClassDef) -> bool:
    """Whether a class keeps its base's ``__init__`` or takes ``**kwargs`` in its own."""
    for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
            return statement.params.star_kwarg is not None
    return True


def _add_keywords(call: cst.Call, func: Optional[str], defaults: dict) -> cst.Call:
    given = {arg.keyword.value for arg in call.args if arg.keyword is not None}
    added = [keyword_arg(k, cst.parse_expression(v)) for k, v in defaults.items() if k not in given]
    args = with_commas([*call.args, *added], call.args[-1] if call.args else None) if added else call.args
    return call.with_changes(func=cst.parse_expression(func) if func else call.func, args=args)


def _trainer_call(call: cst.Call, func: Optional[str], positional: list, config: Optional[str]) -> cst.Call:
    """The call with its arguments after the first passed by keyword (the Gaudi
    trainer takes its configuration second) and ``gaudi_config=`` added."""
    args = []
    last = None
    index = 0
    for arg in call.args:
        new = arg
        if arg.keyword is None and not arg.star:
            if index > 0:
                new = keyword_arg(positional[index], arg.value, arg.comma).with_changes(whitespace_after_arg=arg.whitespace_after_arg)
            index += 1
        if arg is call.args[-1]:
            last = new
        args.append(new)
    if config is not None:
        args.append(keyword_arg("gaudi_config", cst.parse_expression(config)))
    args = with_commas(args, last)
    return call.with_changes(func=cst.parse_expression(func) if func else call.func, args=args)
