"""Keep every untouched line byte-identical, even where libcst would normalise it.

libcst reproduces almost every file exactly, but not all: a form feed before
code on a line is dropped, and old Mac line endings (CR only) are rewritten.
When the round trip of the unchanged tree differs from the file, the lines that
the rules changed are carried over onto the original bytes instead.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Optional


def splice(original: bytes, roundtrip: bytes, new: bytes) -> Optional[bytes]:
    """``original`` with the line changes that turn ``roundtrip`` into ``new``.

    None when the round trip does not line up with the original line by line,
    in which case the original bytes cannot be kept around the edits.
    """
    old_lines = original.splitlines(keepends=True)
    round_lines = roundtrip.splitlines(keepends=True)
    if len(old_lines) != len(round_lines):
        return None
    new_lines = new.splitlines(keepends=True)
    out: list[bytes] = []
    matcher = SequenceMatcher(None, round_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out += old_lines[i1:i2] if tag == "equal" else new_lines[j1:j2]
    return b"".join(out)
