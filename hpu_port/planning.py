"""What a migration lead plans with: root causes, blockers and advice, and a
per-directory rollup sorted by the manual effort left.

A *root cause* (an "item") is what a person fixes in one go. Findings are one
item when they start on the same line of the same file (and notebook cell),
are of the same severity (blocker, advice, or a line to review), and are alike in whether
`rewrite` fixes them. So `import triton.language as tl`, reported once for the
import and once for the module it names, is one item; a `.item()` and the
`print` around it on one line are one item of advice; a multi-line call with a
CUDA device string on its second line and a float64 dtype on its third is two
items, and so is a training loop reported as a whole (it starts on its `for`
line) and a host sync inside it. Starting lines, not overlapping spans: a
finding about a whole loop or function would otherwise swallow every other
finding inside it. A file of CUDA kernels is one item, and so are a file's
findings of a rule that says `items = "per-file"` (the NCCL variables a
launch script sets are removed in one go), and so are the fixes held in a
module that serves several devices because its code runs on all of them
(kept reason `shared-code`: the module's choice of device is made once); a
rule that says `items = "per-setting"` makes one item of the same setting in
every file (`flash_attention: true` in each config: one decision), one that says
`items = "per-repository"` one item of all its findings (the NCCL tuning
variables of every launch script are removed in one go), and what a person
must do in a test tree (make the suite run on Gaudi) or in a vendored project
is one item too.

Nothing here prints or reads files; the report formats use it.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from hpu_port import filetypes
from hpu_port.results import SEVERITIES, FileResult, Finding, all_findings

# How much work a manual item of each category usually is.
EFFORT = {
    "unsupported": "high",
    "libraries": "medium",
    "distributed": "medium",
    "precision": "medium",
    "lazy-mode": "low",
    "device": "low",
    "memory": "low",
    "graphs": "medium",
    "environment": "low",
    "imports": "low",
    "advice": "optional",
    "review": "low",
    "runtime": "low",
}
EFFORT_ORDER = ["high", "medium", "low", "optional"]
# Points per manual item, to sort directories by the work left: a rough
# ratio of person-hours, not a measurement.
EFFORT_POINTS = {"high": 5, "medium": 3, "low": 1, "optional": 0}


def effort_of(category: str) -> str:
    return EFFORT.get(category, "low")


@dataclass(frozen=True)
class Item:
    """One root cause: the findings a person (or `rewrite`) deals with at once."""

    path: str
    findings: tuple[Finding, ...]

    @property
    def lead(self) -> Finding:
        """The finding that names the item: the first one of the costliest category."""
        return min(self.findings, key=lambda f: (EFFORT_ORDER.index(effort_of(f.category)), f.sort_key()))

    @property
    def advice(self) -> bool:
        return self.findings[0].advice

    @property
    def severity(self) -> str:
        return self.findings[0].severity

    @property
    def needs_person(self) -> bool:
        return self.findings[0].needs_person

    @property
    def effort(self) -> str:
        return effort_of(self.lead.category)

    @property
    def only_review(self) -> bool:
        """Lines that still mention CUDA (a name such as `use_cuda`), to look
        at: a person checks them, but they are no blocker and no work package."""
        return self.severity == "review"

    @property
    def line(self) -> int:
        return min(f.line for f in self.findings)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(sorted({f.code for f in self.findings}))


def _item_key(finding: Finding, first_of_code: dict) -> tuple:
    kind = (SEVERITIES.index(finding.severity), finding.needs_person)
    if finding.item_scope in ("per-file", "per-repository"):
        return (*first_of_code[finding.code], *kind, finding.code)
    if finding.item_scope == "per-setting":
        # One item per setting (its message), however often the file makes it.
        setting = without_numbers(finding.message)
        return (*first_of_code[(finding.code, setting)], *kind, f"{finding.code} {setting}")
    if finding.kept == "shared-code":
        # A module that serves several devices gets its choice of device made
        # once (an HPU arm where its shared code calls CUDA): one item, on
        # the first line that needs it.
        return (*first_of_code["shared-code"], *kind, "shared-code")
    if finding.kept == "nvidia-only" and finding.kept_unit_line is None and finding.kept_evidence:
        # Fixes held for the same NVIDIA-only code (the custom ops a module
        # registers for CUDA) are dealt with together: keep it for NVIDIA,
        # or write Gaudi's version.
        return (*first_of_code[("nvidia-only", finding.kept_evidence)], *kind, f"nvidia-only {finding.kept_evidence}")
    # A fix held by a unit kept for another device is part of that unit's
    # item: the unit is dealt with once, not on each of its lines.
    line = finding.kept_unit_line if finding.kept_unit_line is not None else finding.line
    return (finding.cell or 0, line, *kind, "")


def file_items(path: str, findings: Iterable[Finding], kept_whole: bool = False) -> list[Item]:
    """The root causes of one file's findings, in the order of their line
    (a kernel source's blockers are one item, and so are those of a module
    kept whole for NVIDIA: ``kept_whole``)."""
    groups: dict[tuple, list[Finding]] = {}
    # Replacing a file of CUDA kernels, or a module that only loads where
    # NVIDIA's software is, is one piece of work (a PyTorch or TPC version
    # of its kernels), however many of its lines say CUDA.
    whole_file = kept_whole or filetypes.by_name(path) == filetypes.CUDA
    ordered = sorted(findings, key=lambda f: f.sort_key())
    first_of_code: dict = {}
    for finding in ordered:
        first_of_code.setdefault(finding.code, (finding.cell or 0, finding.line))
        if finding.kept == "shared-code":
            first_of_code.setdefault("shared-code", (finding.cell or 0, finding.line))
        if finding.kept == "nvidia-only":
            first_of_code.setdefault(("nvidia-only", finding.kept_evidence), (finding.cell or 0, finding.line))
        first_of_code.setdefault((finding.code, without_numbers(finding.message)), (finding.cell or 0, finding.line))
    for finding in ordered:
        key = (0, 0, SEVERITIES.index(finding.severity), finding.needs_person, "") if whole_file else _item_key(finding, first_of_code)
        groups.setdefault(key, []).append(finding)
    return [Item(path, tuple(groups[key])) for key in sorted(groups)]


def items_of(results: Iterable[FileResult]) -> list[Item]:
    return [item for _, items in _items_by_file(results)[0] for item in items]


def _items_by_file(results: Iterable[FileResult]) -> tuple[list[tuple[FileResult, list[Item]]], dict, dict]:
    """Each result with its items, and the items folded into another: a
    setting that many files make alike (`items = "per-setting"`:
    `flash_attention: true` in every config), a rule's findings in the whole
    tree (`items = "per-repository"`), what a person must do in a test
    tree (make it run on Gaudi), and what a person must do in a
    vendored project (``vendored_root``), are one item each, counted in the
    first file (folded: id of a finding -> that item; spread: id of an item
    -> the other files whose items were folded into it)."""
    first: dict = {}
    folded: dict = {}
    spread: dict = {}
    by_file = []
    for result in sorted(results, key=lambda r: r.path):
        items = []
        for item in file_items(result.path, result.findings, kept_whole(result)):
            setting = _setting_of(item)
            if setting in first:
                folded.update((id(f), first[setting]) for f in item.findings)
                spread.setdefault(id(first[setting]), set()).add(result.path)
                continue
            if setting is not None:
                first[setting] = item
            items.append(item)
        by_file.append((result, items))
    return by_file, folded, spread


def kept_whole(result: FileResult) -> bool:
    """Whether the whole module is kept for NVIDIA: a kept region from its
    first line past its last finding (it imports Triton or a CUDA extension
    at its top: nothing in it is ported)."""
    last = max((f.line for f in result.findings), default=0)
    return any(action == "keep" and first <= 1 and end >= last for action, first, end in result.regions)


# Folders that hold other projects' code, copied in: what is left to do in
# one of their projects is one item (replace or drop that dependency).
VENDOR_FOLDERS = frozenset({
    "third_party", "third-party", "thirdparty", "3rdparty", "vendor", "vendored", "_vendor", "external",
    "externals", "extern", "deps", "dependencies", "submodules",
})


def vendored_root(path: str):
    """The vendored project ``path`` is in (`deps/AutoGPTQ` for
    `deps/AutoGPTQ/auto_gptq/x.py`), or None."""
    parts = path.replace(os.sep, "/").split("/")
    for index, part in enumerate(parts[:-2]):
        if part.lower() in VENDOR_FOLDERS:
            return "/".join(parts[: index + 2])
    return None


def _setting_of(item: Item):
    lead = item.findings[0]
    manual_blocker = item.needs_person and item.severity == "blocker"
    root = vendored_root(item.path) if manual_blocker else None
    if root is not None:
        return "vendored", root
    if manual_blocker and in_tests(item.path):
        # A person makes a test suite run on Gaudi in one piece of work (a
        # device fixture, a marker, the dtypes the cases use, the tests of
        # NVIDIA-only features to skip): one item for the test tree.
        return "tests", tree_of_tests(item.path)
    if lead.item_scope == "per-repository":
        return lead.code, item.severity, item.needs_person
    if lead.item_scope != "per-setting":
        return None
    return lead.code, item.severity, item.needs_person, without_numbers(lead.message)


def in_tests(path: str) -> bool:
    """A test module, told from the path as the run names it (a folder above
    the tree, such as a checkout under `/tmp/test`, says nothing)."""
    parts = path.replace(os.sep, "/").split("/")
    name = parts[-1]
    return (
        "tests" in parts[:-1] or "test" in parts[:-1] or name.startswith("test_") or name.endswith("_test.py")
        or name == "conftest.py"
    )


def tree_of_tests(path: str) -> str:
    """The test tree ``path`` is in: its first `tests`/`test` folder, else its folder."""
    parts = path.replace(os.sep, "/").split("/")[:-1]
    for index, part in enumerate(parts):
        if part in ("tests", "test"):
            return "/".join(parts[: index + 1])
    return "/".join(parts) or "."


def without_numbers(message: str) -> str:
    """A message without its numbers: the same setting wherever it is made,
    the same finding whatever other line it names."""
    return re.sub(r"\d+", "#", message)


def directory_of(path: str) -> str:
    return os.path.dirname(path) or "."


@dataclass
class Tally:
    """Counts of findings and of items: blockers, advice and lines to review apart."""

    files: int = 0
    files_with_findings: int = 0
    failed: int = 0
    findings: Counter = field(default_factory=Counter)  # "blocker"/"advice"/"review" -> findings
    items: Counter = field(default_factory=Counter)  # "blocker"/"advice"/"review" -> items
    fixed: Counter = field(default_factory=Counter)  # items rewrite fixes
    manual: Counter = field(default_factory=Counter)  # items that need a person
    effort: Counter = field(default_factory=Counter)  # effort level -> manual blocker items

    def add(self, result: FileResult, items: list[Item]) -> None:
        self.files += 1
        self.files_with_findings += bool(result.findings)
        self.failed += result.failed
        for finding in result.findings:
            self.findings[finding.severity] += 1
        for item in items:
            severity = item.severity
            self.items[severity] += 1
            if item.needs_person:
                self.manual[severity] += 1
                if severity == "blocker":
                    self.effort[item.effort] += 1
            else:
                self.fixed[severity] += 1

    @property
    def effort_points(self) -> int:
        return sum(EFFORT_POINTS[level] * count for level, count in self.effort.items())

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "files_with_findings": self.files_with_findings,
            "files_failed": self.failed,
            "findings": _split(self.findings),
            "items": _split(self.items),
            "fixed_by_rewrite": _split(self.fixed),
            "need_a_person": _split(self.manual),
            "manual_effort": {level: self.effort[level] for level in EFFORT_ORDER if level != "optional"},
            "effort_points": self.effort_points,
        }


def _split(counter: Counter) -> dict:
    return {"blockers": counter["blocker"], "advice": counter["advice"], "review": counter["review"]}


@dataclass
class Plan:
    total: Tally
    directories: list[tuple[str, Tally]]  # most manual effort first
    items: list[Item]
    # id of an item -> the other files whose findings it stands for.
    spread: dict = field(default_factory=dict)

    def files_of(self, item: Item) -> set[str]:
        """Every file an item's work is in (a setting made in many configs)."""
        return {item.path, *self.spread.get(id(item), ())}


