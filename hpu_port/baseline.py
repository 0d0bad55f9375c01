"""A baseline: the findings a team has accepted for now, so that a gate fails
only on new ones.

A finding is known by its file (relative to the baseline's folder), its rule,
its message (without numbers) and the text of its line (stripped; none for a
finding about the whole file), never by its line number: code added above it does not make
it new. Identical findings on identical lines are counted, so a second copy of
a known line is new. The file is sorted JSON, one entry per finding kind, to
review in a pull request like any other file.

Nothing here prints; the CLI reads and writes the file and says what was
matched.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from hpu_port.planning import without_numbers
from hpu_port.results import FileResult, Finding

FORMAT_VERSION = 1
Key = tuple  # (path, code, line text, message)


class BaselineError(Exception):
    """A baseline file that cannot be read; the message names the file."""


@dataclass
class Filtered:
    """Results without the findings the baseline knows."""

    results: list[FileResult]
    known: int  # findings left out because the baseline lists them
    stale: int  # entries for the files examined that match nothing any more (fixed since)


def base_of(baseline_path: str) -> str:
    """The folder a baseline's paths are relative to: its own."""
    return os.path.dirname(os.path.abspath(baseline_path))


def _relative(path: str, base: str) -> str:
    """``path`` relative to ``base``, as the baseline writes it (the same
    from any working directory)."""
    return Path(os.path.relpath(os.path.abspath(path), base)).as_posix()


def _message_key(message: str) -> str:
    """The message without its numbers: a line number of another file or a
    count in it (`(b.py:4)`, `changes reported instead: 3`) is no new finding."""
    return without_numbers(message)


def _source_lines(result: FileResult, cell: Optional[int]) -> list[str]:
    if cell is not None:
        from hpu_port.notebooks import load

        try:
            cells = load(result.source).data["cells"]
            source = cells[cell - 1].get("source", "")
        except (ValueError, IndexError, AttributeError):
            return []
        return ("".join(source) if isinstance(source, list) else str(source)).splitlines()
    return result.source.decode(result.encoding or "utf-8", errors="replace").splitlines()


def without_baseline_file(results: Iterable[FileResult], path: str) -> list[FileResult]:
    """``results`` less the baseline file's own: it is JSON that quotes CUDA
    lines, and a gate must not report its own record."""
    target = os.path.realpath(path)
    return [result for result in results if os.path.realpath(result.path) != target]


def finding_keys(result: FileResult, base: str = ".") -> list[tuple[Key, Finding]]:
    """Each finding of ``result`` with the key a baseline knows it by (its
    path relative to ``base``, the baseline's folder)."""
    path = _relative(result.path, os.path.abspath(base))
    lines_by_cell: dict = {}
    keyed = []
    for finding in result.findings:
        if finding.cell not in lines_by_cell:
            lines_by_cell[finding.cell] = _source_lines(result, finding.cell)
        lines = lines_by_cell[finding.cell]
        # A finding with no extent is about the file (an import it lacks), not its first line.
        about_file = (finding.line, finding.column) == (finding.end_line, finding.end_column)
        text = lines[finding.line - 1].strip() if 0 < finding.line <= len(lines) and not about_file else ""
        keyed.append(((path, finding.code, text, _message_key(finding.message)), finding))
    return keyed


def build(results: Iterable[FileResult], base: str = ".", previous: Optional[Counter] = None) -> dict:
    """The baseline of ``results``: every finding, counted by key, and the
    ``previous`` entries of files this run did not examine (a file that failed,
    another folder) while they still exist: only a run that read a file
    replaces what the baseline knows of it."""
    results = list(results)
    counts = Counter(key for result in results for key, _ in finding_keys(result, base))
    examined = {_relative(result.path, os.path.abspath(base)) for result in results if not result.failed}
    for key, count in (previous or Counter()).items():
        if key[0] not in examined and os.path.exists(os.path.join(base, key[0])):
            counts[key] += count
    entries = [
        {"path": path, "code": code, "line": text, "message": message, "count": count}
        for (path, code, text, message), count in sorted(counts.items())
    ]
    return {"tool": "hpu-port", "version": FORMAT_VERSION, "findings": entries}


def dumps(baseline: dict) -> str:
    return json.dumps(baseline, indent=2, ensure_ascii=False) + "\n"


def write(path: str, results: Iterable[FileResult]) -> int:
    """Write the baseline of ``results`` to ``path`` whole (a reader never sees
    half a file), keeping the entries of files the run did not examine from
    the baseline already there; returns how many findings it lists."""
    from hpu_port.files import write_whole

    try:
        previous = read(path) if os.path.exists(path) else None
    except BaselineError:
        previous = None  # an unreadable baseline is replaced whole
    baseline = build(results, base_of(path), previous)
    write_whole(Path(path), dumps(baseline).encode("utf-8"))
    return sum(entry["count"] for entry in baseline["findings"])


def read(path: str) -> Counter:
    """The keys the baseline file at ``path`` lists, with their counts."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not a baseline: {exc}") from None
    return read_data(data, path)


def read_data(data, path: str = "<baseline>") -> Counter:
    """The keys a baseline's parsed JSON lists, with their counts."""
    if not isinstance(data, dict) or data.get("tool") != "hpu-port" or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{path}: not a baseline written by `hpu-port check --write-baseline`")
    if data.get("version") != FORMAT_VERSION:
        raise BaselineError(f"{path}: baseline format {data.get('version')!r}; this hpu-port reads {FORMAT_VERSION}")
    known: Counter = Counter()
    for number, entry in enumerate(data["findings"], 1):
        try:
            key = (entry["path"], entry["code"], entry["line"], _message_key(entry["message"]))
            count = int(entry.get("count", 1))
            if not all(isinstance(part, str) for part in key):
                raise TypeError
        except (TypeError, KeyError, ValueError, AttributeError):
            raise BaselineError(f"{path}: entry {number} is not a finding (path, code, line, message, count)") from None
        known[key] += max(count, 0)
    return known


def without_known(results: Iterable[FileResult], known: Counter, base: str = ".") -> Filtered:
    """``results`` without the findings ``known`` lists, each key as many times
    as it is counted there; the results themselves are not changed."""
    left = Counter(known)
    filtered, matched, examined = [], 0, set()
    for result in results:
        if not result.failed:
            examined.add(_relative(result.path, os.path.abspath(base)))
        kept = []
        for key, finding in finding_keys(result, base):
            if left[key] > 0:
                left[key] -= 1
                matched += 1
            else:
                kept.append(finding)
        filtered.append(dataclasses.replace(result, findings=kept) if len(kept) != len(result.findings) else result)
    # Entries of files this run did not examine are not stale: a run over a
    # sub-folder must not call the rest of the baseline fixed.
    stale = sum(count for key, count in left.items() if key[0] in examined)
    return Filtered(filtered, matched, stale)
