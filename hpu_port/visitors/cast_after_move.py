"""How the ``cast-after-move`` kind matches code (see ``hpu_port.kinds.cast_after_move``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.model import Rule
from hpu_port.visitors._references import last_name, written


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _CastAfterMove(ctx, rules)


class _CastAfterMove(cst.BatchableCSTVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__()
        self.ctx = ctx
        self.rules = rules
        # (rule, move) already reported: a chain with two casts is one finding.
        self.reported: set[tuple[str, cst.CSTNode]] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or node.args:
            return
        for rule in self.rules:
            if func.attr.value not in rule.params["casts"]:
                continue
            move = self._move_before(func.value, rule.params)
            if move is not None and (rule.code, move) not in self.reported:
                self.reported.add((rule.code, move))
                moved = written(move)[len(written(move.func.value)):]  # `.to(device)`, without what it moves
                message = rule.message.format(name=moved, cast=f".{func.attr.value}()")
                self.ctx.report(rule, move, message)

    def _move_before(self, chain: cst.BaseExpression, params: dict) -> Optional[cst.Call]:
        """The move in ``chain`` (what a cast is called on), when the chain
        starts at a call of one of the sources: its innermost move."""
        move = None
        while True:
            if isinstance(chain, cst.Subscript):
                chain = chain.value
                continue
            if not isinstance(chain, cst.Call):
                return None
            hit = self.ctx.qualify(chain.func)
            if hit is not None:
                return move if hit[0] in params["sources"] else None
            if not isinstance(chain.func, cst.Attribute):
                return None
            method = chain.func.attr.value
            if method in params["casts"] or _passes_a_dtype(chain):
                return None  # cast before the move further out: nothing to say
            if method in params["moves"]:
                move = chain
            chain = chain.func.value


def _passes_a_dtype(call: cst.Call) -> bool:
    """`.to(torch.float32)`, `.to(device, torch.half)`, `.to(x, dtype=...)`: a cast too."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "dtype":
                return True
            continue
        name = last_name(arg.value)
        if "float" in name.lower() or "half" in name or "dtype" in name:
            return True
    return False
