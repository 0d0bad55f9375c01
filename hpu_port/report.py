"""Renderers: turn FileResults into text. Nothing here prints; the CLI does."""

from __future__ import annotations

import csv
import importlib
import io
import json
from typing import Callable, Optional

from hpu_port import __version__
from hpu_port.diffing import BoundedMatcher
from hpu_port.model import MODE_IMPLIES
from hpu_port.planning import make_plan, numbered_findings, rule_names
from hpu_port.results import FileResult, Finding, all_findings, modes_in


def _text(data: bytes, encoding: str) -> str:
    return data.decode(encoding, errors="replace")


def unified_diff(result: FileResult, context: int = 3, label: bool = False) -> str:
    """A unified diff of one file's change, with ``---``/``+++`` headers and
    hunks; ``label``: each hunk's header names the rules whose fixes made it
    (after the second `@@`, where patch tools read a section heading)."""
    if not result.changed:
        return ""
    applied = [f for f in result.findings if f.applied] if label else None
    if result.cell_changes:
        return "".join(
            _diff(old.splitlines(), new.splitlines(), f"{result.path} (cell {cell})", context,
                  applied and [f for f in applied if f.cell == cell])
            for cell, (old, new) in sorted(result.cell_changes.items())
        )
    old = _text(result.source, result.encoding).splitlines()
    new = _text(result.new_source, result.encoding).splitlines()
    return _diff(old, new, result.path, context, applied)


def _diff(old: list, new: list, name: str, context: int, applied: Optional[list] = None) -> str:
    lines = [f"--- {name}", f"+++ {name}"]
    # Frequent lines (blank ones) take part in the matching (SequenceMatcher's
    # autojunk off), or untouched blank lines show up as removed and re-added.
    matcher = BoundedMatcher(None, old, new)
    for group in matcher.get_grouped_opcodes(context):
        header = _hunk_header(group)
        if applied is not None:
            codes = _codes_of_hunk(group, new, applied)
            header += f" {' '.join(codes)}" if codes else ""
        lines.append(header)
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in old[i1:i2]]
                continue
            lines += ["-" + line for line in old[i1:i2]]
            lines += ["+" + line for line in new[j1:j2]]
    return "".join(line + "\n" for line in lines)


def _codes_of_hunk(group, new: list, applied: list) -> list:
    """The rules whose applied fixes lie in the hunk's changed lines: a
    replacement at its lines, an insertion just after the statement that
    caused it; imports the file needs are reported at its first line."""
    codes = set()
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            continue
        added = new[j1:j2]
        if i1 == i2 and added and all(_is_import_line(line) for line in added):
            codes |= {f.code for f in applied if f.line == 1}
            continue
        first, last = (i1 + 1, i2) if i2 > i1 else (i1 - 2, i1 + 1)
        codes |= {f.code for f in applied if f.line <= last and f.end_line >= first}
    return sorted(codes)


