"""Asking whether a place lies in one of many ranges, by a search instead of a scan.

A file with thousands of comments, findings or embedded scripts asks such
questions once per finding; comparing each with every range takes time that
grows with the square of the file's length.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Iterable, Optional


class Reach:
    """Ranges (start, end), any number, overlapping or not; ``farthest_end``
    tells how far the ranges that start before a place reach."""

    def __init__(self, ranges: Iterable[tuple[Any, Any]]) -> None:
        ordered = sorted(ranges)
        self._starts = [start for start, _ in ordered]
        # The farthest end of the ranges up to and including each one.
        self._reach = list(itertools.accumulate((end for _, end in ordered), max))

    def farthest_end(self, place: Any, starting_at_place: bool = True) -> Optional[Any]:
        """The farthest end of the ranges that start before ``place`` (or at
        it, with ``starting_at_place``); None when there are none."""
        search = bisect.bisect_right if starting_at_place else bisect.bisect_left
        count = search(self._starts, place)
        return self._reach[count - 1] if count else None

    def holds(self, start: Any, end: Any) -> bool:
        """Whether one range holds all of start..end (its ends included)."""
        farthest = self.farthest_end(start)
        return farthest is not None and end <= farthest

    def covers(self, place: Any) -> bool:
        """Whether ``place`` lies in a range: at its start, or before its end."""
        farthest = self.farthest_end(place)
        return farthest is not None and place < farthest

    def surrounds(self, place: Any) -> bool:
        """Whether ``place`` lies strictly between the ends of a range."""
        farthest = self.farthest_end(place, starting_at_place=False)
        return farthest is not None and place < farthest
