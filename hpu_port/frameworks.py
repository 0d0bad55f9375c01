"""Which deep learning framework a file is written for, from its imports.

hpu-port ports PyTorch code. A file written for another framework (TensorFlow,
JAX, MXNet, Paddle) mentions `cuda`, `nccl` and `float16` with other meanings,
and PyTorch/XLA code has its own device and `mark_step`: such files are left
alone. The imports are read from the lines of the file, before any parse.
"""

from __future__ import annotations

import re
from typing import Optional

# Frameworks whose files are never PyTorch CUDA code, even with torch imported.
ALWAYS_FOREIGN = ("torch_xla",)
# Frameworks whose files are left alone unless they import torch too.
FOREIGN = ("tensorflow", "jax", "jaxlib", "flax", "mxnet", "paddle", "keras", *ALWAYS_FOREIGN)

_IMPORT = re.compile(rb"^[ \t]*(?:import|from)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def foreign_framework(source: bytes) -> Optional[str]:
    """The other framework this file is written for, or None for PyTorch (or no framework)."""
    roots = {match.group(1).decode("ascii") for match in _IMPORT.finditer(source)}
    for name in ALWAYS_FOREIGN:
        if name in roots:
            return name
    if "torch" in roots:
        return None
    return next((name for name in FOREIGN if name in roots), None)
