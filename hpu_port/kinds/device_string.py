"""Kind ``device-string``: string literals that name a device (``"cuda"``, ``"cuda:1"``).

A literal with an index (``"cuda:0"``, ``"cuda:"``) is a device wherever it
stands, except as a dict key (``map_location={"cuda:0": "cpu"}`` names the
device a checkpoint was saved on). Strings that *build* one are devices too:
``f"cuda:{rank}"``, ``"cuda:{}".format(i)``, ``"cuda:%d" % i``, ``"cuda:" + str(i)``.

The bare word (``"cuda"``, ``"nccl"``) is also a method name, a path part, an
option name or an enum value, so it is rewritten only where it flows into a
device position, when the rule lists ``role-words``:

- a keyword argument, assignment target, parameter, dict key or function
  (for what it returns) whose name has one of the ``role-words`` as a part
  (``device=``, ``self.device =``, ``cfg["device"] =``, ``def get_device()``);
- the first argument of one of the ``role-calls`` (``torch.device``) or of a
  method in ``role-methods`` (``.to("cuda")``), or of a name bound to one of
  the ``aliased-role-calls`` (``scope = autocast if amp else nullcontext``,
  then ``scope("cuda")``);
- an argparse-like call whose option name has a role word
  (``add_argument("--device", default="cuda", choices=[...])``), and the
  default of an entry or attribute so named (``cfg.get("device", "cuda")``,
  ``getattr(args, "device", "cuda")``, ``os.getenv("DEVICE", "cuda")``);
- a comparison with an expression that names a role word
  (``x.device.type == "cuda"``, ``dist.get_backend() != "nccl"``), unless
  ``comparisons = false`` (for settings: a test of one is not a value given);
- beside one of the ``siblings`` in a list, tuple, set or conditional
  (``["cpu", "cuda"]``, ``"cuda" if ok else "cpu"``); with ``device-siblings
  = true``, every device the device evidence knows is a sibling too
  (``[devices]`` ``port``, ``other`` and ``pseudo`` of ``rules/_device.toml``).

What the device evidence (``rules/_device.toml``) knows decides where a
device name is kept and reported rather than renamed, by ``device`` and
``replacement``:

- with ``nvidia-guards = true``, in the test of an ``if``, ``while`` or
  conditional expression whose code is NVIDIA's (``[nvidia-only]``, see the
  ``rename`` kind), or, for a backend, whose code names one of its
  ``[devices.branch-strings]`` (a test for ``"nccl"`` whose branch names the
  CUDA device);
- compared with one of its ``[devices.accelerator-queries]`` (patterns of
  calls as written, such as ``*accelerator*.device_name``: methods of a layer
  that already knows several accelerators, such as DeepSpeed's
  ``get_accelerator().device_name()``): that layer answers ``"hpu"`` on Gaudi
  by itself, so a test for ``"cuda"`` picks CUDA's own code;
- anywhere in a module that tests for the ``replacement`` itself and uses one
  of the replacement's ``[devices.taken-by]`` (``torch_npu``: Ascend's
  backend is also called "hccl"): the module means another backend by it;
- in the arguments of a call that registers code for a device
  (``[devices] registrations``: ``torch.library.custom_op(...,
  device_types="cuda")``): the registered code is that device's;
- under one of its ``[devices.kept-checks]`` (qualified patterns such as
  Lightning's ``*.CUDAAccelerator.is_available``), see below.

In a module that keeps a table of the devices it
knows (an enum of devices, a dict keyed by device names) listing ``device``
but not the ``replacement``, every device string is reported: a renamed one
would miss the table. A value typed with a ``Literal`` of strings that
lacks the replacement (``backend: Literal["nccl", "gloo"] = "nccl"``, also
through a module-level alias), and a comparison with a parameter so typed,
are reported: renamed, the value would break its type. In the branch of a test that stays a test for
``device`` (it compares with a ``device`` string that is not renamed, or
calls one of its kept checks), the branch runs only where that device
is, so its strings keep their name and are reported. Anything else is left to the fallback rule, which
reports the line. Without
``role-words`` the bare word is rewritten wherever it stands. Docstrings and
bytes are never touched.

``unsupported-dtypes`` lists dtypes the replacement device cannot hold
(``torch.float64`` on Gaudi): a device in a call that also gives one of them
as ``dtype=`` (`torch.tensor(x, dtype=torch.float64, device="cuda")`) is
reported, not renamed; renamed, the tensor would be made where its dtype is
not supported, and a person picks the CPU or another dtype.

A device test given to a keyword that switches a library's CUDA code on
(the device evidence's ``switch-keywords``: `FaissKMeans(gpu=device.type ==
"cuda")`) asks whether the library may use its CUDA code, and is reported,
not renamed (renamed, Gaudi would switch that code on).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import text_trigger


@register_kind
class DeviceString(Kind):
    name = "device-string"
    KEYS = {
        "device": (str, True),
        "replacement": (str, True),
        "role-words": (list, False),
        "role-calls": (list, False),
        "role-methods": (list, False),
        "aliased-role-calls": (list, False),
        "siblings": (list, False),
        "device-siblings": (bool, False),
        "nvidia-guards": (bool, False),
        "comparisons": (bool, False),
        "unsupported-dtypes": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        for key in ("device", "replacement"):
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", table[key]):
                raise ValueError(f"{key!r} must be a device type such as 'cuda' or 'hpu'")
        device = re.escape(table["device"])
        return {
            "device": table["device"],
            "replacement": table["replacement"],
            # exactly a device, or the prefix of one: "cuda", "cuda:0", "cuda:"
            "exact": re.compile(rf"{device}(:[0-9]*)?"),
            # a template that builds one: "cuda:{}", "cuda:{rank}", "cuda:%d", "cuda:"
            "template": re.compile(rf"{device}:(\{{[A-Za-z0-9_.]*\}}|%[dsi]|)"),
            "role-words": frozenset(w.lower() for w in string_list(table.get("role-words", []), "role-words")),
            "role-calls": frozenset(string_list(table.get("role-calls", []), "role-calls")),
            "role-methods": frozenset(string_list(table.get("role-methods", []), "role-methods")),
            "aliased-role-calls": frozenset(string_list(table.get("aliased-role-calls", []), "aliased-role-calls")),
            "siblings": frozenset(string_list(table.get("siblings", []), "siblings")),
            "device-siblings": bool(table.get("device-siblings", False)),
            "nvidia-guards": bool(table.get("nvidia-guards", False)),
            "comparisons": bool(table.get("comparisons", True)),
            "unsupported-dtypes": frozenset(string_list(table.get("unsupported-dtypes", []), "unsupported-dtypes")),
        }

    def triggers(self, rule):
        return [text_trigger(rule.params["device"])]

    def screen(self, rule, view):
        # Every finding is at a string that starts with the device's name
        # (`"cuda"`, `"CUDA"`, `"cuda:%d"`, the text of `f"cuda:{rank}"`);
        # the name in identifiers alone (`n_gpu`, `use_cuda`) acts on nothing.
        device = rule.params["device"]
        lines = view.lines_matching(_spelled(device))
        strings = [
            *view.nodes_on_lines(ast.Constant, lines),
            *(c for f in view.nodes_on_lines(ast.JoinedStr, lines) for c in ast.walk(f) if isinstance(c, ast.Constant)),
        ]
        return any(isinstance(node.value, str) and node.value[: len(device)].lower() == device for node in strings)


@lru_cache(maxsize=None)
def _spelled(device: str) -> "re.Pattern":
    """The device's name in any case: a string that starts with it holds it."""
    return re.compile(re.escape(device.encode()), re.IGNORECASE)


def name_parts(name: str) -> set[str]:
    """The parts of an identifier, lower-cased: `target_device`, `targetDevice`
    and `TARGET_DEVICE` all have the part `device`; the whole name counts too
    (without the dashes of an option: `--mixed_precision`)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {part.lower() for part in re.split(r"[^A-Za-z0-9]+", spaced) if part} | {name.lower(), name.lower().lstrip("-")}
