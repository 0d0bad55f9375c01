"""A migration report for people: totals, effort, manual actions first, then per file."""

from __future__ import annotations

from collections import Counter

from hpu_port import __version__
from hpu_port.model import MODE_IMPLIES
from hpu_port.results import FileResult, modes_in

# How much work a manual finding of each category usually is.
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
}
EFFORT_ORDER = ["high", "medium", "low", "optional"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _summary(results: list[FileResult]) -> list[str]:
    findings = [f for r in results for f in r.findings]
    manual = [f for f in findings if f.needs_person]
    return [
        "## Summary",
        "",
        "| | count |",
        "|---|---|",
        f"| files scanned | {len(results)} |",
        *(f"| &nbsp;&nbsp;{kind} | {count} |" for kind, count in _by_type(results).items()),
        f"| files with findings | {sum(1 for r in results if r.findings)} |",
        f"| files that could not be read or parsed | {sum(1 for r in results if r.failed)} |",
        f"| findings | {len(findings)} |",
        f"| fixed by `hpu-port rewrite` | {len(findings) - len(manual)} |",
        f"| need a person | {len(manual)} |",
        "",
    ]


def _by_type(results: list[FileResult]) -> dict:
    counts: dict = {}
    for result in results:
        counts[result.file_type] = counts.get(result.file_type, 0) + 1
    return dict(sorted(counts.items())) if len(counts) > 1 else {}


def _modes(results: list[FileResult]) -> list[str]:
    modes = modes_in(results)
    lines = [
        f"**Mode: {mode}**{f' ({count} files)' if len(modes) > 1 else ''}: {MODE_IMPLIES[mode]}." for mode, count in modes.items()
    ]
    return lines + [""] if lines else []


def _categories(results: list[FileResult]) -> list[str]:
    total, manual = Counter(), Counter()
    for result in results:
        for finding in result.findings:
            total[finding.category] += 1
            if finding.needs_person:
                manual[finding.category] += 1
    if not total:
        return []
    lines = ["## By category", "", "| category | findings | need a person | effort per manual item |", "|---|---|---|---|"]
    for category in sorted(total, key=lambda c: (EFFORT_ORDER.index(EFFORT.get(c, "low")), c)):
        lines.append(f"| {category} | {total[category]} | {manual[category]} | {EFFORT.get(category, 'low')} |")
    effort = Counter(EFFORT.get(c, "low") for r in results for f in r.findings if f.needs_person for c in [f.category])
    lines += ["", "Manual effort: " + ", ".join(f"{effort[e]} {e}" for e in EFFORT_ORDER if effort[e]) + "." if effort else "No manual work.", ""]
    return lines


def _table(rows) -> list[str]:
    lines = ["| line | code | what to do |", "|---|---|---|"]
    lines += [f"| {f.line} | {f.code} | {_cell(f.message)} |" for f in rows]
    return lines + [""]


def _per_file(results: list[FileResult], manual: bool) -> list[str]:
    lines: list[str] = []
    for result in sorted(results, key=lambda r: r.path):
        rows = [f for f in result.findings if f.needs_person == manual]
        if rows:
            lines += [f"### `{result.path}`", ""] + _table(rows)
    return lines


def render_markdown(results: list[FileResult], rules=()) -> str:
    lines = [f"# Migration report (hpu-port {__version__})", ""]
    lines += _modes(results) + _summary(results) + _categories(results)
    failed = [r for r in results if r.failed]
    if failed:
        lines += ["## Files not processed", ""] + [f"- `{r.path}`: {_cell(r.error)}" for r in failed] + [""]
    manual = _per_file(results, manual=True)
    lines += ["## Manual actions", ""] + (manual or ["None.", ""])
    automatic = _per_file(results, manual=False)
    lines += ["## Changes `hpu-port rewrite` makes", ""] + (automatic or ["None.", ""])
    by_code = Counter(f.code for r in results for f in r.findings)
    if by_code:
        lines += ["## Findings per rule", "", "| code | findings |", "|---|---|"]
        lines += [f"| {code} | {count} |" for code, count in sorted(by_code.items())] + [""]
    return "\n".join(lines)
