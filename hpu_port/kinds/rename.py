"""Kind ``rename``: a qualified name becomes another, through every import form."""

from __future__ import annotations

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

    ``guards`` lists old names that test for CUDA (``torch.cuda.is_available``)
    and ``nvidia-only`` the names (shell-style patterns, or ``keyword:NAME``
    for a keyword argument, ``word:`` and ``string:`` patterns for names and
    strings in the branch, ``raise:`` for the lower-cased message of an
    exception it raises, ``device-table:NAME`` for a string NAME the module
    looks up in its own table of devices, which has no ``"hpu"``; ``A unless
    B``: A, where the same code does not also use B) that mark
    NVIDIA-only code: a guard in the test of
    an ``if``, ``while`` or conditional expression whose code uses one of them
    is reported, not renamed, so that the NVIDIA-only branch does not start
    running on Gaudi.

    ``[result-keys]`` maps an old name that returns a dict to the keys its
    replacement's dict has (``torch.hpu.memory_stats()`` has "InUse", not
    CUDA's "allocated_bytes.all.current"): a call whose result is read with
    another key (`stats["num_alloc_retries"]`, `stats.get(...)`, directly or
    through the name it is assigned to in the same function) is reported, not
    renamed; renamed, the read would fail or find nothing.
    """

    name = "rename"
    KEYS = {
        "renames": (dict, True),
        "import-as": (dict, False),
        **FP16_KEYS,
        "positions": (dict, False),
        "guards": (list, False),
        "nvidia-only": (list, False),
        "result-keys": (dict, False),
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
            "guards": frozenset(string_list(table.get("guards", []), "guards")),
            "nvidia-only": frozenset(string_list(table.get("nvidia-only", []), "nvidia-only")),
            "result-keys": {
                name: frozenset(string_list(keys, f"result-keys.{name}"))
                for name, keys in table.get("result-keys", {}).items()
            },
        }

    def describe(self, rule):
        return markdown_table(("CUDA name", "replacement"), rule.params["renames"], code_values=True)

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["renames"]]


def _check_dotted(name: str, key: str) -> None:
    if not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"{key!r}: {name!r} is not a dotted Python name")
