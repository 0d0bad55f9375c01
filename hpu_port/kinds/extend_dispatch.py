"""Kind ``extend-dispatch``: code that chooses among devices gains an HPU arm.

A chain of ``if``/``elif`` tests (or of conditional expressions) that probes
CUDA and another accelerator (``torch.cuda.is_available()`` beside
``is_torch_npu_available()``, ``device.type == "cuda"`` beside ``== "mps"``)
already serves several devices: its CUDA arm is NVIDIA's and stays byte for
byte (``hpu_port.branches`` holds every other rule's fix inside the chain).
The HPU arm is the CUDA arm ported by the same rules, inserted right after
it, so before the CPU fallback and after the accelerators the project
prefers; its test is the ported CUDA test, behind
``hasattr(torch, "hpu")`` when it calls ``torch.hpu`` (the package must
still import and choose on machines without Gaudi's software). The Gaudi
imports the arm needs are added in a ``try``/``except ImportError`` block.

Where the ported arm still holds something a person must port (an
NVIDIA-only library, an API with no Gaudi equivalent), no arm is added and
the dispatch is reported with what is missing. ``probe`` is the test used
when the CUDA test names no device API (a flag): an HPU availability check.

A table keyed by device names (``{"cuda": "nccl", "npu": "hccl", "cpu":
"gloo"}``) and a ``match`` over them (``case "cuda":`` beside ``case
"mps":``) are extended the same way: an ``"hpu"`` entry or case right after
CUDA's, with its value or code as ported. ``table-values`` gives the HPU value
of a CUDA entry whose value is a plain string the rules cannot place
(``nccl = "hccl"``).
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_table
from hpu_port.triggers import text_trigger


@register_kind
class ExtendDispatch(Kind):
    name = "extend-dispatch"
    KEYS = {"probe": (str, True), "missing-message": (str, True), "table-values": (dict, False)}
    MESSAGE_FIELDS = frozenset({"name", "arm"})

    def build_params(self, table):
        import ast

        try:
            ast.parse(table["probe"], mode="eval")
        except SyntaxError:
            raise ValueError(f"'probe': {table['probe']!r} is not a Python expression") from None
        return {
            "probe": table["probe"],
            "missing-message": table["missing-message"],
            "table-values": string_table(table.get("table-values", {}), "table-values"),
        }

    def triggers(self, rule):
        # A CUDA probe: `torch.cuda.is_available()`, `is_torch_cuda_available()`,
        # `== "cuda"`; a device enum's member (`DeviceType.CUDA`).
        return [text_trigger("cuda"), text_trigger(".CUDA")]
