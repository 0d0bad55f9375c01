"""Kind ``import-in-branch``: imports that only run when a condition holds (report only).

``if torch.cuda.is_available(): import my_cuda_kernels`` imports CUDA-only code
behind a capability check. Once the check is ported to HPU (or a runtime shim
makes it true) the branch runs on Gaudi and the import fails. Every import in
the body of an ``if`` whose test calls one of the ``conditions`` is reported.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import name_trigger


@register_kind
class ImportInBranch(Kind):
    name = "import-in-branch"
    KEYS = {"conditions": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "condition"})

    def build_params(self, table):
        return {"conditions": set(string_list(table["conditions"], "conditions"))}

    def handled_names(self, rule):
        return set(rule.params["conditions"])

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["conditions"]]
