"""Kind ``unwrap-context``: replace a ``with`` block by its body.

``with amp.scale_loss(loss, optimizer) as scaled_loss: scaled_loss.backward()``
becomes ``loss.backward()``: the block's statements move out one level, and the
``as`` name is replaced by the call's argument at ``value-argument``. Blocks
with several context managers, or whose ``as`` target is not a plain name, are
reported instead.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import name_trigger


@register_kind
class UnwrapContext(Kind):
    name = "unwrap-context"
    KEYS = {"calls": (list, True), "value-argument": (int, False)}
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        return {"calls": set(string_list(table["calls"], "calls")), "value-argument": table.get("value-argument", 0)}

    def triggers(self, rule):
        return [name_trigger(n) for n in rule.params["calls"]]
