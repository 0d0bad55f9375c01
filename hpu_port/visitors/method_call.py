"""How the ``method-call`` kind matches and fixes code (see ``hpu_port.kinds.method_call``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.branches import held_if
from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.patterns import matches_any
from hpu_port.visitors._autocast_regions import in_bfloat16_autocast, may_be_bfloat16
from hpu_port.visitors._enclosing import enclosing
from hpu_port.visitors._fp16 import Fp16Choices, hold_split_casts
from hpu_port.visitors._guards import Surroundings
from hpu_port.walk import walk


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _MethodCallVisitor(ctx, rules)


# The `with` statements around the node (an autocast region, for ``inside-autocast``).
_Withs = enclosing("withs", "With")


class _MethodCallVisitor(Fp16Choices, Surroundings, _Withs, cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.around: list[cst.CSTNode] = []
        self.withs: list[cst.CSTNode] = []
        self.init_fp16()
        self.by_method = {r.params["method"]: r for r in reversed(rules) if not r.params.get("attribute")}
        self.by_attribute = {r.params["method"]: r for r in reversed(rules) if r.params.get("attribute")}
        # Each statement line -> the statement before it in its block.
        self.previous: dict[cst.CSTNode, cst.CSTNode] = {}
        # (statement line, patterns) -> the first call in it matching them.
        self._first_calls: dict[tuple, Optional[str]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        super().visit_Module(node)
        self._link(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        super().visit_IndentedBlock(node)
        self._link(node.body)

    def _link(self, statements) -> None:
        for before, statement in zip(statements, statements[1:]):
            self.previous[statement] = before

    def leave_Module(self, node: cst.Module) -> None:
        hold_split_casts(self.ctx)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        rule = self.by_attribute.get(node.attr.value)
        if rule is None or self.ctx.qualify(node.value) is not None or not self.ctx.claim(node):
            return
        self.ctx.report(rule, node, rule.message.format(name=f".{node.attr.value}", replacement=""))

    def visit_Call(self, node: cst.Call) -> None:
        super().visit_Call(node)
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.by_method:
            return
        # `torch.cuda(...)`-like calls on an imported module are not method calls.
        if self.ctx.qualify(func.value) is not None:
            return
        rule = self.by_method[func.attr.value]
        params = rule.params
        other = _argument_receiver(node, params["argument-method"]) if "argument-method" in params else None
        if "argument-method" in params and other is None:
            return
        if not self.ctx.claim(node):
            return
        if "new-method" not in params:
            if params.get("inside-autocast") and not (in_bfloat16_autocast(self.withs, self.ctx) and may_be_bfloat16(func.value)):
                return
            self.ctx.report(rule, node, rule.message.format(name=f".{params['method']}()", replacement=""))
            return
        following = _device_followed(node, params.get("device-keyword")) if "device" in params else None
        if following is not None:
            # `.cuda(x.get_device())`: to wherever `x` is, on every device.
            first, spelling = f"{self.ctx.module.code_for_node(following)}.device", None
            replacement = f'.{params["new-method"]}({first})'
        elif "device" in params:
            first, spelling = None, None
            replacement = f'.{params["new-method"]}("{params["device"]}")'
        elif other is not None:
            first, spelling = self.ctx.module.code_for_node(other), None
            replacement = f'.{params["new-method"]}({first})'
        else:
            spelling = self.ctx.spell(params["argument-name"])
            if spelling is None:
                return
            first = spelling.code
            replacement = f'.{params["new-method"]}({first})'
        message = rule.message.format(name=f".{params['method']}()", replacement=replacement)
        if "accepts" in params and not _fits(node, params["accepts"]):
            self.ctx.report(rule, node, message)
            return
        kept = held_if("unclear", self._called_before(params["not-after-calls"]))
        if kept is None and _keeps_some(params):
            kept = held_if("dtype-role", self.fp16_reason(rule, node))
        if kept:
            self.ctx.report(rule, node, message, kept=kept)
            return
        by_keyword = "device" in params and _a_storage(func.value)
        if by_keyword:
            message = message.replace(f'("{params["device"]}")', f'(device="{params["device"]}")')
        hit = self.ctx.report(rule, node, message, self.ctx.replace(node, self._edit(params, first, by_keyword)), spelling)
        hit.names_no_device = following is not None

    def _called_before(self, patterns) -> Optional[str]:
        """Why the receiver is another object: its statement, or the one
        before, calls one of ``patterns``."""
        statement = next((n for n in reversed(self.around) if isinstance(n, cst.SimpleStatementLine)), None)
        if not patterns or statement is None:
            return None
        found = self._first_call(statement, patterns) or self._first_call(self.previous.get(statement), patterns)
        if found is None:
            return None
        return f"it follows `{found}`, whose objects do more in this method than move"

    def _first_call(self, statement: Optional[cst.CSTNode], patterns) -> Optional[str]:
        """The first call in ``statement`` of a name matching ``patterns``;
        looked for once per statement, however many calls it holds."""
        if statement is None:
            return None
        key = (id(statement), tuple(patterns))
        if key not in self._first_calls:
            finder = _CallFinder(self.ctx, patterns)
            walk(statement, [finder])
            self._first_calls[key] = finder.found
        return self._first_calls[key]

    def _edit(self, params, first_code, by_keyword: bool = False):
        def edit(updated: cst.Call) -> cst.Call:
            kept = [
                arg
                for index, arg in enumerate(updated.args)
                if not _is_device_arg(arg, index, params["device-keyword"])
            ]
            if first_code is None:
                # Decided when applying, once the whole file's quote style is known.
                quote = self.ctx.string_quote()
                device = cst.Arg(cst.SimpleString(f'{quote}{params["device"]}{quote}'))
                if by_keyword:
                    device = device.with_changes(keyword=cst.Name("device"), equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
            else:
                device = cst.Arg(cst.parse_expression(first_code))
            args = [device, *kept]
            if kept:
                args[0] = device.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
                args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
            return updated.with_changes(
                func=updated.func.with_changes(attr=cst.Name(params["new-method"])),
                args=args,
            )

        return edit


class _CallFinder:
    """The first call, in the statements walked, of a name matching ``patterns``."""

    def __init__(self, ctx, patterns) -> None:
        self.ctx = ctx
        self.patterns = patterns
        self.found: Optional[str] = None

    def visit_Call(self, node: cst.Call) -> None:
        hit = self.ctx.qualify(node.func) if self.found is None else None
        if hit is not None and matches_any(hit[0], self.patterns):
            self.found = hit[0]


def _fits(call: cst.Call, keywords: list) -> bool:
    """Arguments that the signature (``keywords``, in order) can take."""
    positional = [arg for arg in call.args if arg.keyword is None]
    if len(positional) > len(keywords) or any(arg.star for arg in positional):
        return False
    return all(arg.keyword.value in keywords for arg in call.args if arg.keyword is not None)


def _is_device_arg(arg: cst.Arg, index: int, keyword: str) -> bool:
    if arg.keyword is not None:
        return arg.keyword.value == keyword
    return index == 0 and arg.star == ""


def _device_followed(call: cst.Call, keyword: str) -> Optional[cst.BaseExpression]:
    """``x`` when the call's device is another tensor's, `x.get_device()`
    or `x.device`: the move follows ``x``, which is right wherever it is."""
    device = next((arg.value for index, arg in enumerate(call.args) if _is_device_arg(arg, index, keyword)), None)
    if isinstance(device, cst.Call) and not device.args and isinstance(device.func, cst.Attribute):
        return device.func.value if device.func.attr.value == "get_device" else None
    if isinstance(device, cst.Attribute) and device.attr.value == "device" and not _holds_settings(device.value):
        return device.value
    return None


# Objects whose `device` is a setting, often a GPU number (`self.device =
# args.gpu`), not the place of a tensor.
_SETTINGS_HOLDERS = frozenset({"self", "cls", "args", "opt", "opts", "cfg", "config", "hparams", "options", "FLAGS"})


def _holds_settings(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value in _SETTINGS_HOLDERS


def _argument_receiver(call: cst.Call, method: str) -> Optional[cst.BaseExpression]:
    """``b`` when the call's one argument is `b.<method>()`."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    value = call.args[0].value
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) and value.func.attr.value == method:
        return value.func.value
    return None


def _keeps_some(params) -> bool:
    return bool(params["keep-beside"] or params["keep-inside"] or params["keep-under-tests-of"])


def _a_storage(receiver: cst.BaseExpression) -> bool:
    """`storage.cuda()` in `torch.load(..., map_location=lambda storage, loc: ...)`:
    a storage's `to` takes the device by keyword only."""
    return isinstance(receiver, cst.Name) and receiver.value.lower().endswith("storage")