def _is_import_line(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith(("import ", "from ", "try:", "except ImportError", "pass")) or stripped.endswith("= None")


def _hunk_header(group) -> str:
    first, last = group[0], group[-1]
    old_start, old_len = first[1], last[2] - first[1]
    new_start, new_len = first[3], last[4] - first[3]
    return f"@@ -{_range(old_start, old_len)} +{_range(new_start, new_len)} @@"


def _range(start: int, length: int) -> str:
    # Unified diff ranges are 1-based; an empty range names the line before it.
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def diff_line_style(line: str) -> str:
    """The rich style of a diff line, for coloured output on a terminal."""
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return ""


SNIPPET_LIMIT = 60  # characters of quoted code kept in a one-line message


def one_line(message: str, limit: int = SNIPPET_LIMIT) -> str:
    """``message`` on one line: line breaks escaped as ``\\n``, each quoted
    (backticked) snippet longer than ``limit`` cut with an ellipsis."""
    parts = message.split("`")
    # Odd parts are inside backticks (an unpaired last one is left as it is).
    for index in range(1, len(parts) - 1, 2):
        if len(parts[index]) > limit:
            parts[index] = parts[index][: limit - 1].rstrip() + "\u2026"
    text = "`".join(parts)
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r").replace("\t", " ")


def finding_line(path: str, finding: Finding) -> str:
    """``path:line:col: CODE [*] (advice) message``, always one line; ``[*]``
    marks what rewrite fixes, ``(advice)`` what is optimization advice."""
    marker = " [*]" if finding.fixable else ""
    advice = " (advice)" if finding.advice else ""
    place = f"{path}:cell {finding.cell}" if finding.cell is not None else path
    return f"{place}:{finding.line}:{finding.column}: {finding.code}{marker}{advice} {one_line(finding.message)}"


def finding_styles(line: str) -> list[tuple[int, int, str]]:
    """Spans to colour in a finding line on a terminal: place, code, fix marker."""
    spans = []
    code_at = line.find(": HPU")
    if code_at > 0:
        spans.append((0, code_at, "bold"))
        code_end = line.find(" ", code_at + 2)
        spans.append((code_at + 2, code_end if code_end > 0 else len(line), "bold red"))
        marker = line.find("[*]", code_at)
        if marker > 0:
            spans.append((marker, marker + 3, "green"))
    return spans


def render_text(results: list[FileResult], rules=()) -> str:
    return "".join(finding_line(path, f) + "\n" for path, f in all_findings(results))


JSON_SCHEMA_VERSION = 1


def finding_record(path: str, finding: Finding, names: Optional[dict] = None, item: Optional[int] = None) -> dict:
    record = {
        "path": path,
        "line": finding.line,
        "column": finding.column,
        "end_line": finding.end_line,
        "end_column": finding.end_column,
        "code": finding.code,
        "message": finding.message,
        "category": finding.category,
        "fix": finding.fix,
        "fixable": finding.fixable,
        **({"cell": finding.cell} if finding.cell is not None else {}),
        "action": finding.taken,
        **({"kept": finding.kept_record()} if finding.kept else {}),
    }
    if names is not None:
        record.update(name=names.get(finding.code, ""), severity=finding.severity)
    if item is not None:
        record["item"] = item
    return record


def render_json(results: list[FileResult], rules=(), toolkit: Optional[dict] = None, not_examined=None) -> str:
    names = rule_names(rules)
    plan = make_plan(results)
    document = {
        "tool": "hpu-port",
        "version": __version__,
        "schema_version": JSON_SCHEMA_VERSION,
        "modes": [
            {"mode": mode, "files": count, "implies": MODE_IMPLIES[mode]} for mode, count in modes_in(results).items()
        ],
        "summary": plan.total.as_dict(),
        "directories": [{"path": path, **tally.as_dict()} for path, tally in plan.directories],
        "findings": [finding_record(path, f, names, item) for path, f, item in numbered_findings(results)],
        "files": [
            {"path": r.path, "diff": unified_diff(r)} for r in sorted(results, key=lambda r: r.path) if r.changed
        ],
        "errors": [{"path": r.path, "message": r.error} for r in results if r.failed],
        "regions": [
            {"path": r.path, "action": action, "line": first, "end_line": last}
            for r in sorted(results, key=lambda r: r.path)
            for action, first, last in r.regions
        ],
        "files_by_type": files_by_type(results),
        # Files the walk met and did not read, by suffix (or by type, when no selected rule reads it).
        "files_not_examined": dict(sorted((not_examined or {}).items())),
        **({"toolkit_log": toolkit} if toolkit is not None else {}),
    }
    return json.dumps(document, indent=2) + "\n"


def files_by_type(results: list[FileResult]) -> dict:
    """How many files of each type were examined (failed ones apart)."""
    counts: dict = {}
    for result in results:
        if not result.failed:
            counts[result.file_type] = counts.get(result.file_type, 0) + 1
    return dict(sorted(counts.items()))


CSV_FIELDS = ["path", "line", "column", "end_line", "end_column", "code", "category", "fix", "fixable", "message",
              "mode", "name", "severity", "item", "action", "kept", "kept_evidence", "kept_unit_line"]


def render_csv(results: list[FileResult], rules=()) -> str:
    out = io.StringIO()
    names = rule_names(rules)
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    mode_of = {r.path: r.mode or "" for r in results}
    for path, finding, item in numbered_findings(results):
        record = finding_record(path, finding, names, item)
        kept = record.pop("kept", None) or {}
        writer.writerow({
            **record,
            "mode": mode_of.get(path, ""),
            "kept": kept.get("reason", ""),
            "kept_evidence": kept.get("evidence", ""),
            "kept_unit_line": kept.get("unit_line") or "",
        })
    return out.getvalue()


# Where each format's renderer lives: the other formats' modules are imported
# only when asked for, since a pre-commit run pays for every import.
RENDERERS = {
    "text": "hpu_port.report:render_text",
    "json": "hpu_port.report:render_json",
    "csv": "hpu_port.report:render_csv",
    "sarif": "hpu_port.report_sarif:render_sarif",
    "markdown": "hpu_port.report_markdown:render_markdown",
    "github": "hpu_port.report_ci:render_github",
    "gitlab": "hpu_port.report_ci:render_gitlab",
    "html": "hpu_port.report_html:render_html",
}


def renderer(output_format: str) -> Callable[..., str]:
    module, _, function = RENDERERS[output_format].partition(":")
    return getattr(importlib.import_module(module), function)


def mode_summary(results: list[FileResult]) -> str:
    """One line per execution mode in effect: which, for how many files, what it implies."""
    modes = modes_in(results)
    return "".join(
        f"hpu-port: mode {mode}{_files_note(count, len(modes))}: {MODE_IMPLIES[mode]}\n" for mode, count in modes.items()
    )


def _files_note(count: int, modes: int) -> str:
    return f" ({count} file{'s' if count != 1 else ''})" if modes > 1 else ""


FORMATS = tuple(RENDERERS)


def render(
    output_format: str, results: list[FileResult], rules, rule_docs_url: Optional[str] = None,
    toolkit: Optional[dict] = None, not_examined=None,
) -> str:
    """The report in ``output_format``; ``rules`` are the rules that ran (for
    names and metadata); ``rule_docs_url`` is where html links rule pages;
    ``toolkit`` sums up the GPU Migration Toolkit logs matched to the findings;
    ``not_examined`` counts the files the walk met and did not read."""
    if output_format == "html":
        return renderer(output_format)(results, rules, rule_docs_url=rule_docs_url, toolkit=toolkit,
                                       not_examined=not_examined)
    if output_format in ("json", "markdown"):
        return renderer(output_format)(results, rules, toolkit=toolkit, not_examined=not_examined)
    return renderer(output_format)(results, rules)


def render_statistics(results: list[FileResult], rules=(), as_json: bool = False) -> str:
    from hpu_port.report_ci import render_statistics as statistics_text

    return statistics_text(results, rules, as_json)
