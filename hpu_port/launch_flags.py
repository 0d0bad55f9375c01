"""The launch lines of the scripts a run moves to the Gaudi trainer.

Which scripts move is known only once every Python file is ported: the move
(``trainer-move``) is all or nothing in a file and in a project. Only then
may a launch line of such a script get the flags the moved script needs
(``trainer-launch``): the documents whose launch lines were only reported
are ported again, knowing the scripts that moved.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

from hpu_port.cache import Cache
from hpu_port.parallel import port_one
from hpu_port.settings import RuleSet


def flag_moved_launches(planned: list, results: list, sources: list, apply: bool, cache: Optional[Cache]) -> None:
    """Port again, knowing which scripts this run moves to the Gaudi trainer,
    the documents whose launch lines of such a script were only reported:
    which scripts move is known once every Python file is ported (the move
    is all or nothing in a file), and only then may a launch line get the
    flags the moved script needs (``ProjectFacts.moved_scripts``)."""
    moves = {rule.code for _, ruleset in planned if ruleset is not None for rule in ruleset.rules if rule.kind == "trainer-move"}
    launches = {rule.code for _, ruleset in planned if ruleset is not None for rule in ruleset.rules if rule.kind == "trainer-launch"}
    if not moves or not launches:
        return
    moved = tuple(sorted(
        os.path.abspath(result.path)
        for result in results
        if result is not None and any(f.code in moves and f.fixable for f in result.findings)
    ))
    if not moved:
        return
    for index, ((entry, ruleset), source) in enumerate(zip(planned, sources)):
        result = results[index]
        if result is None or ruleset is None or not isinstance(source, bytes):
            continue
        if not any(f.code in launches and not f.fixable for f in result.findings):
            continue
        knowing = RuleSet(ruleset.rules, ruleset.options, ruleset.analysis, followers=ruleset.followers)
        knowing.facts = dataclasses.replace(ruleset.facts, moved_scripts=moved)
        again = cache.lookup(knowing, apply, entry.path, source) if cache is not None else None
        if again is None:
            again = port_one(entry.path, source, knowing, apply)
        again.source = source
        results[index] = again
        if cache is not None:
            cache.store(knowing, apply, again)
