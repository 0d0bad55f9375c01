"""Keep every byte no rule changed, even where libcst would normalise it.

libcst reproduces almost every file exactly, but not all: a form feed before
code on a line is dropped, old Mac line endings (CR only) are rewritten, and a
lone CR after the last line is lost. When the round trip of the unchanged tree
differs from the file, the rules' changes are carried over onto the original
bytes instead: line by line where lines are equal, and character by character
inside the lines the rules changed, so that a form feed or a line end on a
changed line is kept too.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Callable, Optional

from hpu_port.diffing import BoundedMatcher


def splice(original: bytes, roundtrip: bytes, new: bytes) -> Optional[bytes]:
    """``original`` with the changes that turn ``roundtrip`` into ``new``.

    None when the round trip does not line up with the original line by line,
    in which case the original bytes cannot be kept around the edits.
    """
    # bytes.splitlines breaks only at \n, \r\n and \r, as Python does.
    old_lines = original.splitlines(keepends=True)
    round_lines = roundtrip.splitlines(keepends=True)
    if len(old_lines) == len(round_lines) + 1 and old_lines[-1] == b"\r":
        # The lone CR libcst drops at the very end made an empty last line.
        rest = splice(original[:-1], roundtrip, new)
        return None if rest is None else rest + b"\r"
    if len(old_lines) != len(round_lines):
        return None
    new_lines = new.splitlines(keepends=True)
    out: list[bytes] = []
    # Blank lines do not anchor the comparison: the blank line after an added
    # import would otherwise pair with one below a changed line, and that
    # line's form feed would go to the import.
    matcher = BoundedMatcher(_blank, round_lines, new_lines)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += old_lines[i1:i2]
        else:
            out.append(_merge(old_lines[i1:i2], round_lines[i1:i2], new_lines[j1:j2]))
    return b"".join(out)


def _blank(line: bytes) -> bool:
    return not line.strip()


def _merge(old_lines: list[bytes], round_lines: list[bytes], new_lines: list[bytes]) -> bytes:
    """Lines the rules changed: ``new_lines``, with what libcst normalised in
    them (``round_lines`` against ``old_lines``) put back."""
    original, roundtrip, new = b"".join(old_lines), b"".join(round_lines), b"".join(new_lines)
    if original == roundtrip:
        return new
    if _short(roundtrip, new):
        return _merge_text(original, roundtrip, new)
    if len(round_lines) == len(new_lines):  # too long to compare at once: line by line
        return b"".join(map(_merge_text, old_lines, round_lines, new_lines))
    return new


def _short(roundtrip: bytes, new: bytes) -> bool:
    # Comparing texts character by character takes time that grows with the
    # square of their length: longer changed text is taken as the rules wrote it.
    return len(roundtrip) + len(new) <= 4000


def _merge_text(original: bytes, roundtrip: bytes, new: bytes) -> bytes:
    """``roundtrip`` with both the rules' edits (to ``new``) and libcst's
    normalisations undone (back to ``original``); where the two overlap, or
    the text is too long to compare, the rules' text."""
    if original == roundtrip or not _short(roundtrip, new):
        return new
    kept = _edits(roundtrip, original)
    made = _edits(roundtrip, new)
    if _overlap(kept, made):
        return new
    # At one position the rules' insertion goes first: a form feed or line end
    # libcst dropped belongs to the code after it, or to the end of the line.
    edits = sorted([(start, end, 1, text) for start, end, text in kept] + [(start, end, 0, text) for start, end, text in made])
    out, position = [], 0
    for start, end, _, text in edits:
        out += [roundtrip[position:start], text]
        position = end
    out.append(roundtrip[position:])
    return b"".join(out)


def _edits(old: bytes, new: bytes) -> list[tuple[int, int, bytes]]:
    """(start, end, replacement) in ``old`` for each difference from ``new``."""
    matcher = BoundedMatcher(None, old, new)
    return [(i1, i2, new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _overlap(first: list, second: list) -> bool:
    """Whether an edit of ``first`` and one of ``second`` touch the same bytes."""
    return any(_conflict(a, b) for a in first for b in second)


def _conflict(a: tuple, b: tuple) -> bool:
    (a1, a2, _), (b1, b2, _) = a, b
    if a1 == a2 and b1 == b2:
        return False  # two insertions at one place: both are kept, one after the other
    if a1 == a2:
        return b1 < a1 < b2  # an insertion at the edge of a replaced range stays outside it
    if b1 == b2:
        return a1 < b1 < a2
    return a1 < b2 and b1 < a2


def line_map(old: bytes, new: bytes) -> Callable[[int], int]:
    """Where each line (1-based) of ``old`` stands in ``new``: an unchanged line
    where it moved to, a changed one at the first line that replaced it."""
    starts: list[tuple[int, int, int, bool]] = []
    matcher = BoundedMatcher(None, old.splitlines(), new.splitlines())
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        starts.append((i1, i2, j1, tag == "equal"))

    ends = [i2 for _, i2, _, _ in starts]

    def new_line(line: int) -> int:
        index = line - 1
        # The first opcode that holds the line: one of the two from where
        # the ranges of old lines reach it (a search per finding, not a scan).
        for i1, i2, j1, equal in itertools.islice(starts, bisect.bisect_left(ends, index), None):
            if i1 <= index < i2 or (i1 == i2 == index):
                return j1 + (index - i1 if equal else 0) + 1
            if i1 > index:
                break
        return line

    return new_line
