"""A migration report for people: totals (blockers apart from advice), the
directories with the most manual work first, then what needs a person per
file, the advice, and what `rewrite` changes."""

from __future__ import annotations

from collections import Counter
from typing import Optional

from hpu_port import __version__
from hpu_port.model import MODE_IMPLIES
from hpu_port.planning import EFFORT_ORDER, Item, Tally, effort_of, make_plan, rule_names
from hpu_port.results import FileResult, actions_summary, modes_in


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _by_type(results: list[FileResult]) -> str:
    counts = Counter(result.file_type for result in results)
    return f" ({', '.join(f'{kind} {n}' for kind, n in sorted(counts.items()))})" if len(counts) > 1 else ""


def _summary(total: Tally, results: list[FileResult]) -> list[str]:
    def row(label: str, counter: Counter) -> str:
        return f"| {label} | {counter['blocker']} | {counter['advice']} | {counter['review']} |"

    return [
        "## Summary",
        "",
        f"{total.files} file{'s' if total.files != 1 else ''} scanned{_by_type(results)}, "
        f"{total.files_with_findings} with findings, {total.failed} could not be read or parsed.",
        "",
        "| | blockers | advice | to review |",
        "|---|---|---|---|",
        row("findings", total.findings),
        row("items (root causes)", total.items),
        row("fixed by `hpu-port rewrite`", total.fixed),
        row("need a person", total.manual),
        "",
        f"Actions: {actions_summary(results)}.",
        "",
        "Blockers keep the code from running on Gaudi, or make it run wrong; advice is optional "
        "optimization; lines to review only mention CUDA (a name such as `use_cuda`). An item is one root cause: the findings of one kind that start on the same line "
        "of a file count once.",
        "",
    ]


def _effort_text(tally: Tally) -> str:
    parts = [f"{tally.effort[level]} {level}" for level in EFFORT_ORDER if tally.effort[level]]
    return ", ".join(parts) or "none"


def _modes(results: list[FileResult]) -> list[str]:
    modes = modes_in(results)
    lines = [
        f"**Mode: {mode}**{f' ({count} files)' if len(modes) > 1 else ''}: {MODE_IMPLIES[mode]}." for mode, count in modes.items()
    ]
    return lines + [""] if lines else []


def _directories(plan) -> list[str]:
    if not plan.directories:
        return []
    lines = [
        "## By directory (most manual work first)",
        "",
        "| directory | files | blockers: need a person | manual effort | blockers fixed by rewrite | advice items |",
        "|---|---|---|---|---|---|",
    ]
    for path, tally in plan.directories:
        lines.append(
            f"| `{_cell(path)}` | {tally.files} | {tally.manual['blocker']} | {_effort_text(tally)} "
            f"| {tally.fixed['blocker']} | {tally.items['advice']} |"
        )
    return lines + [""]


def _categories(items: list[Item]) -> list[str]:
    total, manual = Counter(), Counter()
    for item in items:
        total[item.lead.category] += 1
        manual[item.lead.category] += item.needs_person
    if not total:
        return []
    lines = ["## By category", "", "| category | items | need a person | effort per manual item |", "|---|---|---|---|"]
    for category in sorted(total, key=lambda c: (EFFORT_ORDER.index(effort_of(c)), c)):
        lines.append(f"| {category} | {total[category]} | {manual[category]} | {effort_of(category)} |")
    return lines + [""]


def _table(items: list[Item], names: dict) -> list[str]:
    lines = ["| line | code | rule | what to do |", "|---|---|---|---|"]
    for item in items:
        lead = item.lead
        others = [code for code in item.codes if code != lead.code]
        also = f" (also {', '.join(others)})" if others else ""
        place = f"cell {lead.cell}:{item.line}" if lead.cell is not None else str(item.line)
        lines.append(f"| {place} | {lead.code} | {names.get(lead.code, '')} | {_cell(lead.message)}{also}{_held(item)} |")
    return lines + [""]


def _held(item: Item) -> str:
    """The changes an item's unit holds, and why: one row for the unit."""
    held = [f for f in item.findings if f.kept]
    if not held:
        return ""
    reasons = ", ".join(sorted({f.kept for f in held}))
    numbers = sorted({f.line for f in held})
    lines = ("line " if len(numbers) == 1 else "lines ") + ", ".join(map(str, numbers))
    return _cell(f" (kept: {reasons}; changes held on {lines})")


def _per_file(items: list[Item], names: dict, wanted) -> list[str]:
    by_file: dict[str, list[Item]] = {}
    for item in items:
        if wanted(item):
            by_file.setdefault(item.path, []).append(item)
    lines: list[str] = []
    for path in sorted(by_file):
        lines += [f"### `{path}`", ""] + _table(by_file[path], names)
    return lines


def _toolkit(toolkit: Optional[dict]) -> list[str]:
    if toolkit is None:
        return []
    lines = [
        "## GPU Migration Toolkit log",
        "",
        f"{toolkit['sites']} intercepted call sites in {toolkit['log_files']} log files; "
        f"{toolkit['sites_in_scanned_files']} in the scanned files, of which the static port covers "
        f"{toolkit['covered_by_static_findings']} ({toolkit['added_findings']} added as findings); "
        f"{toolkit['unknown_lines']} log lines not understood.",
        "",
    ]
    for title, key in (("In installed libraries (not your code)", "library_sites"),
                       ("Outside the scanned files", "sites_outside_scanned_files"),
                       ("Source line changed since the log (not matched)", "sites_whose_source_changed")):
        if toolkit[key]:
            lines += [f"{title}:", ""]
            lines += [f"- `{s['path']}:{s['line']}` {', '.join(s['calls'])} ({', '.join(s['statuses'])})" for s in toolkit[key]]
            lines.append("")
    return lines


def _not_examined(counts) -> list[str]:
    if not counts:
        return []
    shown = ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return [f"Files not examined: {shown}.", ""]


def render_markdown(results: list[FileResult], rules=(), toolkit: Optional[dict] = None, not_examined=None) -> str:
    names = rule_names(rules)
    plan = make_plan(results)
    lines = [f"# Migration report (hpu-port {__version__})", ""]
    lines += _modes(results) + _summary(plan.total, results) + _not_examined(not_examined)
    lines += _toolkit(toolkit) + _directories(plan) + _categories(plan.items)
    failed = [r for r in results if r.failed]
    if failed:
        lines += ["## Files not processed", ""] + [f"- `{r.path}`: {_cell(r.error)}" for r in failed] + [""]
    sections = [
        ("## Blockers that need a person", lambda i: i.needs_person and not i.advice),
        ("## Advice (optional optimization)", lambda i: i.advice),
        ("## Changes `hpu-port rewrite` makes", lambda i: not i.needs_person and not i.advice),
    ]
    for title, wanted in sections:
        lines += [title, ""] + (_per_file(plan.items, names, wanted) or ["None.", ""])
    by_code = Counter((f.code, f.severity) for r in results for f in r.findings)
    if by_code:
        lines += ["## Findings per rule", "", "| code | rule | kind | findings |", "|---|---|---|---|"]
        lines += [f"| {code} | {names.get(code, '')} | {kind} | {n} |" for (code, kind), n in sorted(by_code.items())]
        lines.append("")
    return "\n".join(lines)
