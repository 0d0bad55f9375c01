"""Kind ``other-backend``: code written for another device or an NVIDIA-only library.

Multi-backend libraries hold implementations for each device (DeepSpeed's
`CUDA_Accelerator`, Lightning's `CUDAAccelerator`), and modules built on
NVIDIA-only software (Triton or numba kernels, Transformer Engine, TensorRT,
bitsandbytes). Ported, such code becomes a second, wrong HPU implementation or
NVIDIA-only code that half uses the HPU. What is such code is the device
evidence's (``rules/_device.toml``, plus a project's ``[tool.hpu-port.device]``;
keys below are ``[section] key``). A *unit* (module, class or function)
is such code when:

- ``[devices] accelerator-bases``, ``[nvidia-only] class-bases``: a class
  derives from one of these (shell-style patterns of the qualified or written
  name: ``*accelerators.Accelerator``); the module that defines it at top
  level is the unit (its helpers are the backend's too);
- ``[nvidia-only] kernel-decorators``: a function of the module is a kernel
  for a compiler that never targets Gaudi (``triton.jit``, ``numba.cuda.jit``):
  the module;
- ``[nvidia-only] libraries``, ``[frameworks] foreign``/``always-foreign``: a
  function imports one of these in its body (`import tensorrt as trt`): the
  function; an `if` arm that imports one in its own body (`elif engine:
  import tensorrt as trt`): the arm. (A module that merely imports one at top
  level is a user of the library, not built on it: a training script that
  imports triton is still ported.) Libraries that rules port in part
  (``ported-libraries``: apex, pynvml) do not make a unit;
- the words of those (``[devices] other``, ``[nvidia-only] library-names``,
  the frameworks): the file's directory, its name or a word of its name
  (split at `_`) is one of them (`quantizers/bitsandbytes/`,
  `precision/transformer_engine.py`, `spec_aug_numba.py`): the module;
- the libraries again: a function calls one of them through a name the
  module imported from it, at top level or under `if`/`try`
  (`cudart.cudaStreamGetCaptureInfo(...)` after `from cuda.bindings import
  runtime as cudart`): the function;
- the same words: a word of a class's or function's name (split at `_`
  and where the case changes), or two words in a row joined by `_`, is one
  of them (`AttnProcessorNPU`, `XLAFlashAttnProcessor`, `_triton_matmul`):
  the class or function;
- ``[nvidia-only] internals``: a function (or method; nested functions count
  for the one around them) uses one of these qualified names (shell-style
  patterns), CUDA's own implementation internals (`torch.cuda._lazy_call`,
  `torch.cuda.default_generators`, `torch._C._cuda_setRNGState`): the
  function, whose other CUDA calls are its internals too; likewise
  ``internal-attributes``, methods only CUDA's objects have, called or
  asked for by name (`graph.register_generator_state(...)`,
  `hasattr(torch.Generator, "graphsafe_set_state")`);
- the same words, and ``[devices] formats`` and ``setups``, and
  ``[nvidia-only] flags``: an `if` whose test holds only for one of these
  (`format == "coreml"`, `device.type in ("mps", "xpu")`,
  `is_torch_npu_available()`, `torch.backends.mps.is_available()`, a flag
  `use_xla` whose first word is one of the ``[devices] flag-words``; also
  joined by `and`): its arm (the `else` arm of a negated test); and the
  `"cuda"` entry of a dict keyed by device names (`{"cuda":
  torch.cuda.synchronize, "xpu": ..., "cpu": None}`, beside other devices or
  the ``[devices] port``): a per-device table looked up by the device in
  use, never read on Gaudi;
- always: a class named for CUDA one of whose methods is such a unit
  (`FullCudaGraphWrapper`, whose `__call__` uses CUDA's internals): the
  class, whose other methods set up what that one uses;
- always: a function or class named for CUDA whose HPU twin the module also
  defines (`is_cuda_available` beside `is_hpu_available`): the CUDA one;
- ``[nvidia-only] statement-names``: a statement (one line of code) uses one
  of these qualified names (`torch.cuda.get_device_capability`,
  `torch.cuda.nccl.version`): the statement, so that its other CUDA calls are
  not half ported (checked only where a fix would be made);
- the rule's ``held-helpers`` (true or false): a module-level function or class that
  only held module-level code uses (every mention of its name in the file is
  inside a held top-level function or class, not as a base class:
  `StaticBufferLoader`, used only by a CUDA-graph wrapper held for CUDA's
  internals): the definition; ported alone, it would hand HPU values to its
  CUDA-only user.

What any rule would fix inside a unit is reported instead (with the reason), and
the unit itself is reported once. The kind matches nothing by itself: it only
acts on the fixes of the other rules.
"""

from __future__ import annotations

from hpu_port.device.evidence import bundled
from hpu_port.kinds import Kind, name_context, register_kind, word_context


@register_kind
class OtherBackend(Kind):
    name = "other-backend"
    KEYS = {"held-helpers": (bool, False)}
    MESSAGE_FIELDS = frozenset({"name", "reason", "count"})

    def build_params(self, table):
        return {"held-helpers": bool(table.get("held-helpers", False))}

    def describe(self, rule):
        """The bundled device evidence, as this kind reads it."""
        evidence = bundled()
        shown = {
            "Base classes": evidence.unit_class_bases,
            "Kernel decorators": evidence.kernel_decorators,
            "Libraries imported or called by a function": evidence.libraries,
            "Other frameworks": evidence.foreign_frameworks + evidence.always_foreign_frameworks,
            "Words of class, function, file and directory names": evidence.unit_words,
            "Devices, export formats, set-ups and flags a branch is for": evidence.branch_names,
            "CUDA internals a function uses": evidence.internals,
            "Methods only CUDA objects have": evidence.internal_attributes,
            "NVIDIA-only names that hold the rest of their statement": evidence.statement_names,
        }
        lines = ["From the device evidence, `rules/_device.toml` (a project adds to it under `[tool.hpu-port.device]`):\n"]
        lines += [f"{title}: " + ", ".join(f"`{value}`" for value in sorted(values)) + "\n" for title, values in shown.items() if values]
        return "\n".join(lines)

    def context(self, rule):
        # A function another unit calls is judged by what it uses (a CUDA
        # internal such as tinygemm's int4 packing): `check` must parse it
        # too, or it would port the caller that `rewrite` holds. A kernel's
        # decorator makes its whole module another device's code.
        evidence = bundled()
        names = [*evidence.internals, *evidence.statement_names, *evidence.names, *evidence.kernel_decorators]
        return name_context(names) + word_context(
            evidence.internal_attributes
        )

    def finish(self, rules, ctx):
        for at, name, reason, count, folded in ctx.other_backend.reported():
            for rule in rules:
                ctx.report(rule, at, rule.message.format(name=name, reason=reason, count=_counts(count, folded)))


def _counts(held: int, folded: int) -> str:
    """What the unit's finding stands for: fixes held, findings said only here."""
    parts = [f"changes reported instead: {held}"] if held or not folded else []
    if folded:
        parts.append(f"{folded} finding{'s' if folded != 1 else ''} inside it said here only")
    return "; ".join(parts)
