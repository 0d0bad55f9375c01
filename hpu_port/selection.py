"""Which rules each file gets: its configuration merged with the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from hpu_port.config import ConfigError, settings_for
from hpu_port.model import Options, is_advice
from hpu_port.rules import load_rules, matches_selector, select_rules
from hpu_port.settings import RuleSet
from hpu_port.suppressions import closest_code


class RuleSetResolver:
    """Each file's RuleSet, from its configuration merged with the command line.

    Rule files are loaded once per distinct list of files, and a RuleSet is
    built once per distinct configuration.
    """

    def __init__(self, overrides, command: str = "check", rules_cache: Optional[Path] = None) -> None:
        self.overrides = overrides
        # Where loaded rule files are kept between runs (None: nowhere).
        self.rules_cache = rules_cache
        # `rewrite` leaves advice alone unless it is asked for by code.
        self.command = command
        # Advice rules some selector names by code: their findings count for
        # the exit status; other advice is only information.
        self.asked_advice: set[str] = set()
        self._rules: dict = {}
        self._rulesets: dict = {}

    def _check_selectors(self, settings, rules) -> None:
        """Every code or prefix that names no rule, each with where it was
        given (the configuration file or the command line) and the nearest code."""
        codes = sorted(rule.code for rule in rules)
        problems = []
        fields = [("select", settings.select), ("ignore", settings.ignore), ("extend-select", settings.extend_select),
                  ("per-file-ignores", [c for _, group in settings.per_file_ignores for c in group])]
        for key, selectors in fields:
            given = set(getattr(self.overrides, key.replace("-", "_"), ()) or ())
            for selector in selectors:
                if any(matches_selector(code, selector) for code in codes):
                    continue
                origin = f"--{key}" if selector in given else f"{settings.source}: [tool.hpu-port] '{key}'"
                close = closest_code(selector, codes)
                hint = f"; did you mean {close}?" if close else ""
                problems.append(f"{origin}: unknown rule code or prefix {selector!r}{hint}")
        if problems:
            raise ConfigError(problems)

    def known_codes(self) -> set[str]:
        """The codes of every rule loaded so far, selected or not."""
        return {rule.code for rules in self._rules.values() for rule in rules}

    def settings(self, path):
        return self.overrides.apply(settings_for(path))

    def __call__(self, path) -> Optional[RuleSet]:
        settings = self.settings(path)
        if settings.excluded(path):
            return None
        key = (settings, settings.ignored_codes(path))
        if key not in self._rulesets:
            self._rulesets[key] = self._build(settings, key[1])
        return self._rulesets[key]

    def _build(self, settings, extra_ignores) -> RuleSet:
        if settings.rules not in self._rules:
            self._rules[settings.rules] = load_rules([Path(p) for p in settings.rules], self.rules_cache)
        rules = self._rules[settings.rules]
        self._check_selectors(settings, rules)
        chosen = select_rules(rules, settings.select, settings.ignore + extra_ignores)
        extended = select_rules(rules, settings.extend_select or ["ALL"], settings.ignore + extra_ignores)
        if settings.extend_select:
            chosen += [r for r in extended if r not in chosen and any(matches_selector(r.code, s) for s in settings.extend_select)]
        asked = [s for s in (*settings.select, *settings.extend_select) if s != "ALL"]
        named = {r.code for r in chosen if is_advice(r) and any(matches_selector(r.code, s) for s in asked)}
        self.asked_advice |= named
        if self.command == "rewrite":
            chosen = [r for r in chosen if not is_advice(r) or r.code in named]
        report_only = frozenset(r.code for r in chosen if is_advice(r) and r.code not in named)
        options = Options(
            mode=settings.mode,
            fp16_to_bf16=settings.fp16_to_bf16,
            unsafe_fixes=settings.unsafe_fixes,
            max_file_size=int(settings.max_file_size_mib * 2**20),
            include_generated=settings.include_generated,
            port_shared_code=settings.port_shared_code,
            device=settings.device,
            import_style=settings.import_style,
            report_only=report_only,
        )
        return RuleSet(sorted(chosen, key=lambda r: r.code), options, analysis=rules)
