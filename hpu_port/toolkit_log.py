"""The logs of Intel's GPU Migration Toolkit, matched to the static findings.

With `GPU_MIGRATION_LOG_LEVEL` set, the toolkit (which patches CUDA calls at
run time) writes `$HABANA_LOGS/gpu_migration_logs/*.log`. Each intercepted
call is an entry of three lines, entries apart by blank lines::

    [2024-05-02 09:14:07] train.py:58
        [context]:     model = model.to(device)
        [hpu_match]: torch.nn.Module.to(args=(device(type='cuda'),), ...) --> torch.nn.Module.to(args=('hpu',), ...)

the time, the `path:line` of the calling code, that line's source, then the
toolkit's verdict on the call (`hpu_match`: mapped one to one,
`hpu_modified`: replaced by something that behaves differently,
`hpu_mismatch`: not supported) with the call and, after `-->`, what it did.
Any other line is counted and skipped.

A *site* is a file and line of the log. A site in a scanned file is covered
when a static finding (not advice) overlaps the statement around that line;
an uncovered site becomes a finding of the rule of kind `toolkit-log`, saying
why static analysis could not see it when the log tells. Sites in installed
libraries, or in files outside the scanned ones, are listed apart.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from hpu_port.results import FileResult, Finding
from hpu_port.suppressions import scan

HEADER = re.compile(r"^\[(?P<time>[^\]]+)\]\s+(?P<path>.+?):(?P<line>\d+)\s*$")
CONTEXT = re.compile(r"^\s+\[context\]:\s?(?P<source>.*)$")
VERDICT = re.compile(r"^\s+\[(?P<status>hpu_match|hpu_modified|hpu_mismatch)\]:\s*(?P<call>.*?)(?:\s+-->\s+(?P<result>.*))?\s*$")
STATUSES = ("hpu_match", "hpu_modified", "hpu_mismatch")
KIND = "toolkit-log"


@dataclass(frozen=True)
class Call:
    """One intercepted call: where, the source line, the verdict."""

    path: str
    line: int
    source: str
    status: str
    call: str
    result: str
    log: str  # the log file it came from

    @property
    def api(self) -> str:
        """The API's name (``torch.cuda.set_device``), without its arguments."""
        return self.call.split("(", 1)[0].strip()


@dataclass
class ParsedLog:
    calls: list[Call] = field(default_factory=list)
    unknown_lines: int = 0
    files: int = 0
    errors: list[str] = field(default_factory=list)


def parse_text(text: str, log: str = "-") -> tuple[list[Call], int]:
    """The calls of one log, and how many lines were not understood."""
    calls: list[Call] = []
    unknown = 0
    header: Optional[re.Match] = None
    source = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        match = HEADER.match(line)
        if match:
            header, source = match, ""
            continue
        context = CONTEXT.match(line)
        if context and header is not None:
            source = context.group("source")
            continue
        verdict = VERDICT.match(line)
        if verdict and header is not None:
            calls.append(Call(header.group("path"), int(header.group("line")), source.strip(), verdict.group("status"),
                              verdict.group("call").strip(), (verdict.group("result") or "").strip(), log))
            continue
        unknown += 1
    return calls, unknown


