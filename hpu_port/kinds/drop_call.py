"""Kind ``drop-call``: remove statements that have no meaning on Gaudi.

Removed: an expression statement that is just a call of one of the ``calls``
(``torch.cuda.empty_cache()``); an assignment to one of the ``attributes``
(``torch.backends.cudnn.benchmark = True``); and, for calls listed in
``identity-calls``, an assignment whose targets are the call's own first
arguments (``model, optimizer = amp.initialize(model, optimizer, ...)``), which
would be a no-op without the call. Other uses are reported for a person. The
comments above a removed statement stay; an emptied block gets ``pass``.

``harmless`` lists calls and attributes that do nothing where CUDA is absent
and break nothing (``torch.backends.cudnn.benchmark = True``,
``torch.cuda.empty_cache()``): a statement that only calls or sets one is left
as it is and said nowhere (removing it would be a change that changes
nothing); other uses are reported like the rest.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import name_trigger


@register_kind
class DropCall(Kind):
    name = "drop-call"
    KEYS = {"calls": (list, False), "attributes": (list, False), "identity-calls": (list, False), "harmless": (list, False)}
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        params = {key: set(string_list(table.get(key, []), key)) for key in self.KEYS}
        if not any(params[key] for key in ("calls", "attributes", "identity-calls")):
            raise ValueError("needs 'calls', 'attributes' or 'identity-calls'")
        return params

    def describe(self, rule):
        names = sorted(rule.params["calls"] | rule.params["attributes"] | rule.params["identity-calls"])
        text = "Removed or reported: " + ", ".join(f"`{n}`" for n in names) + ".\n"
        if rule.params["harmless"]:
            text += "\nLeft as they are: " + ", ".join(f"`{n}`" for n in sorted(rule.params["harmless"])) + ".\n"
        return text

    def triggers(self, rule):
        return [name_trigger(n) for n in sorted(set().union(*rule.params.values()))]
