"""The effective settings of a run: the selected rules plus the switches that gate them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from hpu_port.kinds import Kind, get_kind
from hpu_port.rules import Rule
from hpu_port.triggers import CodeView, Trigger, TriggerIndex, code_view, text_trigger


DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024


@dataclass(frozen=True)
class Options:
    mode: str = "lazy"
    fp16_to_bf16: bool = False
    unsafe_fixes: bool = False
    # Larger files are generated data in practice; libcst needs minutes for them.
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    include_generated: bool = False


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
    def removable_imports(self) -> frozenset:
        """Top-level modules whose import goes once every use was rewritten."""
        return frozenset(m for rule in self.rules for m in rule.remove_imports_of)

    @cached_property
    def trigger_index(self) -> TriggerIndex:
        return TriggerIndex((rule, rule_triggers(rule) or None) for rule in self.rules)

    @cached_property
    def comment_trigger_index(self) -> Optional[TriggerIndex]:
        """The triggers of the rules that read comments; None if there are none."""
        if not self._comment_rules:
            return None
        reading = _ids(self._comment_rules)
        return TriggerIndex(e for e in self.trigger_index.entries if id(e[0]) in reading)

    @cached_property
    def context_words(self) -> frozenset:
        """Words that rules consult away from where they report (see ``Kind.context_words``)."""
        return frozenset(w for rule in self.rules for w in get_kind(rule.kind).context_words(rule))

    @cached_property
    def reads_dependency_files(self) -> bool:
        return any(getattr(get_kind(r.kind), "READS_DEPENDENCY_FILES", False) for r in self.rules)

    @cached_property
    def _comment_rules(self) -> list[Rule]:
        return [rule for rule in self.rules if get_kind(rule.kind).READS_COMMENTS]

    def for_source(self, source: bytes) -> Optional["RuleSet"]:
        """The rules that could act on ``source``, judged from its raw bytes;
        None when none could (the file is then never parsed).

        A file that mentions `no_grad` but no CUDA API is walked by one rule's
        visitor, not by all of them. Rules without triggers (imports added as a
        consequence of other fixes) ride along with the others.
        """
        return self._subset(self.trigger_index.matching(source))

    def for_code(self, source: bytes, view: Optional[CodeView] = None) -> Optional["RuleSet"]:
        """Like ``for_source``, but judged from the code alone: comments and
        docstrings (which no rule reads) are blanked out first, and kinds may
        look at the standard parser's tree, which is several times faster to
        build than the full one. ``view``: the file's CodeView, if already made.
        """
        view = view or code_view(source)
        if view is None:
            return self
        index = self.trigger_index
        chosen = index.matching(view.text)
        chosen = [r for r in chosen if not index.has_triggers(r) or get_kind(r.kind).screen(r, view)]
        if not any(index.has_triggers(r) for r in chosen):
            chosen = []
        if self._comment_rules:
            in_source = _ids(self.comment_trigger_index.matching(source))
            picked = _ids(chosen)
            kept = _ids(r for r in self._comment_rules if id(r) not in picked and id(r) in in_source)
            chosen = [r for r in self.rules if id(r) in picked or id(r) in kept] if kept else chosen
        return self._subset(chosen)

    def _subset(self, chosen: list[Rule]) -> Optional["RuleSet"]:
        if not chosen:
            return None
        if len(chosen) == len(self.rules):
            return self
        subset = RuleSet(chosen, self.options)
        # By identity: comparing rules field by field costs more than the screen.
        picked = _ids(chosen)
        subset.__dict__["trigger_index"] = TriggerIndex(e for e in self.trigger_index.entries if id(e[0]) in picked)
        return subset


def _ids(rules) -> set[int]:
    return {id(rule) for rule in rules}


ADVICE = "advice"


def is_advice(rule: Rule) -> bool:
    """Optimization advice: reported by `check`, left to `rewrite --select`."""
    return rule.category == ADVICE


def rule_triggers(rule: Rule) -> list[Trigger]:
    """What a file must contain for ``rule`` to act on it (any of these): the
    rule's own ``triggers`` (pieces of text) if it names them, else what its
    kind derives from its data."""
    if rule.triggers:
        return [text_trigger(text) for text in rule.triggers]
    return get_kind(rule.kind).triggers(rule)


class RuleSetResolver:
    """Each file's RuleSet, from its configuration merged with the command line.

    Rule files are loaded once per distinct list of files, and a RuleSet is
    built once per distinct configuration.
    """

    def __init__(self, overrides, command: str = "check") -> None:
        self.overrides = overrides
        # `rewrite` leaves advice alone unless it is asked for by code.
        self.command = command
        # Advice rules some selector names by code: their findings count for
        # the exit status; other advice is only information.
        self.asked_advice: set[str] = set()
        self._rules: dict = {}
        self._rulesets: dict = {}

    def settings(self, path):
        from hpu_port.config import settings_for

        return self.overrides.apply(settings_for(path))

    def __call__(self, path) -> "Optional[RuleSet]":
        settings = self.settings(path)
        if settings.excluded(path):
            return None
        key = (settings, settings.ignored_codes(path))
        if key not in self._rulesets:
            self._rulesets[key] = self._build(settings, key[1])
        return self._rulesets[key]

    def _build(self, settings, extra_ignores) -> "RuleSet":
        from pathlib import Path

        from hpu_port.rules import load_rules, matches_selector, select_rules

        if settings.rules not in self._rules:
            self._rules[settings.rules] = load_rules([Path(p) for p in settings.rules])
        rules = self._rules[settings.rules]
        chosen = select_rules(rules, settings.select, settings.ignore + extra_ignores)
        extended = select_rules(rules, settings.extend_select or ["ALL"], settings.ignore + extra_ignores)
        if settings.extend_select:
            chosen += [r for r in extended if r not in chosen and any(matches_selector(r.code, s) for s in settings.extend_select)]
        asked = [s for s in (*settings.select, *settings.extend_select) if s != "ALL"]
        named = {r.code for r in chosen if is_advice(r) and any(matches_selector(r.code, s) for s in asked)}
        self.asked_advice |= named
        if self.command == "rewrite":
            chosen = [r for r in chosen if not is_advice(r) or r.code in named]
        options = Options(
            mode=settings.mode,
            fp16_to_bf16=settings.fp16_to_bf16,
            unsafe_fixes=settings.unsafe_fixes,
            max_file_size=int(settings.max_file_size_mib * 2**20),
            include_generated=settings.include_generated,
        )
        return RuleSet(sorted(chosen, key=lambda r: r.code), options)
