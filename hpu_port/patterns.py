"""Sets of shell-style name patterns (`triton`, `flash_attn*`, `torch.cuda.*`)
answered without compiling a regular expression per pattern.

Most evidence patterns are a plain name or a name followed by one `*`:
those are a set lookup and a `str.startswith`. Compiling every pattern
with `fnmatch` costs more than a short run's whole port.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

_SPECIAL = frozenset("*?[")


class PatternSet:
    """Whether a name matches any of a tuple of patterns (``fnmatchcase`` semantics)."""

    __slots__ = ("exact", "prefixes", "others")

    def __init__(self, patterns: tuple) -> None:
        exact, prefixes, others = set(), [], []
        for pattern in patterns:
            if _SPECIAL.isdisjoint(pattern):
                exact.add(pattern)
            elif pattern.endswith("*") and _SPECIAL.isdisjoint(pattern[:-1]):
                prefixes.append(pattern[:-1])
            else:
                others.append(pattern)
        self.exact = frozenset(exact)
        self.prefixes = tuple(prefixes)
        self.others = tuple(others)

    def matches(self, name: str) -> bool:
        if name in self.exact or name.startswith(self.prefixes):
            return True
        return any(fnmatchcase(name, pattern) for pattern in self.others)


@lru_cache(maxsize=256)
def pattern_set(patterns: tuple) -> PatternSet:
    return PatternSet(patterns)


def matches_any(name: str, patterns: tuple) -> bool:
    """Whether ``name`` matches one of ``patterns`` (as ``fnmatchcase`` would)."""
    return pattern_set(tuple(patterns)).matches(name)
