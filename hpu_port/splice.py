"""Keep every untouched line byte-identical, even where libcst would normalise it.

libcst reproduces almost every file exactly, but not all: a form feed before
code on a line is dropped, and old Mac line endings (CR only) are rewritten.
When the round trip of the unchanged tree differs from the file, the lines that
the rules changed are carried over onto the original bytes instead.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Callable, Optional


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


def line_map(old: bytes, new: bytes) -> Callable[[int], int]:
    """Where each line (1-based) of ``old`` stands in ``new``: an unchanged line
    where it moved to, a changed one at the first line that replaced it."""
    starts: list[tuple[int, int, int, bool]] = []
    matcher = SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        starts.append((i1, i2, j1, tag == "equal"))

    def new_line(line: int) -> int:
        index = line - 1
        for i1, i2, j1, equal in starts:
            if i1 <= index < i2 or (i1 == i2 == index):
                return j1 + (index - i1 if equal else 0) + 1
        return line

    return new_line
