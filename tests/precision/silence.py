"""Code lines that still mention CUDA or NCCL after a port, and which of them
no finding speaks for (a silent CUDA use is what a port must never leave)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from hpu_port.kinds.mention import word_pattern

# The words HPU190 reads: `use_cuda`, `"NCCL"`, not `barracuda` or `cudagraph`.
MENTION = word_pattern(["cuda", "nccl"])


def mentioning_code_lines(path: Path, pattern: re.Pattern = MENTION) -> set[int]:
    """Lines whose code (not comments, not docstrings) matches ``pattern``."""
    lines, previous = set(), None
    text = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            continue
        if token.type == tokenize.NEWLINE:
            previous = None
            continue
        if token.type == tokenize.STRING and previous is None:
            continue  # a statement that is only a string: a docstring
        previous = token
        if pattern.search(token.string):
            lines.add(token.start[0])
    return lines


def removed_lines(diff: str) -> set[int]:
    """Original line numbers a unified diff removes."""
    removed, line = set(), 0
    for text in diff.splitlines():
        if text.startswith("@@"):
            line = int(text.split()[1].lstrip("-").split(",")[0])
        elif text.startswith(("---", "+++")) and line == 0:
            continue
        elif text.startswith("-"):
            removed.add(line)
            line += 1
        elif text.startswith(" "):
            line += 1
    return removed


def silent_lines(source: Path, report: dict) -> list[str]:
    """``path:line`` of each code line of ``source``'s Python files that
    mentions CUDA or NCCL, has no finding in ``report`` (a `check --format
    json` report run in ``source``) and is not removed by the rewrite."""
    spoken: dict[str, set] = {}
    for finding in report["findings"]:
        spoken.setdefault(finding["path"], set()).update(range(finding["line"], finding["end_line"] + 1))
    for entry in report["files"]:
        if entry.get("diff"):
            spoken.setdefault(entry["path"], set()).update(removed_lines(entry["diff"]))
    # A unit or arm kept for another device is spoken for by its own finding.
    for region in report.get("regions", []):
        spoken.setdefault(region["path"], set()).update(range(region["line"], region["end_line"] + 1))
    silent = []
    for path in sorted(source.rglob("*.py")):
        relative = path.relative_to(source).as_posix()
        try:
            mentions = mentioning_code_lines(path)
        except (SyntaxError, tokenize.TokenError, UnicodeDecodeError):
            continue  # a file the tool reports as failed has its own finding
        silent += [f"{relative}:{line}" for line in sorted(mentions - spoken.get(relative, set()))]
    return silent
