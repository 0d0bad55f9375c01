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
    return next((name for name in frameworks.foreign_frameworks if name in roots), None)
