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

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import name_trigger


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
        return [name_trigger(source) for source in sorted(rule.params["sources"])]
