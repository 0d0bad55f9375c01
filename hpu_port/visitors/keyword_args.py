"""How the ``keyword-args`` kind matches and fixes code (see ``hpu_port.kinds.keyword_args``)."""

from __future__ import annotations

import fnmatch
import re
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.kinds.keyword_args import MISSING
from hpu_port.model import Rule, is_advice
from hpu_port.names import LOCAL
from hpu_port.visitors._references import NOT_A_LITERAL, literal_value, same_literal, written
from hpu_port.visitors._subclasses import local_subclasses
from hpu_port.branches import Held


# The module a dotted value starts with (`torch` in `torch.bfloat16`).
_MODULE_ROOT = re.compile(r"([A-Za-z_]\w*)\.")


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _KeywordArgsVisitor(ctx, rules)


class _KeywordArgsVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules
        self.mapping_keys: dict[str, set[str]] = {}  # name -> keys the file puts in it
        self.through_mapping: list[tuple] = []
        # `kwargs["device_ids"] = [rank]`: (name, key) -> the assignments, with
        # their scope and the held unit they are in.
        self.key_assignments: dict[tuple[str, str], list[tuple]] = {}
        # Calls that unpack a mapping: (rule, the mapping's name, the call's scope).
        self.unpacking: list[tuple] = []
        # Per rule: the classes this file defines on top of the ones it names.
        self.subclasses: dict[str, set[tuple]] = {}

    # -- what a `**kwargs` mapping holds ------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                keys = _display_keys(node.value)
                self._note_keys(target.target.value, keys)
                if len(node.targets) == 1:
                    # `ddp_args = dict(device_ids=[rank])`: each key, with the display that holds it.
                    for key in keys:
                        where = (node.value, self.ctx.scope.node, self.ctx.other_backend.innermost())
                        self.key_assignments.setdefault((target.target.value, key), []).append(where)
            elif isinstance(target.target, cst.Subscript) and isinstance(target.target.value, cst.Name):
                name, keys = target.target.value.value, _subscript_key(target.target)
                self._note_keys(name, keys)
                if len(node.targets) == 1:
                    for key in keys:
                        where = (node, self.ctx.scope.node, self.ctx.other_backend.innermost())
                        self.key_assignments.setdefault((name, key), []).append(where)

    def _note_keys(self, name: str, keys) -> None:
        if keys:
            self.mapping_keys.setdefault(name, set()).update(keys)

    def leave_Module(self, node) -> None:
        self._drop_keys_set_in_mappings()
        for rule, at, message, mapping, unsure in self.through_mapping:
            name = mapping.value.value if isinstance(mapping.value, cst.Name) else None
            held = self.mapping_keys.get(name, set())
            if all(k in held for k in unsure):
                continue  # the mapping passes it: the code already does it
            if name in self.mapping_keys:
                self.ctx.report(rule, at, message, kept=Held("unclear", f"set it in `{name}`, which this call unpacks"))
            elif not is_advice(rule):  # a mapping built elsewhere may well pass it: no advice on a guess
                self.ctx.report(rule, at, message, kept=Held("unclear", f"`**{written(mapping.value)}` may already pass it"))

    def _drop_keys_set_in_mappings(self) -> None:
        """`kwargs["device_ids"] = [rank]` before `DDP(model, **kwargs)` in the
        same function: the keyword the rule drops, given through the mapping;
        the assignment goes."""
        done = set()
        for rule, name, scope in self.unpacking:
            for key in rule.params["drop"]:
                for assigned, where, unit in self.key_assignments.get((name, key), ()):
                    if where is not scope or (assigned, key) in done:
                        continue
                    done.add((assigned, key))
                    message = rule.message.format(name=f"{name}[{key!r}]", keywords=f"`{key}`")
                    if isinstance(assigned, cst.Assign):  # `kwargs["device_ids"] = ...` goes
                        fix = lambda plan, a=assigned: plan.remove_statement(a)
                    else:  # the key leaves the `dict(...)` or `{...}`
                        fix = self.ctx.replace(assigned, lambda display, k=key: _without_key(display, k))
                    with self.ctx.other_backend.reopened(unit):
                        self.ctx.report(rule, assigned, message + f" (given through `**{name}`)", fix)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in ("update", "setdefault"):
            self._note_keys(func.value.value, _call_keys(node, func.attr.value))
        for rule in self._rules_for(node.func):
            self._check(rule, node)
            mapping = next((arg.value for arg in node.args if arg.star == "**"), None)
            if isinstance(mapping, cst.Name) and rule.params["drop"]:
                self.unpacking.append((rule, mapping.value, self.ctx.scope.node))
        bound = _partial_of(node, self.ctx)
        if bound is not None:
            # `partial(FSDP, device_id=local_rank)`: the keywords are FSDP's.
            for rule in self._rules_for(bound.func):
                self._check(rule, bound, original=node)

    def _rules_for(self, func) -> list[Rule]:
        """The rules whose `calls` name what ``func`` calls: through the imports,
        or a class this file defines on top of one of them (`subclasses`)."""
        hit = self.ctx.qualify(func)
        if hit is not None:
            return [rule for rule in self.rules if calls_match(hit[0], rule.params["calls"])]
        if not isinstance(func, cst.Name) or self.ctx.scope.lookup(func.value) != LOCAL:
            return []
        where = self.ctx.scope.binding_scope(func.value)
        key = (func.value, where.node if where is not None else None)
        return [rule for rule in self.rules if key in self._subclasses(rule)]

    def _subclasses(self, rule) -> set[tuple]:
        if not rule.params["subclasses"]:
            return set()
        if rule.code not in self.subclasses:
            # Exact names only: a class on top of one a pattern names would be
            # stubbed out when `check` narrows the file (see Kind.context).
            known = lambda qualified: qualified in rule.params["calls"]
            self.subclasses[rule.code] = local_subclasses(self.ctx.module, self.ctx.scopes, known)
        return self.subclasses[rule.code]

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if isinstance(node.decorator, cst.Call):
            return  # handled as a call
        hit = self.ctx.qualify(node.decorator)
        if hit is None:
            return
        for rule in self.rules:
            if calls_match(hit[0], rule.params["calls"]) and rule.params["set"]:
                call = cst.Call(func=node.decorator)
                self._check(rule, call, node)

    def _check(self, rule, node: cst.Call, report_at=None, original: Optional[cst.Call] = None) -> None:
        """``original``: the `partial(...)` call that binds ``node``'s arguments."""
        present = _keywords(node, rule.params["positions"])
        if not all(k in present and _one_of(present[k], v) for k, v in rule.params["only-if"].items()):
            return
        if any(k in present and _one_of(present[k], v) for k, v in rule.params["skip-when"].items()):
            return
        flagged = [k for k, v in rule.params["report-when"].items() if k in present and _reported(written(present[k].value), v)]
        if flagged:
            names = ", ".join(f"`{k}={written(present[k].value)}`" for k in flagged)
            self.ctx.report(rule, node, rule.message.format(name=written(node.func), keywords=names))
            return
        changed = _changed_keywords(node, rule.params)
        if not changed:
            return
        kept = self._kept_by_the_callable(rule, node)
        if kept is not None:
            keywords = ", ".join(f"`{k}`" for k in changed)
            self.ctx.report(rule, node, f"{rule.message.format(name=written(node.func), keywords=keywords)} (not removed: {kept})")
            return
        clashes = {old: new for old, new in rule.params["rename"].items() if old in present and new in present}
        clashing = list(clashes.values())
        moved = clashes if clashes and _flags_to_move(clashes, present) else None
        if moved is not None and original is None and report_at is None:
            # `fp16=True, bf16=False`: the flag moves to the renamed keyword.
            message = rule.message.format(name=written(node.func), keywords=", ".join(f"`{k}`" for k in changed))
            self.ctx.report(rule, node, message, self.ctx.replace(node, lambda c: _with_flag_moved(c, moved, rule.params)))
            return
        if clashing:
            # `fp16=not ok, bf16=ok`: the renamed keyword would be given twice, a SyntaxError.
            keywords = ", ".join(f"`{k}`" for k in changed)
            names = ", ".join(f"`{k}`" for k in clashing)
            self.ctx.report(rule, node, f"{rule.message.format(name=written(node.func), keywords=keywords)} (not renamed: the call sets {names} already; keep one)")
            return
        for keyword in changed:
            if keyword in present:
                # `Trainer(accelerator="cuda")`: this rule speaks for the value.
                self.ctx.claim(present[keyword].value)
        message = rule.message.format(
            name=written(node.func), keywords=", ".join(f"`{k}`" for k in changed)
        )
        mapping = next((arg for arg in node.args if arg.star == "**"), None)
        unsure = [k for k in changed if k in rule.params["set"] and k not in present]
        if original is not None:
            if mapping is None:
                fix = self.ctx.replace(original, lambda c: _bound(edit_keywords(_call_of_partial(c), rule.params), c))
                self.ctx.report(rule, original, message, fix)
            return
        if mapping is not None and unsure:
            # Adding it beside `**kwargs` that may hold it already is a TypeError;
            # what the mapping holds is known once the whole file was seen.
            self.through_mapping.append((rule, report_at or node, message, mapping, unsure))
            return
        params = rule.params
        unbound = self._unbound_modules([params["set"][k] for k in changed if k in params["set"]])
        if unbound:
            # `dtype=torch.bfloat16` in a file that never imports torch would be a NameError.
            self.ctx.report(rule, report_at or node, f"{message} (not set: this file does not import `{unbound}`)")
            return
        if report_at is None:
            fix = self.ctx.replace(node, lambda c: edit_keywords(c, params))
        else:  # a bare decorator becomes a call
            fix = self.ctx.replace(
                report_at, lambda d: d.with_changes(decorator=edit_keywords(cst.Call(func=d.decorator), params))
            )
        self.ctx.report(rule, report_at or node, message, fix)

    def _unbound_modules(self, values: list) -> Optional[str]:
        """The first module a value to set names (`torch` in `torch.bfloat16`)
        that no scope around the call binds."""
        for value in values:
            root = _MODULE_ROOT.match(value)
            if root is not None and self.ctx.scope.binding_scope(root.group(1)) is None:
                return root.group(1)
        return None

    def _kept_by_the_callable(self, rule, node: cst.Call) -> Optional[str]:
        """Why the callable needs the keywords it is given (`report-calls`), if it does."""
        if not rule.params["report-calls"]:
            return None
        hit = self.ctx.qualify(node.func)
        if hit is None:
            return None
        return next((why for pattern, why in rule.params["report-calls"].items() if fnmatch.fnmatchcase(hit[0], pattern)), None)


