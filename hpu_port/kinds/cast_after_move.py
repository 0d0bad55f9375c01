"""Kind ``cast-after-move``: a tensor made from NumPy moved to the device before it is cast (report only).

NumPy's floats are float64 unless the code says otherwise, and
``torch.from_numpy(a)`` keeps the array's dtype. A chain that moves such a
tensor to the device and only then casts it
(``torch.from_numpy(a).to(device).float()``) puts float64 on the device for a
moment; NVIDIA GPUs hold it, Gaudi does not. ``sources`` lists the calls that
make a tensor in the array's dtype, ``moves`` the methods that move one
(``to`` counts when it is given no dtype), ``casts`` the methods that cast
without arguments (``float``, ``half``...).
"""

from __future__ import annotations

import ast

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.shapes import cast_of_a_result
from hpu_port.triggers import Trigger, name_trigger


@register_kind
class CastAfterMove(Kind):
    name = "cast-after-move"
    KEYS = {"sources": (list, True), "moves": (list, True), "casts": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "cast"})

    def build_params(self, table):
        params = {key: frozenset(string_list(table[key], key)) for key in self.KEYS}
        if not all(params.values()):
            raise ValueError("'sources', 'moves' and 'casts' must not be empty")
        return params

    def handled_names(self, rule):
        return set(rule.params["sources"])

    def triggers(self, rule):
        # `torch.tensor` is named in most files: the cast, called bare, must be
        # there too, and (the screen's first question, asked of the text) after
        # a call or an index, which most files never cast.
        cast_of_a_call = (Trigger(pattern=cast_of_a_result(rule.params["casts"])),)
        return [
            Trigger(words=name_trigger(source).words, texts=frozenset({f".{cast}()".encode()}), alongside=cast_of_a_call)
            for source in sorted(rule.params["sources"])
            for cast in sorted(rule.params["casts"])
        ]

    def screen(self, rule, view):
        params = rule.params
        # A cast of a call's or an index's result (`.to(device).float()`) shows
        # in the text; most files cast only names, and then no call is looked at.
        lines = view.lines_matching(cast_of_a_result(params["casts"]))
        sources = {source.rsplit(".", 1)[-1] for source in params["sources"]}
        return any(
            isinstance(call.func, ast.Attribute) and call.func.attr in params["casts"] and not call.args
            and _moved_from_a_source(call.func.value, params, sources)
            for call in view.nodes_on_lines(ast.Call, lines)
        )



def _moved_from_a_source(chain: ast.AST, params: dict, sources: set) -> bool:
    """The standard-parser twin of the visitor's walk down a chain: a move,
    then a call named like a source (imports are not resolved here, so this
    only ever keeps too much)."""
    moved = False
    while True:
        if isinstance(chain, ast.Subscript):
            chain = chain.value
            continue
        if not isinstance(chain, ast.Call):
            return False
        func = chain.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in sources:
            return moved
        if not isinstance(func, ast.Attribute):
            return False
        moved = moved or name in params["moves"]
        chain = func.value
