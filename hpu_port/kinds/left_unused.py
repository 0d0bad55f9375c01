"""Kind ``left-unused``: local names whose last read a rewrite removed.

It judges the rewritten file, not the code as written: after every pass, the
locals a function read before and only assigns after are reported at their
assignment (see ``hpu_port.left_unused``). Nothing is removed: the value may
have effects of its own.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind
from hpu_port.left_unused import names_left_unused
from hpu_port.results import Finding


@register_kind
class LeftUnused(Kind):
    name = "left-unused"
    KEYS = {}
    MESSAGE_FIELDS = frozenset({"name"})

    def visitors(self, rules, ctx):
        return []

    def judge_output(self, rules, old, new):
        lines = old.decode("utf-8", errors="replace").splitlines()
        findings = []
        for name, line in names_left_unused(old, new):
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            column = len(text) - len(text.lstrip()) + 1
            for rule in rules:
                findings.append(Finding(
                    rule.code, rule.message.format(name=name), line, column, line, max(len(text) + 1, column),
                    category=rule.category, item_scope=rule.items,
                ))
        return findings
