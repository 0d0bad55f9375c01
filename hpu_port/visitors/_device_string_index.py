"""Device strings that name one GPU among several (for the ``device-string`` kind).

A process drives one Gaudi, its device 0: Intel's bridge has one device in
play per process. An index computed at run time (`f"cuda:{local_rank}"`,
`torch.device("cuda", rank)`, `"cuda:{}".format(rank)`) becomes 0, the device
a tensor placed there reports; a literal second device of one process
(`"cuda:1"`) has no Gaudi counterpart.
"""

from __future__ import annotations

import re

import libcst as cst

from hpu_port.visitors._references import written
from hpu_port.walk import contains, descendants


class IndexedDevices:
    """Notes, during the walk, the device strings whose index goes with the rename.

    ``indexed`` maps each such string to the node that builds the device
    (the call or the expression) and the edit of that node."""

    indexed: dict

    def _note_device_index(self, node: cst.Call) -> None:
        """`torch.device("cuda", local_rank)`: each process drives one Gaudi,
        device 0 of its own (the bridge has one device in play): the index of
        a GPU among several becomes 0, `torch.device("hpu", 0)`, the device a
        tensor placed there reports (so comparisons with `x.device` hold)."""
        if self.params["device"] != "cuda" or len(node.args) != 2:
            return
        if node.args[0].keyword is not None or node.args[1].star or current_device(node.args[1].value):
            return
        # `torch.device("cuda" if torch.cuda.is_available() else "cpu", local_rank)` too.
        first = node.args[0].value
        strings = [first.body, first.orelse] if isinstance(first, cst.IfExp) else [first]
        named = [string for string in strings if isinstance(string, cst.SimpleString) and string.raw_value == self.params["device"]]
        hit = self.ctx.qualify(node.func) if len(named) == 1 else None
        if hit is not None and hit[0] == "torch.device":
            self.indexed[named[0]] = (node, without_index)

    def _note_indexed_template(self, template: cst.SimpleString, built_by: cst.CSTNode) -> None:
        """`"cuda:{}".format(rank)`, `"cuda:%d" % rank`, `"cuda:" + str(rank)`: a GPU's index among
        several; on Gaudi the process's one device is `"hpu:0"` (see ``_note_device_index``)."""
        device = self.params["device"]
        built = isinstance(built_by, cst.BinaryOperation) and isinstance(built_by.operator, cst.Add)
        index = r":" if built else r":(\{\w*\}|%[dsi])"
        if device == "cuda" and re.fullmatch(device + index, template.raw_value) and not current_device(built_by):
            self.indexed[template] = (built_by, as_plain_string)


def plain_string(text: str):
    """An edit that puts the plain string ``text`` in place of an f-string, in its quotes."""

    def edit(updated: cst.FormattedString) -> cst.SimpleString:
        return cst.SimpleString(value=f"{updated.end}{text}{updated.end}", lpar=updated.lpar, rpar=updated.rpar)

    return edit


def without_index(rename, string: cst.SimpleString):
    """An edit of `torch.device(<device>, <index>)` that renames the device
    (through ``rename``) and makes the index 0."""

    def edit(updated: cst.Call) -> cst.Call:
        first, second = updated.args
        value = first.value
        if isinstance(value, cst.IfExp):
            arm = "body" if written(value.body) == written(string) else "orelse"
            value = value.with_changes(**{arm: rename(getattr(value, arm))})
        else:
            value = rename(value)
        return updated.with_changes(args=[first.with_changes(value=value), second.with_changes(value=cst.Integer("0"))])

    return edit


def second_gpu(node: cst.CSTNode) -> bool:
    """Whether ``node`` is a literal device with an index above 0 (`"cuda:1"`)."""
    if not isinstance(node, cst.SimpleString):
        return False
    _, _, index = node.raw_value.partition(":")
    return index.isdigit() and int(index) > 0


def current_device(node: cst.CSTNode) -> bool:
    """Whether ``node`` reads the current device's index (`torch.cuda.current_device()`),
    which on Gaudi is already the process's one device."""
    return any(isinstance(n, cst.Name) and n.value == "current_device" for n in descendants(node))


def as_plain_string(rename, template: cst.SimpleString):
    """An edit of a device string built from a template and an index that
    puts the template's device, renamed and without the index, in its place."""
    renamed = rename(template)
    device = renamed.evaluated_value.split(":")[0] + ":0"

    def edit(updated: cst.CSTNode) -> cst.SimpleString:
        return cst.SimpleString(value=f"{renamed.prefix}{renamed.quote}{device}{renamed.quote}", lpar=updated.lpar, rpar=updated.rpar)

    return edit


_COMPREHENSIONS = (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)


def gpu_enumeration(node: cst.CSTNode, around: list) -> "tuple[str, cst.CSTNode] | None":
    """The count a device string's index runs over when it names each GPU of
    the machine in turn (`[torch.device("cuda:%d" % i) for i in
    range(torch.cuda.device_count())]`): one process spreading a model over
    the cards, which a Gaudi process cannot (it drives one), and the loop
    (a comprehension or a `for` statement); None otherwise. ``around``: the
    nodes enclosing ``node``, its statement among them."""
    statement = next((n for n in reversed(around) if isinstance(n, cst.SimpleStatementLine)), None)
    inside = list(descendants(statement)) if statement is not None else []
    holder = next((n for n in inside if _puts_an_index_into(n, node)), node)
    used = {n.value for n in descendants(holder) if isinstance(n, cst.Name)}
    loops = [n for n in inside if isinstance(n, _COMPREHENSIONS) and contains(n, node)]
    loops += [n for n in reversed(around) if isinstance(n, cst.For)]
    for loop in loops:
        for target, iterable in _loop_heads(loop):
            names = {n.value for n in [target, *descendants(target)] if isinstance(n, cst.Name)}
            if names & used and "device_count" in written(iterable):
                return written(iterable), loop
    return None


def _puts_an_index_into(expr: cst.CSTNode, node: cst.CSTNode) -> bool:
    """`"cuda:%d" % i`, `"cuda:{}".format(i)` around ``node``."""
    if isinstance(expr, cst.BinaryOperation):
        return expr.left is node
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.value is node


def _loop_heads(node: cst.CSTNode) -> list:
    if isinstance(node, cst.For):
        return [(node.target, node.iter)]
    heads, clause = [], node.for_in
    while clause is not None:
        heads.append((clause.target, clause.iter))
        clause = clause.inner_for_in
    return heads