def _partial_of(node: cst.Call, ctx) -> Optional[cst.Call]:
    """The call ``functools.partial(f, ...)`` stands for: `f(...)`, or None."""
    hit = ctx.qualify(node.func)
    if hit is None or hit[0] != "functools.partial" or not node.args or node.args[0].keyword or node.args[0].star:
        return None
    return _call_of_partial(node)


def _call_of_partial(node: cst.Call) -> cst.Call:
    return cst.Call(func=node.args[0].value, args=node.args[1:])


def _bound(call: cst.Call, partial: cst.Call) -> cst.Call:
    """``partial`` with the arguments of ``call``, the callable it binds first."""
    return partial.with_changes(args=[partial.args[0], *call.args])


def _display_keys(value) -> set[str]:
    """The string keys of ``{...}`` or ``dict(...)``."""
    if isinstance(value, cst.Dict):
        return {k for k in (_string(e.key) for e in value.elements if isinstance(e, cst.DictElement)) if k}
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict":
        return {arg.keyword.value for arg in value.args if arg.keyword is not None}
    return set()


def _without_key(display, key: str):
    """``{...}`` or ``dict(...)`` without ``key``, keeping its layout."""
    if isinstance(display, cst.Dict):
        elements = remove_args(display.elements, lambda e: isinstance(e, cst.DictElement) and _string(e.key) == key)
        return display.with_changes(elements=elements)
    return display.with_changes(args=remove_args(display.args, lambda arg: arg.keyword is not None and arg.keyword.value == key))