def log_files(paths: Iterable[str]) -> tuple[list[Path], list[str]]:
    """The files to read: each path, or the `*.log` files of a directory."""
    files, errors = [], []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*.log"))
            if not found:
                errors.append(f"{raw}: no *.log files in this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            errors.append(f"{raw}: no such file or directory")
    return files, errors


def read_logs(paths: Iterable[str]) -> ParsedLog:
    files, errors = log_files(paths)
    parsed = ParsedLog(errors=errors)
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            parsed.errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        calls, unknown = parse_text(text, str(path))
        parsed.calls += calls
        parsed.unknown_lines += unknown
        parsed.files += 1
    return parsed


LIBRARY_PARTS = ("site-packages", "dist-packages")


def is_library_path(path: str) -> bool:
    parts = Path(path).parts
    return any(part in LIBRARY_PARTS for part in parts) or bool(re.search(r"/lib/python\d", path))


@dataclass
class Site:
    """A file and line the toolkit intercepted calls at, and what came of it."""

    path: str  # as the log names it
    line: int
    calls: list[Call]
    scanned: Optional[str] = None  # the scanned file it is, if any
    at: int = 0  # the line in the scanned file now (the log may be older than the file)
    stale: bool = False  # the logged source line is no longer near there: not matched
    covered_by: tuple[str, ...] = ()  # codes of the static findings there
    fixed: bool = False  # every static finding there is fixed by rewrite

    @property
    def statuses(self) -> list[str]:
        return sorted({c.status for c in self.calls}, key=STATUSES.index)


@dataclass
class Matching:
    """The outcome of matching the logs to a run's results."""

    sites: list[Site]
    unknown_lines: int
    log_files: int
    errors: list[str]
    added: int = 0  # findings added for uncovered sites

    @property
    def in_scanned(self) -> list[Site]:
        return [s for s in self.sites if s.scanned is not None and not s.stale]

    @property
    def stale(self) -> list[Site]:
        return [s for s in self.sites if s.stale]

    @property
    def covered(self) -> list[Site]:
        return [s for s in self.in_scanned if s.covered_by]

    @property
    def libraries(self) -> list[Site]:
        return [s for s in self.sites if s.scanned is None and is_library_path(s.path)]

    @property
    def elsewhere(self) -> list[Site]:
        return [s for s in self.sites if s.scanned is None and not is_library_path(s.path)]

    def summary_line(self) -> str:
        fixed = sum(1 for site in self.covered if site.fixed)
        return (
            f"{len(self.sites)} intercepted call sites in {self.log_files} log files; "
            f"{len(self.in_scanned)} in the scanned files, {len(self.covered)} covered by static findings "
            f"({fixed} fixed by rewrite), {self.added} reported as new findings; {len(self.libraries)} in "
            f"installed libraries, {len(self.elsewhere)} in other files, {len(self.stale)} whose source line changed "
            f"since the log; {self.unknown_lines} log lines not understood"
        )

    def unmatched_lines(self) -> list[str]:
        """The sites not matched to a scanned file, a line each, with why."""
        groups = (("in an installed library", self.libraries), ("outside the scanned files", self.elsewhere),
                  ("its source line changed since the log", self.stale))
        return [
            f"{site.path}:{site.line}: {', '.join(sorted({c.api for c in site.calls}))} [{', '.join(site.statuses)}] ({why})"
            for why, sites in groups
            for site in sites
        ]

    def as_dict(self) -> dict:
        def site(s: Site) -> dict:
            return {"path": s.path, "line": s.line, "statuses": s.statuses, "calls": sorted({c.api for c in s.calls})}

        return {
            "log_files": self.log_files,
            "unknown_lines": self.unknown_lines,
            "sites": len(self.sites),
            "sites_in_scanned_files": len(self.in_scanned),
            "covered_by_static_findings": len(self.covered),
            "added_findings": self.added,
            "library_sites": [site(s) for s in self.libraries],
            "sites_outside_scanned_files": [site(s) for s in self.elsewhere],
            "sites_whose_source_changed": [site(s) for s in self.stale],
        }


def _sites(calls: list[Call]) -> list[Site]:
    by_place: dict[tuple[str, int], list[Call]] = {}
    for call in calls:
        by_place.setdefault((call.path, call.line), []).append(call)
    return [Site(path, line, found) for (path, line), found in sorted(by_place.items())]


def _scanned_index(results: list[FileResult]) -> dict[str, FileResult]:
    return {os.path.realpath(r.path): r for r in results if not r.failed and r.path != "-"}


def _find_scanned(log_path: str, index: dict[str, FileResult], log_dirs: list[str]) -> Optional[FileResult]:
    """The scanned file a log's path names: the same file (absolute, or relative
    to the working directory or to a log's directory), else the one scanned file
    whose path ends with it."""
    candidates = [log_path] if os.path.isabs(log_path) else [log_path, *(os.path.join(d, log_path) for d in log_dirs)]
    for candidate in candidates:
        found = index.get(os.path.realpath(candidate))
        if found is not None:
            return found
    tail = "/" + Path(log_path.lstrip("./")).as_posix()
    ending = [r for real, r in index.items() if Path(real).as_posix().endswith(tail)]
    return ending[0] if len(ending) == 1 else None


SEARCH_LINES = 200  # how far from the logged line its source line is looked for


def locate(source: str, line: int, context: str) -> int:
    """The line of ``source`` the logged ``line`` is now: itself when it still
    reads ``context`` (or the log gave none), else the nearest line that does
    (the file was edited since the run); 0 when none near does."""
    lines = source.splitlines()
    wanted = context.strip()
    if not wanted or (0 < line <= len(lines) and lines[line - 1].strip() == wanted):
        return line
    for distance in range(1, SEARCH_LINES + 1):
        for candidate in (line - distance, line + distance):
            if 0 < candidate <= len(lines) and lines[candidate - 1].strip() == wanted:
                return candidate
    return 0


def statement_lines(source: str, line: int) -> tuple[int, int]:
    """The lines of the innermost statement around ``line`` (of a compound
    statement, its header); ``line`` alone when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return line, line
    around = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return line, line
    inner = max(around, key=lambda n: n.lineno)  # statements nest: the innermost starts last
    end = inner.end_lineno or inner.lineno
    body = getattr(inner, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        end = max(inner.lineno, body[0].lineno - 1)
    return inner.lineno, end


def why_missed(call: Call) -> str:
    """Why static analysis could not see this call, when the log tells."""
    source, text = call.source, call.call + " " + call.result
    mentions_cuda = re.search(r"cuda|nccl", source, re.IGNORECASE)
    unpacked = re.search(r"\*\*\s*([\w.]+)", source)
    if unpacked and not mentions_cuda:
        return f"the arguments arrive unpacked from `**{unpacked.group(1)}`, which static analysis cannot see into"
    configured = re.search(r"\b(args|config|cfg|conf|opts?|hparams|params|settings|flags)\.\w+|os\.environ|getenv", source)
    if re.search(r"device\(type='cuda'|'cuda|\bcuda:|device=cuda|backend=nccl", text) and not mentions_cuda:
        if configured:
            return f"the value comes from configuration (`{configured.group(0)}`), not from this source"
        return "the CUDA device arrives through a variable or argument, not a literal on this line"
    if configured and not mentions_cuda:
        return f"the value comes from configuration (`{configured.group(0)}`)"
    if not mentions_cuda:
        return "the call is reached through a name that does not say CUDA here (an alias, a wrapper or a method)"
    return "no rule covers this call"


def _message(rule, site: Site) -> str:
    call = site.calls[0]
    apis = ", ".join(dict.fromkeys(c.api for c in site.calls))  # each API once, in log order
    return rule.message.format(
        name=call.api, call=apis, status=call.status, result=call.result or "nothing logged", reason=why_missed(call),
    )


def _toolkit_rules(result: FileResult) -> list:
    return [rule for rule in result.rules if rule.kind == KIND]


def match(results: list[FileResult], parsed: ParsedLog, sources: Optional[dict] = None) -> Matching:
    """Match the logged calls to ``results``; an uncovered site in a scanned
    file gets a finding of each `toolkit-log` rule the file is ported with
    (added to ``results``, unless a suppression comment covers that line)."""
    index = _scanned_index(results)
    log_dirs = sorted({os.path.dirname(c.log) for c in parsed.calls if c.log != "-"})
    matching = Matching(_sites(parsed.calls), parsed.unknown_lines, parsed.files, list(parsed.errors))
    for site in matching.sites:
        result = _find_scanned(site.path, index, log_dirs)
        if result is None:
            continue
        site.scanned = result.path
        source = (sources or {}).get(result.path) or _source_text(result)
        site.at = locate(source, site.line, site.calls[0].source)
        if not site.at:
            site.stale = True  # the code changed since the run: matching it would mislead
            continue
        first, last = statement_lines(source, site.at)
        here = [f for f in result.findings if not f.advice and f.cell is None and f.line <= last and f.end_line >= first]
        site.covered_by = tuple(sorted({f.code for f in here}))
        site.fixed = bool(here) and all(f.fixable for f in here)
        if here:
            continue
        for rule in _toolkit_rules(result):  # each rule of the kind reports under its own code
            if not _suppressed(result, rule.code, first, last):
                result.findings.append(_finding(rule, site, source))
                matching.added += 1
    return matching


def _source_text(result: FileResult) -> str:
    data = result.source
    if not data:
        try:
            data = Path(result.path).read_bytes()
        except OSError:
            return ""
    return data.decode(result.encoding or "utf-8", errors="replace")


def _suppressed(result: FileResult, code: str, first: int, last: int) -> bool:
    suppressions = scan(result.source or _source_text(result).encode(), "utf-8")
    return suppressions is not None and suppressions.suppresses(code, first, last)


def _finding(rule, site: Site, source: str) -> Finding:
    lines = source.splitlines()
    text = lines[site.at - 1] if 0 < site.at <= len(lines) else ""
    column = len(text) - len(text.lstrip()) + 1
    return Finding(
        rule.code, _message(rule, site), site.at, column, site.at, max(len(text) + 1, column),
        fix="none", fixable=False, category=rule.category, item_scope=rule.items,
    )
