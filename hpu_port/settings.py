"""The effective settings of a run: the selected rules plus the switches that gate them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from hpu_port.kinds import Kind, get_kind, screening
from hpu_port.model import Options, Rule
from hpu_port.project import NO_FACTS, ProjectFacts
from hpu_port.triggers import CodeView, TriggerIndex, code_view


@dataclass
class RuleSet:
    """Selected rules, grouped by kind, with the prefilter derived from them."""

    rules: list[Rule]
    options: Options = field(default_factory=Options)
    # Every loaded rule, selected or not: what code is whose device is decided
    # with all of them, whatever the selection (a rule left out only stops
    # reporting and fixing), so that `--select` and `--ignore` never change
    # what is held. None: the selected rules alone.
    analysis: Optional[list[Rule]] = None
    # The rule set this one was narrowed from: project facts are the root's.
    parent: Optional["RuleSet"] = field(default=None, repr=False, compare=False)
    _facts: Optional[ProjectFacts] = field(default=None, repr=False, compare=False)
    # The codes of the rules off by default and not selected: they walk a
    # file that another rule opened, for the analysis, but never open one
    # themselves (a `.numpy()` call alone makes no file worth parsing when
    # HPU141 is off).
    followers: frozenset = field(default=frozenset(), repr=False, compare=False)

    @property
    def facts(self) -> ProjectFacts:
        """What the runner found about the project (``hpu_port.project``):
        the same for every rule set narrowed from this one."""
        root = self._root
        facts = root._facts
        if facts is not None and not isinstance(facts, ProjectFacts):
            # Still being found by the process that sent this rule set to a
            # worker (hpu_port.parallel): wait for them, once.
            facts = root._facts = facts.wait()
        return facts or NO_FACTS

    @facts.setter
    def facts(self, facts: ProjectFacts) -> None:
        self._facts = facts

    @property
    def facts_pending(self) -> bool:
        """Whether the facts are still being found by the process that sent
        this rule set (reading ``facts`` would wait for them)."""
        facts = self._root._facts
        return facts is not None and not isinstance(facts, ProjectFacts)

    @property
    def _root(self) -> "RuleSet":
        root = self
        while root.parent is not None:
            root = root.parent
        return root

    def __post_init__(self) -> None:
        self.rules = [r for r in self.rules if self._active(r)]
        if self.analysis is not None:
            selected = _ids(self.rules)
            extra = [r for r in self.analysis if id(r) not in selected and self._active(r)]
            self.analysis = sorted([*self.rules, *extra], key=lambda r: r.code) if extra else None

    @cached_property
    def selected_codes(self) -> Optional[frozenset]:
        """The codes that report and fix; None when every rule walked does."""
        return None if self.analysis is None else frozenset(r.code for r in self.rules)

    @cached_property
    def walked(self) -> "RuleSet":
        """The rules whose visitors walk a file: the analysis, selected or not."""
        if self.analysis is None:
            return self
        walked = RuleSet(self.analysis, self.options, parent=self)
        selected = _ids(self.rules)
        walked.followers = frozenset(r.code for r in self.analysis if not r.default and id(r) not in selected)
        return walked

    def _active(self, rule: Rule) -> bool:
        return rule.mode is None or rule.mode == self.options.mode

    def fix_enabled(self, rule: Rule) -> bool:
        return self.options.fix_enabled(rule)

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
    def python_rules(self) -> "RuleSet":
        """The rules whose kind reads Python (those of the kinds that read
        shell scripts, YAML or JSON never act on Python code)."""
        chosen = [rule for rule in self.rules if screening(rule).reads_python]
        if len(chosen) == len(self.rules) and self.analysis is None:
            return self
        analysis = None if self.analysis is None else [r for r in self.analysis if screening(r).reads_python]
        if analysis is not None:
            return RuleSet(chosen, self.options, analysis, parent=self)
        return self._subset(chosen) or RuleSet([], self.options, parent=self)

    @cached_property
    def trigger_index(self) -> TriggerIndex:
        return TriggerIndex((rule, list(screening(rule).triggers) or None) for rule in self.rules)

    @cached_property
    def comment_trigger_index(self) -> Optional[TriggerIndex]:
        """The triggers of the rules that read comments; None if there are none."""
        if not self._comment_rules:
            return None
        reading = _ids(self._comment_rules)
        return TriggerIndex(e for e in self.trigger_index.entries if id(e[0]) in reading)

    @cached_property
    def unplaced_trigger_index(self) -> TriggerIndex:
        """The triggers of the rules whose kind does not tell where they could
        act in a file (see ``places``)."""
        return TriggerIndex(e for e in self.trigger_index.entries if not screening(e[0]).placed)

    def places(self, view: CodeView) -> list[tuple[int, int]]:
        """The lines (first, last) where the rules whose kind tells it could
        act in the file of ``view`` (see ``Kind.places``)."""
        return [
            span for rule in self.rules if screening(rule).placed for span in get_kind(rule.kind).places(rule, view)
        ]

    @cached_property
    def context_index(self) -> TriggerIndex:
        """What rules consult away from where they report (see ``Kind.context``)."""
        return TriggerIndex((rule, list(screening(rule).context) or None) for rule in self.rules)

    def reads(self, file_type: str) -> bool:
        """Whether a selected rule reads files of ``file_type`` (Python: always)."""
        if file_type in ("python", "notebook"):
            return True
        return file_type in self._document_types

    @cached_property
    def _document_types(self) -> frozenset:
        return frozenset(t for r in self.rules for t in screening(r).document_types)

    def reporting_only(self) -> "RuleSet":
        """The same rules, with every fix switched off (build scripts are
        checked, never rewritten: installing the project must not need Gaudi)."""
        import dataclasses

        return RuleSet(self.rules, dataclasses.replace(self.options, fixes=False), self.analysis, parent=self)

    @cached_property
    def _comment_rules(self) -> list[Rule]:
        return [rule for rule in self.rules if screening(rule).reads_comments]

    def for_source(self, source: bytes, shapes: bool = True) -> Optional["RuleSet"]:
        """The rules that could act on ``source``, judged from its raw bytes;
        None when none could (the file is then never parsed).

        A file that mentions `no_grad` but no CUDA API is walked by one rule's
        visitor, not by all of them. Rules without triggers (imports added as a
        consequence of other fixes) ride along with the others. ``shapes``:
        False for bytes not laid out as Python (see ``TriggerIndex.matching``).
        """
        return self._subset(self._opened_by(self.trigger_index.matching(source, shapes)))

    def for_code(self, source: bytes, view: Optional[CodeView] = None) -> Optional["RuleSet"]:
        """Like ``for_source``, but judged from the code alone: comments and
        docstrings (which no rule reads) are blanked out first, and kinds may
        look at the standard parser's tree, which is several times faster to
        build than the full one. ``view``: the file's CodeView, if already made.
        The triggers' patterns are not asked again: each stands for its kind's
        screen, which asks more.
        """
        view = view or code_view(source)
        if view is None:
            return self
        index = self.trigger_index
        # The patterns were asked of the file's bytes (``for_source``); the
        # kinds' screens ask more of its tree.
        chosen = index.matching(view.text, shapes=False)
        chosen = self._opened_by([r for r in chosen if not index.has_triggers(r) or get_kind(r.kind).screen(r, view)])
        if self._comment_rules:
            in_source = _ids(self.comment_trigger_index.matching(source))
            picked = _ids(chosen)
            kept = _ids(r for r in self._comment_rules if id(r) not in picked and id(r) in in_source)
            chosen = [r for r in self.rules if id(r) in picked or id(r) in kept] if kept else chosen
        return self._subset(chosen)

    def _opened_by(self, chosen: list[Rule]) -> list[Rule]:
        """``chosen``, or nothing when no rule in it that opens files matched.

        Where only opt-in rules matched, they walk with the rules that add
        imports, not with the others that ride along (HPU615), so that what
        those others say never depends on which opt-in rules are selected.
        """
        index = self.trigger_index
        opening = [r for r in chosen if index.has_triggers(r) and r.code not in self.followers]
        if not opening:
            return []
        if any(r.default for r in opening):
            return chosen
        return [r for r in chosen if index.has_triggers(r) or r.kind == "ensure-import"]

    def _subset(self, chosen: list[Rule]) -> Optional["RuleSet"]:
        if not chosen:
            return None
        if len(chosen) == len(self.rules):
            return self
        subset = RuleSet(chosen, self.options, parent=self, followers=self.followers)
        # By identity: comparing rules field by field costs more than the screen.
        picked = _ids(chosen)
        subset.__dict__["trigger_index"] = TriggerIndex(e for e in self.trigger_index.entries if id(e[0]) in picked)
        return subset


def _ids(rules) -> set[int]:
    return {id(rule) for rule in rules}

