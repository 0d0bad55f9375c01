"""SARIF 2.1.0 output, as GitHub code scanning reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hpu_port import __version__
from hpu_port.kinds import fallback_codes
from hpu_port.model import MODE_IMPLIES
from hpu_port.results import FileResult, all_findings, modes_in

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _level(finding, fallback: set) -> str:
    # A person must act: warning. Rewrite fixes it, it is only a mention, or
    # it is optimization advice: note.
    if finding.code in fallback or finding.fixable or finding.category == "advice":
        return "note"
    return "warning"


def _uri(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return Path(relative).as_posix()


def _rule_descriptor(rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": rule.why, "markdown": rule.why},
        "defaultConfiguration": {"level": "note" if rule.fix != "none" else "warning"},
        "properties": {"category": rule.category, "fix": rule.fix, "tags": [rule.category]},
    }


def render_sarif(results: list[FileResult], rules=()) -> str:
    rules = sorted(rules, key=lambda r: r.code)
    index = {rule.code: i for i, rule in enumerate(rules)}
    fallback = fallback_codes(rules)
    sarif_results = []
    for path, finding in all_findings(results):
        result = {
            "ruleId": finding.code,
            "level": _level(finding, fallback),
            "message": {"text": finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"},
                        "region": {
                            "startLine": finding.line,
                            "startColumn": finding.column,
                            "endLine": finding.end_line,
                            "endColumn": finding.end_column,
                        },
                    }
                }
            ],
            "properties": {
                "category": finding.category,
                "severity": finding.severity,
                "fix": finding.fix,
                "fixable": finding.fixable,
                "action": finding.taken,
                **({"kept": finding.kept_record()} if finding.kept else {}),
            },
        }
        if finding.code in index:
            result["ruleIndex"] = index[finding.code]
        sarif_results.append(result)
    notifications = [
        {"level": "error", "message": {"text": f"{r.path}: {r.error}"}} for r in results if r.failed
    ]
    run = {
        "tool": {
            "driver": {
                "name": "hpu-port",
                "version": __version__,
                "rules": [_rule_descriptor(rule) for rule in rules],
            }
        },
        "results": sarif_results,
        "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}],
        "properties": {
            "modes": [{"mode": m, "files": n, "implies": MODE_IMPLIES[m]} for m, n in modes_in(results).items()]
        },
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
