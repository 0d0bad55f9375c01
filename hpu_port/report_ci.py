"""Reports for CI systems: GitHub workflow annotations, GitLab code quality,
and the per-rule statistics of `check --statistics`."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

from hpu_port.planning import rule_names
from hpu_port.results import ACTIONS, FileResult, Finding, all_findings


def relative_path(path: str) -> str:
    """``path`` relative to the working directory when it lies under it, with
    forward slashes (as CI systems show it)."""
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            path = relative
    return Path(path).as_posix()


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _github_level(finding: Finding) -> str:
    # Advice and what `rewrite` fixes are notes; what a person must fix is an error.
    if finding.advice:
        return "notice"
    return "warning" if finding.fixable else "error"


def render_github(results: list[FileResult], rules=()) -> str:
    """One workflow command per finding (``::error file=...,line=...::message``),
    and one per file that could not be processed."""
    names = rule_names(rules)
    lines = []
    for path, finding in all_findings(results):
        name = names.get(finding.code, "")
        title = f"hpu-port {finding.code}" + (f" ({name})" if name else "")
        properties = {
            "title": title,
            "file": relative_path(path),
            "line": finding.line,
            "col": finding.column,
            "endLine": finding.end_line,
            "endColumn": finding.end_column,
        }
        rendered = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
        place = f" (cell {finding.cell})" if finding.cell is not None else ""
        lines.append(f"::{_github_level(finding)} {rendered}::{_escape_data(finding.message + place)}")
    for result in results:
        if result.failed:
            lines.append(f"::error file={_escape_property(relative_path(result.path))}::{_escape_data(result.error)}")
    return "".join(line + "\n" for line in lines)


def _gitlab_severity(finding: Finding) -> str:
    if finding.advice or finding.review:
        return "info"
    return "minor" if finding.fixable else "major"


def render_gitlab(results: list[FileResult], rules=()) -> str:
    """GitLab code quality (a JSON array, as ``artifacts:reports:codequality``
    reads it). A finding's fingerprint is stable across runs as long as its
    file, code and message stay (repeats in one file are numbered)."""
    names = rule_names(rules)
    seen: Counter = Counter()
    issues = []
    for path, finding in all_findings(results):
        relative = relative_path(path)
        key = (relative, finding.code, finding.message)
        seen[key] += 1
        fingerprint = hashlib.sha256("\0".join((*key, str(seen[key]))).encode()).hexdigest()
        issues.append(
            {
                "type": "issue",
                "check_name": finding.code,
                "description": f"{finding.code} {names.get(finding.code, '')}: {finding.message}".replace("  ", " "),
                "categories": ["Performance"] if finding.advice else ["Compatibility"],
                "severity": _gitlab_severity(finding),
                "fingerprint": fingerprint,
                "location": {"path": relative, "lines": {"begin": finding.line, "end": finding.end_line}},
            }
        )
    return json.dumps(issues, indent=2) + "\n"


def statistics(results: list[FileResult], rules=()) -> list[dict]:
    """Findings per rule, most frequent first: code, name, count, how many
    `rewrite` fixes, and whether the rule is advice."""
    names = rule_names(rules)
    count: Counter = Counter()
    fixable: Counter = Counter()
    advice: dict[str, bool] = {}
    actions: dict[str, Counter] = {}
    for _, finding in all_findings(results):
        count[finding.code] += 1
        fixable[finding.code] += finding.fixable
        advice[finding.code] = finding.advice
        actions.setdefault(finding.code, Counter())[finding.taken] += 1
    return [
        {
            "code": code,
            "name": names.get(code, ""),
            "count": n,
            "fixable": fixable[code],
            "advice": advice[code],
            "actions": {action: actions[code][action] for action in ACTIONS},
        }
        for code, n in sorted(count.items(), key=lambda pair: (-pair[1], pair[0]))
    ]


def render_statistics(results: list[FileResult], rules=(), as_json: bool = False) -> str:
    rows = statistics(results, rules)
    if as_json:
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(row["count"])) for row in rows), default=1)
    lines = []
    for row in rows:
        marker = "[*]" if row["fixable"] == row["count"] else ("[~]" if row["fixable"] else "   ")
        advice = " (advice)" if row["advice"] else ""
        lines.append(f"{row['count']:>{width}}\t{row['code']}\t{marker} {row['name']}{advice}")
    return "".join(line + "\n" for line in lines)