def make_plan(results: list[FileResult]) -> Plan:
    """Totals and the per-directory rollup, directories sorted by the manual
    effort left (then by manual blockers, then by name)."""
    total = Tally()
    directories: dict[str, Tally] = {}
    every_item: list[Item] = []
    by_file, _, spread = _items_by_file(results)
    for result, items in by_file:
        every_item += items
        total.add(result, items)
        directories.setdefault(directory_of(result.path), Tally()).add(result, items)
    ordered = sorted(
        directories.items(), key=lambda pair: (-pair[1].effort_points, -pair[1].manual["blocker"], pair[0])
    )
    return Plan(total, ordered, every_item, spread)


@dataclass(frozen=True)
class WorkPackage:
    """The manual blocker items one rule leads: a piece of work to plan."""

    code: str
    items: int
    effort: str
    files: int

    @property
    def points(self) -> int:
        return EFFORT_POINTS[self.effort] * self.items


def work_packages(plan: Plan) -> list[WorkPackage]:
    """Manual blocker items grouped by the rule that names them, the most
    work first; lines that only mention CUDA are no work package."""
    grouped: dict[str, list[Item]] = {}
    for item in plan.items:
        if item.needs_person and item.severity == "blocker":
            grouped.setdefault(item.lead.code, []).append(item)
    packages = [
        # The costliest effort among the package's items sets its level.
        WorkPackage(
            code, len(items), min((i.effort for i in items), key=EFFORT_ORDER.index),
            len(set().union(*(plan.files_of(i) for i in items))),
        )
        for code, items in grouped.items()
    ]
    return sorted(packages, key=lambda p: (-p.points, -p.items, p.code))