def _subscript_key(target: cst.Subscript) -> set[str]:
    element = target.slice[0].slice if len(target.slice) == 1 else None
    key = _string(element.value) if isinstance(element, cst.Index) else None
    return {key} if key else set()


def _call_keys(call: cst.Call, method: str) -> set[str]:
    if method == "setdefault":
        key = _string(call.args[0].value) if call.args else None
        return {key} if key else set()
    keys = {arg.keyword.value for arg in call.args if arg.keyword is not None}
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            keys |= _display_keys(arg.value)
    return keys


def _string(node) -> Optional[str]:
    value = literal_value(written(node)) if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def calls_match(qualified: str, patterns) -> bool:
    """Exact names, or shell-style patterns (`transformers.*TrainingArguments`)."""
    return qualified in patterns or any("*" in p and fnmatch.fnmatchcase(qualified, p) for p in patterns)


def _keywords(call: cst.Call, positions=None) -> dict[str, cst.Arg]:
    """Keyword arguments by name; ``positions`` also names positional ones."""
    found = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for keyword, index in (positions or {}).items():
        if index < len(positional) and keyword not in found:
            found[keyword] = positional[index]
    return found


def _changed_keywords(call: cst.Call, params) -> list[str]:
    present = _keywords(call)
    changed = [k for k in params["drop"] if k in present]
    changed += [k for k in params["rename"] if k in present]
    for keyword in _keywords_to_set(call, params):
        changed.append(keyword)
    return changed


