"""Load and validate the declarative rule files (TOML) into Rule objects.

A rule file holds one rule: common keys (code, name, summary, kind, fix, ...),
the keys its kind declares, and examples. Every problem is reported as
``file: rule CODE: problem`` and stops the run before any file is touched.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Iterable, Optional

from hpu_port import rule_cache
from hpu_port._compat import toml
from hpu_port.device import evidence
from hpu_port.device.evidence import bundled_rules_dir
from hpu_port.kinds import derive_screening, get_kind, kind_names
from hpu_port.model import FIX_SAFETIES, MODES, OPTIONS, Example, ProjectHold, Rule

CODE_PATTERN = re.compile(r"^[A-Z]{2,8}[0-9]{3,4}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class RuleFileError(Exception):
    """A rule file that cannot be used; the message is one line, ready to print."""


# Keys every rule may carry, with their types and whether they are required.
COMMON_KEYS: dict[str, tuple[type, bool]] = {
    "code": (str, True),
    "name": (str, True),
    "summary": (str, True),
    "why": (str, True),
    "kind": (str, True),
    "fix": (str, True),
    "default": (bool, True),
    "category": (str, True),
    "message": (str, True),
    "hpu-runtime": (bool, False),
    "mode": (str, False),
    "option": (str, False),
    "references": (list, False),
    "covers": (list, False),
    "remove-imports-of": (list, False),
    "triggers": (list, False),
    "held-when-project-has": (dict, False),
    "items": (str, False),
    "examples": (dict, True),
}


# How the plan counts a rule's findings as root causes (see planning.file_items).
ITEM_SCOPES = ("per-line", "per-file", "per-setting", "per-repository")


def rule_files(paths: Iterable[Path]) -> list[Path]:
    """Expand directories to their ``*.toml`` files, sorted for a stable order.
    A file whose name starts with `_` is data the rules share (the device
    evidence, ``rules/_device.toml``), not a rule."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.glob("*.toml") if not p.name.startswith("_")))
        else:
            found.append(path)
    return found


def load_rules(extra: Iterable[Path] = (), cache_dir: Optional[Path] = None) -> list[Rule]:
    """Load the bundled rules plus the user's rule files, validated, sorted by code.

    With ``cache_dir``, loaded rules are kept there, keyed by the files' sizes
    and times and by hpu-port's own code: reading and validating some eighty
    TOML files is most of what a run on files with nothing to port costs.
    """
    paths = rule_files([bundled_rules_dir(), *extra])
    if cache_dir is None:
        return _load_all(paths)
    # The device evidence is part of what loaded rules hold (see ``_load_all``).
    key = rule_cache.key([*paths, evidence.bundled_file()])
    cached = rule_cache.read(cache_dir, key)
    if cached is not None:
        return cached
    rules = _load_all(paths)
    rule_cache.write(cache_dir, key, rules)
    return rules


def _load_all(paths: list[Path]) -> list[Rule]:
    stamp = _device_evidence_stamp()
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path in paths:
        rule = load_rule_file(path)
        if rule.code in seen:
            raise RuleFileError(
                f"{path}: rule {rule.code}: code already used by {seen[rule.code]}"
            )
        seen[rule.code] = str(path)
        rule.raw_params[DEVICE_EVIDENCE] = stamp
        rules.append(rule)
    return sorted(rules, key=lambda r: r.code)


# The key under which each loaded rule records the device evidence it is
# ported with: the result cache keys on a rule's raw parameters, so a changed
# ``rules/_device.toml`` is a new entry there too.
DEVICE_EVIDENCE = "device-evidence"


def _device_evidence_stamp() -> str:
    """The bundled device evidence's digest; its problems stop the run, as a broken rule file's do."""
    try:
        return evidence.bundled().digest()
    except evidence.EvidenceError as exc:
        raise RuleFileError(str(exc)) from None


