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

# Each position: its role, the literal it starts with (searched for as such:
# a regular expression whose every match starts with a literal is found by a
# fast scan, where an alternation is tried at every byte of a large tree),
# what follows it, and what must come before it.
ANYWHERE, WORD, ARGUMENT = "anywhere", "word", "argument"
_POSITIONS = (
    (BACKEND, b"init_process_group(", rb"\s*(?:backend\s*=\s*)?", ANYWHERE),
    (BACKEND, b"init_distributed(", rb"\s*(?:dist_backend\s*=\s*)?", ANYWHERE),
    (BACKEND, b"backend", rb"\s*=\s*", WORD),
    (DEVICE, b"torch.device(", rb"\s*", ANYWHERE),
    (DEVICE, b".to(", rb"\s*(?:device\s*=\s*)?", ANYWHERE),
    (DEVICE, b"device", rb"\s*=\s*", ARGUMENT),  # `f(x, device=...)`, `torch_device=`
    (DEVICE, b"map_location", rb"\s*=\s*", WORD),
    (DTYPE, b"getattr(", rb"\s*torch\s*,\s*", ANYWHERE),
    (DTYPE, b"dtype", rb"\s*=\s*", ARGUMENT),  # `dtype=`, `torch_dtype=`
)
# Names too general to be a config's key (`x.to(self.device)` reads an attribute set in code).
_NOT_KEYS = frozenset({"device", "dtype", "backend"})


def _pattern(literal: bytes, rest: bytes) -> "re.Pattern":
    return re.compile(b"%s%s%s%s" % (re.escape(literal), rest, _READ, _END))


_PATTERNS = tuple((role, literal, _pattern(literal, rest), before) for role, literal, rest, before in _POSITIONS)


def _preceded_right(source: bytes, at: int, before: str) -> bool:
    if before == ANYWHERE:
        return True
    if before == WORD:
        return at == 0 or not (source[at - 1 : at].isalnum() or source[at - 1 : at] == b"_")
    if source[max(0, at - 6) : at] == b"torch_":
        at -= 6
    while at > 0 and source[at - 1 : at] in (b" ", b"\t", b"\n", b"\r", b"\f", b"\v"):
        at -= 1
    return at > 0 and source[at - 1 : at] in (b"(", b",")


def config_reads(sources: Iterable[bytes]) -> tuple:
    """(key, role) for every key read at a device, backend or dtype position
    (sorted); keys that are a role's own name are left to the rules' lists."""
    found = set()
    for source in sources:
        if not isinstance(source, bytes):
            continue
        for role, literal, pattern, before in _PATTERNS:
            if literal not in source:
                continue
            for match in pattern.finditer(source):
                if not _preceded_right(source, match.start(), before):
                    continue
                key = (match.group("attribute") or match.group("item") or match.group("got")).decode("ascii", "replace")
                if key not in _NOT_KEYS and not key.isupper():
                    found.add((key, role))
    return tuple(sorted(found))
