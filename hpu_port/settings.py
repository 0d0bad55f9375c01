"""The effective settings of a run: the selected rules plus the switches that gate them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable

from hpu_port.kinds import Kind, get_kind
from hpu_port.rules import Rule


@dataclass(frozen=True)
class Options:
    mode: str = "lazy"
    fp16_to_bf16: bool = False
    unsafe_fixes: bool = False


@dataclass
class RuleSet:
    """Selected rules, grouped by kind, with the prefilter derived from them."""

    rules: list[Rule]
    options: Options = field(default_factory=Options)

    def __post_init__(self) -> None:
        self.rules = [r for r in self.rules if self._active(r)]

    def _active(self, rule: Rule) -> bool:
        return rule.mode is None or rule.mode == self.options.mode

    def fix_enabled(self, rule: Rule) -> bool:
        if rule.fix == "safe":
            return rule.option is None or self._option_on(rule.option)
        if rule.fix == "unsafe":
            return self.options.unsafe_fixes
        return False

    def _option_on(self, option: str) -> bool:
        return {"fp16-to-bf16": self.options.fp16_to_bf16}.get(option, False)

    def by_kind(self) -> list[tuple[Kind, list[Rule]]]:
        return self._grouped

    @cached_property
    def _grouped(self) -> list[tuple[Kind, list[Rule]]]:
        groups: dict[str, list[Rule]] = {}
        for rule in self.rules:
            groups.setdefault(rule.kind, []).append(rule)
        return [(get_kind(name), rules) for name, rules in sorted(groups.items())]

    @cached_property
    def trigger_pattern(self) -> "re.Pattern[bytes]":
        tokens: set[str] = set()
        for kind, rules in self.by_kind():
            for rule in rules:
                tokens |= kind.triggers(rule)
        if not tokens:
            return re.compile(rb"(?!x)x")  # matches nothing
        alternatives = sorted((re.escape(t.encode()) for t in tokens), key=len, reverse=True)
        return re.compile(b"|".join(alternatives))

    def might_match(self, source: bytes) -> bool:
        """Cheap test on raw bytes: a file with no trigger text is never parsed."""
        return self.trigger_pattern.search(source) is not None


def codes(rules: Iterable[Rule]) -> list[str]:
    return [rule.code for rule in rules]