def load_rule_file(path: Path) -> Rule:
    tomllib = toml()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RuleFileError(f"{path}: rule ?: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleFileError(f"{path}: rule ?: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RuleFileError(f"{path}: rule ?: invalid TOML: {exc}") from None
    return parse_rule(data, str(path))


def parse_rule(data: dict, source: str) -> Rule:
    """Validate one rule table; raise RuleFileError naming the file, code and problem."""
    code = data.get("code") if isinstance(data.get("code"), str) else "?"

    def fail(problem: str) -> RuleFileError:
        return RuleFileError(f"{source}: rule {code}: {problem}")

    kind_name = data.get("kind")
    if not isinstance(kind_name, str):
        raise fail("missing key 'kind'" if kind_name is None else "'kind' must be a string")
    kind = get_kind(kind_name)
    if kind is None:
        raise fail(f"unknown kind {kind_name!r} (known: {', '.join(kind_names())})")
    common = _check_common_keys(data, kind.param_keys(), fail)
    try:
        params = kind.parse_params({k: v for k, v in data.items() if k not in COMMON_KEYS})
    except ValueError as exc:
        raise fail(str(exc)) from None
    problem = kind.check_message(common["message"])
    if problem:
        raise fail(problem)
    examples = _parse_examples(common["examples"], fail)
    project_hold = _project_hold(common.get("held-when-project-has"), fail)
    items = common.get("items", "per-line")
    if items not in ITEM_SCOPES:
        raise fail(f"'items' is one of {', '.join(ITEM_SCOPES)}, not {items!r}")
    _check_fix_matches_examples(common["fix"], examples, fail)
    rule = Rule(
        code=common["code"],
        name=common["name"],
        summary=common["summary"].strip(),
        why=common["why"].strip(),
        kind=kind_name,
        fix=common["fix"],
        default=common["default"],
        category=common["category"],
        message=common["message"].strip(),
        params=params,
        examples=examples,
        source=source,
        hpu_runtime=common.get("hpu-runtime", False),
        mode=common.get("mode"),
        option=common.get("option"),
        references=tuple(common.get("references", ())),
        covers=tuple(common.get("covers", ())),
        remove_imports_of=tuple(common.get("remove-imports-of", ())),
        triggers=tuple(common.get("triggers", ())),
        project_hold=project_hold,
        items=items,
        raw_params={k: v for k, v in data.items() if k not in COMMON_KEYS},
    )
    try:
        return dataclasses.replace(rule, screening=derive_screening(rule))
    except ValueError as exc:
        raise fail(str(exc)) from None


def _project_hold(table: Optional[dict], fail) -> Optional[ProjectHold]:
    """``[held-when-project-has]``: ``needle`` (plain text a file must hold),
    ``pattern`` (a regular expression searched in those files) and ``why``
    (the words a held finding adds; ``{where}`` is the first match's place)."""
    if table is None:
        return None
    unknown = set(table) - {"needle", "pattern", "why"}
    missing = {"needle", "pattern", "why"} - set(table)
    if unknown or missing:
        raise fail(f"'held-when-project-has' takes needle, pattern and why ({'unknown ' + sorted(unknown)[0] if unknown else 'missing ' + sorted(missing)[0]})")
    if not all(isinstance(value, str) and value for value in table.values()):
        raise fail("'held-when-project-has' values must be non-empty strings")
    try:
        re.compile(table["pattern"])
    except re.error as exc:
        raise fail(f"'held-when-project-has.pattern': {exc}") from None
    return ProjectHold(table["needle"], table["pattern"], table["why"])


def _check_common_keys(data: dict, kind_keys: set[str], fail) -> dict:
    for key in data:
        if key not in COMMON_KEYS and key not in kind_keys:
            raise fail(f"unknown key {key!r}")
    for key, (expected, required) in COMMON_KEYS.items():
        if key not in data:
            if required:
                raise fail(f"missing key {key!r}")
            continue
        if not isinstance(data[key], expected):
            raise fail(f"{key!r} must be a {expected.__name__}")
    if not CODE_PATTERN.match(data["code"]):
        raise fail("'code' must look like HPU123 (capital letters, then 3 or 4 digits)")
    if not NAME_PATTERN.match(data["name"]):
        raise fail("'name' must be kebab-case, e.g. cuda-device-string")
    if data["fix"] not in FIX_SAFETIES:
        raise fail(f"'fix' must be one of {', '.join(FIX_SAFETIES)}")
    if data.get("mode") is not None and data["mode"] not in MODES:
        raise fail(f"'mode' must be one of {', '.join(MODES)}")
    if data.get("option") is not None and data["option"] not in OPTIONS:
        raise fail(f"'option' must be one of {', '.join(OPTIONS)}")
    return data


def _parse_examples(table: dict, fail) -> tuple[Example, ...]:
    for key in table:
        if key not in ("invalid", "valid"):
            raise fail(f"unknown key 'examples.{key}' (use examples.invalid / examples.valid)")
    examples: list[Example] = []
    for index, item in enumerate(table.get("invalid", []), 1):
        where = f"examples.invalid[{index}]"
        _check_example_keys(item, {"before", "after", "options", "select", "file", "toolkit-log"}, {"before"}, where, fail)
        examples.append(
            Example(
                item["before"],
                item.get("after"),
                False,
                item.get("options", {}),
                tuple(item.get("select", ())),
                item.get("file"),
                toolkit_log=item.get("toolkit-log"),
            )
        )
    for index, item in enumerate(table.get("valid", []), 1):
        where = f"examples.valid[{index}]"
        _check_example_keys(item, {"code", "options", "select", "file", "toolkit-log"}, {"code"}, where, fail)
        examples.append(
            Example(item["code"], None, True, item.get("options", {}), tuple(item.get("select", ())), item.get("file"),
                    toolkit_log=item.get("toolkit-log"))
        )
    if not any(not e.valid for e in examples):
        raise fail("needs at least one example in [[examples.invalid]]")
    if not any(e.valid for e in examples):
        raise fail("needs at least one example in [[examples.valid]] (code that stays unchanged)")
    return tuple(examples)


def _check_example_keys(item, allowed, required, where, fail) -> None:
    if not isinstance(item, dict):
        raise fail(f"{where} must be a table")
    for key in item:
        if key not in allowed:
            raise fail(f"unknown key '{where}.{key}'")
    for key in required:
        if not isinstance(item.get(key), str):
            raise fail(f"'{where}.{key}' is missing or not a string")
    if "file" in item and not isinstance(item["file"], str):
        raise fail(f"'{where}.file' must be a file name")
    for key in ("after", "toolkit-log"):
        if key in item and not isinstance(item[key], str):
            raise fail(f"'{where}.{key}' must be a string")
    if not isinstance(item.get("options", {}), dict):
        raise fail(f"'{where}.options' must be a table")
    select = item.get("select", [])
    if not isinstance(select, list) or not all(isinstance(c, str) for c in select):
        raise fail(f"'{where}.select' must be a list of rule codes")


def _check_fix_matches_examples(fix: str, examples: tuple[Example, ...], fail) -> None:
    # Having a fix and showing it are the same fact: a fixable rule must show its
    # output, and a report-only rule must not pretend to rewrite anything
    # (an example that selects other rules shows what they rewrite).
    has_after = any(e.after is not None for e in examples)
    if fix != "none" and not has_after:
        raise fail(f"fix is {fix!r} but no invalid example has an 'after'")
    if fix == "none" and any(e.after is not None and not e.select for e in examples):
        raise fail("fix is 'none' (report only) but an example has an 'after'")


def matches_selector(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def select_rules(
    rules: list[Rule], select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> list[Rule]:
    """Rules on by default, or the ``select``ed ones, minus ``ignore``d ones.

    Selectors are codes or code prefixes (``HPU1``) or ``ALL``; a selector that
    names no rule is an error, as a typo would otherwise silently select nothing.
    """
    select, ignore = list(select), list(ignore)
    for selector in select + ignore:
        if not any(matches_selector(rule.code, selector) for rule in rules):
            raise RuleFileError(f"unknown rule code or prefix {selector!r}")
    if select:
        chosen = [r for r in rules if any(matches_selector(r.code, s) for s in select)]
    else:
        chosen = [r for r in rules if r.default]
    return [r for r in chosen if not any(matches_selector(r.code, s) for s in ignore)]
