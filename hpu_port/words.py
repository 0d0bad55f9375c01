"""The words of a text, found in C: identifiers, and the words of its strings and comments."""

from __future__ import annotations

import re
from functools import lru_cache

# Identifier bytes stay, everything else becomes a separator, so that
# `source.translate(WORD_BYTES).split()` lists the identifiers of a file (and the
# words of its strings and comments) in one C-speed pass.
WORD_BYTES = bytes(c if chr(c).isalnum() and c < 128 or c == ord("_") else ord(" ") for c in range(256))


# The same words as runs of bytes, captured: a split keeps them between the rest.
IDENTIFIER_RUN = re.compile(rb"([A-Za-z0-9_]+)")


@lru_cache(maxsize=8)  # a file is screened by the run, then by its port: the same bytes
def words_in(source: bytes) -> frozenset:
    """Every identifier of ``source`` (and every word of its strings and comments)."""
    return frozenset(source.translate(WORD_BYTES).split())