def has_work(tally: Tally) -> bool:
    """Whether a directory's tally holds any item (blocker or advice)."""
    return bool(sum(tally.items.values()))


def rule_names(rules) -> dict[str, str]:
    return {rule.code: rule.name for rule in rules}


def numbered_findings(results: Iterable[FileResult]) -> list[tuple[str, Finding, int]]:
    """Every finding with the number (from 1) of its root cause, in report order."""
    results = list(results)
    by_file, folded, _ = _items_by_file(results)
    items = [item for _, file_items_ in by_file for item in file_items_]
    number = {id(f): index for index, item in enumerate(items, 1) for f in item.findings}
    index_of = {id(item): index for index, item in enumerate(items, 1)}
    return [(path, f, number.get(id(f)) or index_of[id(folded[id(f)])]) for path, f in all_findings(results)]


def summary_line(results: list[FileResult], failed: int) -> str:
    """One line: findings, blockers apart from advice and lines to review, and the items (root causes) left."""
    total = make_plan(results).total
    blockers, advice = total.findings["blocker"], total.findings["advice"]
    fixable = sum(1 for r in results for f in r.findings if f.fixable and f.severity == "blocker")
    review = f", {plural(total.items['review'], 'line')} to review" if total.items["review"] else ""
    return (
        f"{plural(len(results), 'file')} scanned, {plural(sum(len(r.findings) for r in results), 'finding')}: "
        f"{plural(blockers, 'blocker')} ({fixable} fixable by rewrite; "
        f"{plural(total.manual['blocker'], 'root cause')} need a person), "
        f"{advice} advice ({plural(total.items['advice'], 'root cause')}){review}; {failed} failed"
    )


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def fixes_text(results: list[FileResult], verb: str, counted) -> list[str]:
    """``verb`` N findings, then per file the count of each rule's ``counted``
    findings (as ruff's `--show-fixes` lists them); nothing when there are none."""
    names = {rule.code: rule.name for result in results for rule in result.rules}
    lines, total = [], 0
    for result in sorted(results, key=lambda r: r.path):
        fixed = Counter(f.code for f in result.findings if counted(f))
        if fixed:
            total += sum(fixed.values())
            lines.append(f"- {result.path}:")
            lines += [f"    {count} \u00d7 {code} ({names.get(code, '')})" for code, count in sorted(fixed.items())]
    return [f"{verb} {plural(total, 'finding')}:", *lines] if total else []
