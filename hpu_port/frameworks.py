"""Which deep learning framework a file is written for, from its imports.

hpu-port ports PyTorch code. A file written for another framework (TensorFlow,
JAX, MXNet, Paddle) mentions `cuda`, `nccl` and `float16` with other meanings,
and PyTorch/XLA code has its own device and `mark_step`: such files are left
alone. The imports are read from the lines of the file, before any parse; only
unconditional, top-level ones decide.
"""

from __future__ import annotations

import re
from typing import Optional

from hpu_port.device import evidence as device_evidence

# Imports at the top level only: an indented one sits under a condition
# (`if is_torch_xla_available(): import torch_xla`), in a library that
# supports several back ends, and does not make the file foreign.
_IMPORT = re.compile(rb"^(?:import|from)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def foreign_framework(source: bytes, evidence: Optional[device_evidence.Evidence] = None) -> Optional[str]:
    """The other framework this file is written for, or None for PyTorch (or
    no framework). The frameworks are the device evidence's (``[frameworks]``
    of ``rules/_device.toml``); ``evidence``: the run's, with the project's
    additions (default: the bundled table)."""
    frameworks = evidence or device_evidence.bundled()
    roots = {match.group(1).decode("ascii") for match in _IMPORT.finditer(source)}
    # Frameworks whose files are never PyTorch CUDA code, even with torch imported.
    for name in frameworks.always_foreign_frameworks:
        if name in roots:
            return name
    if "torch" in roots:
        return None
    # The others' files are left alone unless they import torch too.
    return next(
        (name for name in frameworks.foreign_frameworks if name in roots and not _device_free(source, name, frameworks)), None
    )


def _device_free(source: bytes, framework: str, evidence: device_evidence.Evidence) -> bool:
    """Whether every use of ``framework`` in ``source`` (its imports, and
    each `alias.name`) is one of its names that touch no device."""
    if not evidence.device_free_names:
        return False
    used, imports = [], 0
    code = _FRAMEWORK_IMPORT.sub(b"", source)  # uses, not the imports' own names
    for match in _FRAMEWORK_IMPORT.finditer(source):
        module = (match.group("module") or match.group("from")).decode("ascii")
        if module != framework and not module.startswith(framework + "."):
            continue
        imports += 1
        if match.group("names") is not None:
            used += [f"{module}.{name.split()[0]}" for name in match.group("names").decode("ascii").split(",") if name.strip()]
            continue
        # `import tensorflow.contrib` binds `tensorflow`: its uses are spelled whole.
        alias = match.group("alias").decode("ascii") if match.group("alias") else framework
        bound = module if match.group("alias") else framework
        uses = re.finditer(rb"(?<![\w.])%s\.([A-Za-z_][\w.]*)" % re.escape(alias.encode()), code)
        used += [f"{bound}.{use.group(1).decode('ascii')}" for use in uses]
    # An import this does not read (`from tensorflow import (...)`) may bind anything.
    every_import_read = imports == sum(1 for match in _IMPORT.finditer(source) if match.group(1) == framework.encode())
    return every_import_read and bool(used) and all(evidence.device_free(name) for name in used)


# `import tensorflow as tf`, `from tensorflow.contrib.training import HParams`.
_FRAMEWORK_IMPORT = re.compile(
    rb"^(?:import[ \t]+(?P<module>[\w.]+)(?:[ \t]+as[ \t]+(?P<alias>\w+))?"
    rb"|from[ \t]+(?P<from>[\w.]+)[ \t]+import[ \t]+(?P<names>[\w \t,]+))[ \t]*(?:#.*)?$",
    re.MULTILINE,
)
