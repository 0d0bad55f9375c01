"""Matching two versions of a file line by line (or of a line character by
character) in time that grows with their length.

``difflib.SequenceMatcher`` finds the longest run of equal items, then does
the same on each side of it, over and over. Each search reads every item of
its range, and every place where an equal item stands in the other version:
when the rules changed every other line of a file, the searches take time
that grows with the square of its length (24 seconds for 10,000 lines), and
so do they when a line recurs thousands of times (comments, `)`).

``BoundedMatcher`` gives SequenceMatcher's answer where that is cheap: for
any stretch, within a budget of items read that grows with its length (so a
reviewer's diff aligns as it always did). A stretch over budget first loses
the equal items at both its ends; then the items that occur once on each
side, in the same order, pin the two sides together (as `git diff
--patience` does), and each stretch between two pins is matched the same
way. A stretch over budget that holds no such item is matched item by item,
in step: a valid matching, if not the shortest diff.
"""

from __future__ import annotations

import bisect
from collections import Counter
from difflib import Match, SequenceMatcher
from typing import Optional, Sequence

# What matching a stretch as SequenceMatcher does may cost, in items read,
# per item of the stretch (and a floor for short ones).
BUDGET_PER_ITEM = 128
BUDGET_FLOOR = 50_000
# How many times a stretch between pins is pinned again, at most.
MAX_PINNING_ROUNDS = 4


class BoundedMatcher(SequenceMatcher):
    """A SequenceMatcher (opcodes, grouped opcodes) whose matching is
    bounded in time; made with ``autojunk`` off, as SequenceMatcher is here."""

    def __init__(self, isjunk=None, a: Sequence = (), b: Sequence = ()) -> None:
        super().__init__(isjunk, a, b, autojunk=False)

    def set_seq2(self, b: Sequence) -> None:
        # SequenceMatcher indexes b here for its own search, which this
        # class does not use: matching builds its own, smaller matchers.
        if b is not self.b:
            self.b = b
            self.matching_blocks = self.opcodes = self.fullbcount = None

    def get_matching_blocks(self) -> list[Match]:
        if self.matching_blocks is None:
            blocks: list[Match] = []
            _Matching(self.a, self.b, self.isjunk, blocks).match(0, len(self.a), 0, len(self.b), 0)
            self.matching_blocks = _joined(sorted(blocks)) + [Match(len(self.a), len(self.b), 0)]
        return self.matching_blocks


class _OverBudget(Exception):
    pass


class _BudgetedMatcher(SequenceMatcher):
    """SequenceMatcher that gives up once its searches would read more than
    ``budget`` items. A search of a[alo:ahi] reads each of those items and
    each place of b where one of them stands (``reads``: running sums)."""

    def __init__(self, isjunk, a: Sequence, b: Sequence, budget: int) -> None:
        super().__init__(isjunk, a, b, autojunk=False)
        self.budget = budget
        self.reads = [0]
        for item in a:
            self.reads.append(self.reads[-1] + 1 + len(self.b2j.get(item, ())))

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        self.budget -= self.reads[ahi] - self.reads[alo]
        if self.budget < 0:
            raise _OverBudget
        return super().find_longest_match(alo, ahi, blo, bhi)