def _keywords_to_set(call: cst.Call, params) -> list[str]:
    present = _keywords(call, params["positions"])
    result = []
    for keyword, code in params["set"].items():
        arg = present.get(keyword)
        if arg is None:
            if keyword not in params["set-when"] or MISSING in params["set-when"][keyword]:
                result.append(keyword)
        elif keyword in params["set-when"]:
            accepted = params["set-when"][keyword]
            if ANY in accepted and not same_value(written(arg.value), [code]):
                result.append(keyword)
            elif same_value(written(arg.value), accepted):
                result.append(keyword)
        elif not same_value(written(arg.value), [code]):
            result.append(keyword)
    return result


ANY = "*"
NOT_LITERAL = "<not-literal>"


def _reported(code: str, values: list[str]) -> bool:
    """One of ``values``, or (with ``"<not-literal>"``) a value the code computes:
    a variable or an option, which a person checks for Gaudi."""
    return same_value(code, values) or (NOT_LITERAL in values and literal_value(code) is NOT_A_LITERAL)


def _one_of(arg: cst.Arg, values: list[str]) -> bool:
    """Whether the argument is one of ``values``; ``"*"``: anything but ``None``."""
    code = written(arg.value)
    return (ANY in values and code != "None") or same_value(code, values)


def same_value(code: str, candidates: list[str]) -> bool:
    """Compare Python literals by value ('x' equals "x"); other code by its text.

    Literals of different types differ, though Python finds ``1 == True``:
    ``padding=1`` is a convolution's width, not ``padding=True``."""
    value = literal_value(code)
    return any(code == c or (value is not NOT_A_LITERAL and same_literal(value, literal_value(c))) for c in candidates)


def edit_keywords(call: cst.Call, params) -> cst.Call:
    """Apply drop / rename / set to a call's arguments, keeping its layout."""
    args = remove_args(call.args, lambda arg: arg.keyword is not None and arg.keyword.value in params["drop"])
    args = [_renamed(arg, params["rename"]) for arg in args]
    for keyword in _keywords_to_set(call, params):
        args = _set_keyword(args, keyword, params["set"][keyword], call.whitespace_before_args, params["positions"])
    return call.with_changes(args=args)


