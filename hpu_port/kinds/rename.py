"""Kind ``rename``: a qualified name becomes another, through every import form."""

from __future__ import annotations

import ast

from hpu_port.kinds import Kind, markdown_table, register_kind, string_list, string_table
from hpu_port.kinds._fp16 import FP16_KEYS, fp16_params, positions_params
from hpu_port.triggers import name_trigger


@register_kind
class Rename(Kind):
    """``[renames]`` maps qualified names to their replacements.

    ``[import-as]`` optionally maps a target module to the alias to import it
    under when the file has no import to reuse (``habana_frameworks.torch.hpu.graphs
    = "htgraphs"``).

    With ``keep-beside``, a use inside a dict display, or in a statement that
    hands the result to ``.numpy()``, is reported, not renamed; see
    ``hpu_port.kinds._fp16`` for it and the other ``keep-*`` keys. With
    ``positions`` the name is renamed only where a dtype is produced (see
    ``positions_params``); its other uses are reported.

    An old name among the device evidence's CUDA checks (``[devices]
    cuda-checks`` of ``rules/_device.toml``: ``torch.cuda.is_available``) in
    the test of an ``if``, ``while`` or conditional expression whose code is
    NVIDIA's by that evidence (``[nvidia-only]``: a library, an API, CUDA's
    internals, a name, string or error message that says so, a keyword whose
    value the check picks) is reported, not renamed, so that the NVIDIA-only
    branch does not start running on Gaudi.

    ``[result-keys]`` maps an old name that returns a dict to the keys its
    replacement's dict has (``torch.hpu.memory_stats()`` has "InUse", not
    CUDA's "allocated_bytes.all.current"): a call whose result is read with
    another key (`stats["num_alloc_retries"]`, `stats.get(...)`, directly or
    through the name it is assigned to in the same function) is reported, not
    renamed; renamed, the read would fail or find nothing.

    ``[as-device]`` maps an old name whose call returns a device index to the
    code that replaces the whole call where a device goes (``device=``,
    ``map_location=``, the argument of ``.to()`` or the only argument of
    ``torch.device()``): ``torch.cuda.current_device()`` there becomes
    ``"hpu"``, while as an index (``torch.device("cuda", i)``,
    ``get_device_name(i)``) it is renamed as usual.

    ``without-arguments`` lists renamed names whose replacement takes no
    argument (``torch.hpu.synchronize()`` waits for the one device the
    process owns): a call with arguments loses them.
    """

    name = "rename"
    KEYS = {
        "renames": (dict, True),
        "import-as": (dict, False),
        **FP16_KEYS,
        "positions": (dict, False),
        "result-keys": (dict, False),
        "as-device": (dict, False),
        "without-arguments": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        renames = string_table(table["renames"], "renames")
        if not renames:
            raise ValueError("'renames' must not be empty")
        for old, new in renames.items():
            _check_dotted(old, "renames")
            _check_dotted(new, "renames")
        return {
            "renames": renames,
            "import-as": string_table(table.get("import-as", {}), "import-as"),
            **fp16_params(table),
            "positions": positions_params(table["positions"]) if "positions" in table else None,
            "result-keys": {
                name: frozenset(string_list(keys, f"result-keys.{name}"))
                for name, keys in table.get("result-keys", {}).items()
            },
            "as-device": _as_device(table.get("as-device", {}), renames),
            "without-arguments": _renamed_names(table.get("without-arguments", []), renames, "without-arguments"),
        }

    def describe(self, rule):
        return markdown_table(("CUDA name", "replacement"), rule.params["renames"], code_values=True)

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["renames"]]


def _as_device(table, renames: dict) -> dict:
    as_device = string_table(table, "as-device")
    for old, code in as_device.items():
        if old not in renames:
            raise ValueError(f"'as-device': {old!r} is not one of the renamed names")
        try:
            ast.parse(code, mode="eval")
        except SyntaxError:
            raise ValueError(f"'as-device': {code!r} is not a Python expression") from None
    return as_device


def _renamed_names(value, renames: dict, key: str) -> frozenset:
    names = string_list(value, key)
    unknown = next((name for name in names if name not in renames), None)
    if unknown is not None:
        raise ValueError(f"{key!r}: {unknown!r} is not one of the renamed names")
    return frozenset(names)


def _check_dotted(name: str, key: str) -> None:
    if not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"{key!r}: {name!r} is not a dotted Python name")