class _Matching:
    def __init__(self, a: Sequence, b: Sequence, isjunk, blocks: list[Match]) -> None:
        self.a, self.b, self.isjunk, self.blocks = a, b, isjunk, blocks

    def match(self, alo: int, ahi: int, blo: int, bhi: int, rounds: int) -> None:
        if alo == ahi or blo == bhi:
            return
        if self._matched_exactly(alo, ahi, blo, bhi):
            # As SequenceMatcher matches it, whatever the length, when that is
            # cheap: the diff a reviewer reads then aligns as it always did.
            return
        alo, ahi, blo, bhi = self._take_equal_ends(alo, ahi, blo, bhi)
        if alo == ahi or blo == bhi:
            return
        if ahi - alo == 1 or bhi - blo == 1:
            self._match_one_item(alo, ahi, blo, bhi)
            return
        pins = self._pins(alo, ahi, blo, bhi) if rounds < MAX_PINNING_ROUNDS else []
        if pins:
            self._match_between(pins, alo, ahi, blo, bhi, rounds)
        elif not self._matched_exactly(alo, ahi, blo, bhi):
            self._match_in_step(alo, ahi, blo, bhi)

    def _match_between(self, pins: list, alo: int, ahi: int, blo: int, bhi: int, rounds: int) -> None:
        """The pinned items, and each stretch before, between and after them."""
        for pinned in _runs(pins):
            self.match(alo, pinned.a, blo, pinned.b, rounds + 1)
            self.blocks.append(pinned)
            alo, blo = pinned.a + pinned.size, pinned.b + pinned.size
        self.match(alo, ahi, blo, bhi, rounds + 1)

    def _take_equal_ends(self, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int, int]:
        a, b = self.a, self.b
        start = 0
        while alo + start < ahi and blo + start < bhi and a[alo + start] == b[blo + start]:
            start += 1
        if start:
            self.blocks.append(Match(alo, blo, start))
        alo, blo = alo + start, blo + start
        end = 0
        while alo < ahi - end and blo < bhi - end and a[ahi - end - 1] == b[bhi - end - 1]:
            end += 1
        if end:
            self.blocks.append(Match(ahi - end, bhi - end, end))
        return alo, ahi - end, blo, bhi - end

    def _match_one_item(self, alo: int, ahi: int, blo: int, bhi: int) -> None:
        """A stretch of one item on a side: matched where it first stands on
        the other side, as SequenceMatcher would (a junk item nowhere)."""
        if ahi - alo == 1:
            found = self._first(self.a[alo], self.b, blo, bhi)
            if found is not None:
                self.blocks.append(Match(alo, found, 1))
        else:
            found = self._first(self.b[blo], self.a, alo, ahi)
            if found is not None:
                self.blocks.append(Match(found, blo, 1))

    def _first(self, item, items: Sequence, start: int, stop: int) -> Optional[int]:
        if self.isjunk and self.isjunk(item):
            return None
        return next((k for k in range(start, stop) if items[k] == item), None)

    def _matched_exactly(self, alo: int, ahi: int, blo: int, bhi: int) -> bool:
        """Match the stretch with SequenceMatcher, unless that costs too much."""
        budget = max(BUDGET_FLOOR, BUDGET_PER_ITEM * (ahi - alo + bhi - blo))
        matcher = _BudgetedMatcher(self.isjunk, self.a[alo:ahi], self.b[blo:bhi], budget)
        try:
            found = matcher.get_matching_blocks()
        except _OverBudget:
            return False
        self.blocks += [Match(alo + i, blo + j, size) for i, j, size in found if size]
        return True

    def _match_in_step(self, alo: int, ahi: int, blo: int, bhi: int) -> None:
        a, b = self.a, self.b
        self.blocks += [Match(alo + k, blo + k, 1) for k in range(min(ahi - alo, bhi - blo)) if a[alo + k] == b[blo + k]]

    def _pins(self, alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int]]:
        """(i, j) of the items that occur once in each range, as many as stand in the same order."""
        in_a = Counter(self.a[alo:ahi])
        in_b = Counter(self.b[blo:bhi])
        where_in_b = {item: j for j, item in enumerate(self.b[blo:bhi], blo) if in_b[item] == 1 and in_a[item] == 1}
        pairs = [
            (i, where_in_b[item])
            for i, item in enumerate(self.a[alo:ahi], alo)
            if item in where_in_b and not (self.isjunk and self.isjunk(item))
        ]
        return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (increasing in i) increasing in j too."""
    if all(first[1] < second[1] for first, second in zip(pairs, pairs[1:])):
        return pairs  # the usual case: nothing moved
    tails: list[int] = []  # tails[k]: the smallest j ending an increasing run of k + 1
    tail_index: list[int] = []
    before: list[int] = []
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[k], tail_index[k] = j, index
        before.append(tail_index[k - 1] if k else -1)
    run, index = [], tail_index[-1] if tail_index else -1
    while index >= 0:
        run.append(pairs[index])
        index = before[index]
    return run[::-1]


def _runs(pins: list[tuple[int, int]]) -> list[Match]:
    """Pinned items that follow one another on both sides, as blocks."""
    runs: list[Match] = []
    for i, j in pins:
        if runs and runs[-1].a + runs[-1].size == i and runs[-1].b + runs[-1].size == j:
            runs[-1] = Match(runs[-1].a, runs[-1].b, runs[-1].size + 1)
        else:
            runs.append(Match(i, j, 1))
    return runs


def _joined(blocks: list[Match]) -> list[Match]:
    """Adjacent blocks made one, as SequenceMatcher gives them."""
    joined: list[Match] = []
    for block in blocks:
        if joined and joined[-1].a + joined[-1].size == block.a and joined[-1].b + joined[-1].size == block.b:
            last = joined.pop()
            block = Match(last.a, last.b, last.size + block.size)
        joined.append(block)
    return joined