def _flags_to_move(clashes: dict, present: dict) -> bool:
    """Whether a call sets each keyword and its new name (old -> new in
    ``clashes``) to the literals `True` and `False` (`fp16=True, bf16=False`),
    not to anything else (`fp16=not ok, bf16=ok`)."""
    return all(written(present[old].value) == "True" and written(present[new].value) == "False" for old, new in clashes.items())


def _with_flag_moved(call: cst.Call, moved: dict, params) -> cst.Call:
    """``call`` without the old keywords of ``moved``, their new ones set
    to True, and the rule's other edits made."""
    args = remove_args(call.args, lambda arg: arg.keyword is not None and arg.keyword.value in moved)
    call = edit_keywords(call.with_changes(args=args), params)
    args = list(call.args)
    for new in moved.values():
        args = _set_keyword(args, new, "True", call.whitespace_before_args, params["positions"])
    return call.with_changes(args=args)


def _renamed(arg: cst.Arg, rename: dict) -> cst.Arg:
    if arg.keyword is not None and arg.keyword.value in rename:
        return arg.with_changes(keyword=cst.Name(rename[arg.keyword.value]))
    return arg


def _set_keyword(args: list, keyword: str, code: str, indent, positions=None) -> list:
    value = cst.parse_expression(code)
    current = _keywords(cst.Call(func=cst.Name("f"), args=args), positions).get(keyword)
    for index, arg in enumerate(args):
        if arg is current:
            args = list(args)
            args[index] = arg.with_changes(value=value)
            return args
    new = cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    return append_arg(args, new, indent)


def append_arg(args: list, new: cst.Arg, indent=None) -> list:
    """Add an argument at the end, keeping the call's layout.

    In a call laid out one argument per line, the new argument gets a line of
    its own (``indent`` is the whitespace after the opening parenthesis, for a
    call with a trailing comma); otherwise it follows ``, `` on the same line.
    A comment after the old last argument stays on that argument's line.
    """
    if not args:
        return [new]
    last = args[-1]
    trailing: Optional[cst.Comma] = last.comma if isinstance(last.comma, cst.Comma) else None
    closing = last.whitespace_after_arg
    own_line = None
    if trailing is not None and isinstance(indent, cst.ParenthesizedWhitespace):
        own_line = _line_break(indent)
    elif len(args) > 1 and _breaks_line_after(args[-2]) and isinstance(closing, cst.ParenthesizedWhitespace):
        # One argument per line, the parenthesis on a line of its own, no
        # trailing comma: the new argument gets a line of its own too.
        own_line = _line_break(args[-2].comma.whitespace_after)
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if own_line is not None:
        # The old last argument's line keeps its comment; the new line has none.
        after_last = trailing.whitespace_after if trailing is not None else closing
        if isinstance(after_last, cst.ParenthesizedWhitespace):
            own_line = own_line.with_changes(first_line=after_last.first_line)
            bare = after_last.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
            if trailing is not None:
                trailing = trailing.with_changes(whitespace_after=bare)
            else:
                closing = bare
        separator = cst.Comma(whitespace_after=own_line)
    # What stood after the old last argument (the line break before a closing
    # parenthesis on its own line) now stands after the new one.
    return [
        *args[:-1],
        last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace("")),
        new.with_changes(comma=trailing or cst.MaybeSentinel.DEFAULT, whitespace_after_arg=closing),
    ]


def _line_break(whitespace: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """The line break and indentation of ``whitespace``, without its comments or empty lines."""
    return whitespace.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])


def _breaks_line_after(arg: cst.Arg) -> bool:
    return isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace)


def remove_args(args, predicate) -> list:
    """Remove the arguments ``predicate`` selects; the new last one takes the
    old last one's comma and the space after it (the line break before a
    closing parenthesis on its own line)."""
    args = list(args)
    kept = [arg for arg in args if not predicate(arg)]
    if kept and args and kept[-1] is not args[-1]:
        kept[-1] = kept[-1].with_changes(comma=args[-1].comma, whitespace_after_arg=args[-1].whitespace_after_arg)
    return kept
