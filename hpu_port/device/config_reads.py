"""Config keys the project's code reads at a device, backend or dtype position.

A training config's value matters by what the code does with it:
`init_process_group(backend=cfg.comm_backend)` makes `comm_backend: nccl` a
collective backend, `torch.device(args.run_on)` makes `run_on: cuda` a
device, `getattr(torch, cfg.amp)` makes `amp: float16` a dtype, whatever the
keys are called. These are found in the Python sources as plain text (no
parse), and the config rules match those keys too, in any YAML, JSON or
TOML file of the project.
"""

from __future__ import annotations

import re
from typing import Iterable

BACKEND = "backend"
DEVICE = "device"
DTYPE = "dtype"

# A value read from a config: `cfg.train.backend`, `args.device`,
# `config["backend"]`, `self.cfg.get("device")`. The key is the last part.
_READ = (
    rb"(?!torch\b)[A-Za-z_]\w*"
    rb"(?:\.[A-Za-z_]\w*|\[\s*['\"][\w.-]+['\"]\s*\])*?"
    rb"(?:\.(?P<attribute>[A-Za-z_]\w*)|\[\s*['\"](?P<item>[\w.-]+)['\"]\s*\]|\.get\(\s*['\"](?P<got>[\w.-]+)['\"])"
)
_END = rb"\s*[,)]"

_POSITIONS = {
    BACKEND: (
        rb"init_process_group\(\s*(?:backend\s*=\s*)?",
        rb"init_distributed\(\s*(?:dist_backend\s*=\s*)?",
        rb"\bbackend\s*=\s*",
    ),
    DEVICE: (
        rb"torch\.device\(\s*",
        rb"\.to\(\s*(?:device\s*=\s*)?",
        rb"[(,]\s*device\s*=\s*",
        rb"\bmap_location\s*=\s*",
    ),
    DTYPE: (
        rb"getattr\(\s*torch\s*,\s*",
        rb"[(,]\s*(?:torch_)?dtype\s*=\s*",
    ),
}
# What the positions' calls look like, to skip the search in most files.
_NEEDLES = (b"backend", b"device", b"dtype", b"getattr", b".to(", b"map_location")
# Names too general to be a config's key (`x.to(self.device)` reads an attribute set in code).
_NOT_KEYS = frozenset({"device", "dtype", "backend"})


def _pattern(role: str) -> "re.Pattern":
    starts = b"|".join(b"(?:%s)" % start for start in _POSITIONS[role])
    return re.compile(b"(?:%s)%s%s" % (starts, _READ, _END))


_PATTERNS = {role: _pattern(role) for role in _POSITIONS}


def config_reads(sources: Iterable[bytes]) -> tuple:
    """(key, role) for every key read at a device, backend or dtype position
    (sorted); keys that are a role's own name are left to the rules' lists."""
    found = set()
    for source in sources:
        if not isinstance(source, bytes) or not any(needle in source for needle in _NEEDLES):
            continue
        for role, pattern in _PATTERNS.items():
            for match in pattern.finditer(source):
                key = (match.group("attribute") or match.group("item") or match.group("got")).decode("ascii", "replace")
                if key not in _NOT_KEYS and not key.isupper():
                    found.add((key, role))
    return tuple(sorted(found))
