"""`# hpu-port: ignore` comments: findings (and their fixes) a user switched off.

- `# hpu-port: ignore` or `# hpu-port: ignore[HPU110,HPU2]` at the end of a line
  covers the statement that line belongs to (all its lines);
- the same comment alone on a line covers the statement that follows it;
- `# hpu-port: file-ignore` or `# hpu-port: file-ignore[...]` anywhere covers
  the whole file.

Codes may be prefixes (`HPU1`) and are case-insensitive (`hpu110`); no codes
means every rule. Only real comments count: the text inside a string does not.
"""

from __future__ import annotations

import bisect
import difflib
import io
import itertools
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional

DIRECTIVE = re.compile(r"#\s*hpu-port:\s*(?P<kind>ignore|file-ignore)\b(?:\[(?P<codes>[^\]]*)\])?")
MARKER = b"hpu-port:"


@dataclass
class Directive:
    line: int
    codes: tuple[str, ...]  # empty: every code
    first: int  # lines covered
    last: int
    used: bool = False

    def covers(self, code: str, start: int, end: int) -> bool:
        overlaps = start <= self.last and end >= self.first
        return overlaps and (not self.codes or any(code.startswith(c) for c in self.codes))


@dataclass
class Suppressions:
    directives: list[Directive] = field(default_factory=list)
    _index: Optional["_DirectiveIndex"] = field(default=None, repr=False, compare=False)

    def suppresses(self, code: str, start: int, end: int) -> bool:
        if self._index is None or self._index.size != len(self.directives):
            self._index = _DirectiveIndex(self.directives)
        hit = False
        for directive in self._index.overlapping(start, end):
            if directive.covers(code, start, end):
                directive.used = True
                hit = True
        return hit

    def unused(self) -> list[Directive]:
        return [d for d in self.directives if not d.used]


class _DirectiveIndex:
    """The directives whose lines meet a range of lines, found by a search:
    a file can hold a directive and a finding on each of thousands of lines.
    Directives cover one statement each, apart from the few that cover the
    whole file (`file-ignore`), which meet every range."""

    def __init__(self, directives: list[Directive]) -> None:
        self.size = len(directives)
        reach = max((d.last for d in directives), default=0)
        whole = [d.first <= 1 and d.last >= reach for d in directives]
        self.everywhere = [d for d, covers_all in zip(directives, whole) if covers_all]
        self.ordered = sorted((d for d, covers_all in zip(directives, whole) if not covers_all), key=lambda d: d.first)
        self.firsts = [d.first for d in self.ordered]
        # The last line reached by the directives up to each one.
        self.reach = list(itertools.accumulate((d.last for d in self.ordered), max))

    def overlapping(self, start: int, end: int) -> list[Directive]:
        found = list(self.everywhere)
        index = bisect.bisect_right(self.firsts, end) - 1
        while index >= 0 and self.reach[index] >= start:
            if self.ordered[index].last >= start:
                found.append(self.ordered[index])
            index -= 1
        return found


def scan(source: bytes, encoding: str) -> Optional[Suppressions]:
    """The suppression comments of a file; None when it has none."""
    if MARKER not in source:
        return None
    text = source.decode(encoding, errors="replace")
    comments, logical = _comments_and_logical_lines(text)
    statements = _LogicalLines(logical)
    last_line = text.count("\n") + 1
    directives = []
    for line, standalone, match in comments:
        codes = _codes(match)
        if match.group("kind") == "file-ignore":
            directives.append(Directive(line, codes, 1, last_line))
            continue
        span = statements.after(line) if standalone else statements.at(line)
        if span is not None:
            directives.append(Directive(line, codes, *span))
    return Suppressions(directives) if directives else None


def _comments_and_logical_lines(text: str):
    comments, logical = [], []
    start: Optional[int] = None
    line_has_code: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = token.type
            if kind == tokenize.COMMENT:
                match = DIRECTIVE.search(token.string)
                if match:
                    comments.append((token.start[0], token.start[0] not in line_has_code, match))
                continue
            if kind in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if kind == tokenize.NEWLINE:
                if start is not None:
                    logical.append((start, token.start[0]))
                start = None
                continue
            line_has_code.update(range(token.start[0], token.end[0] + 1))
            if start is None:
                start = token.start[0]
    except (tokenize.TokenError, SyntaxError):
        pass
    return comments, logical


class _LogicalLines:
    """The (first, last) lines of each statement, in order and apart."""

    def __init__(self, logical: list[tuple[int, int]]) -> None:
        self.logical = logical
        self.firsts = [first for first, _ in logical]

    def at(self, line: int) -> tuple[int, int]:
        """The statement holding ``line``, or the line alone."""
        index = bisect.bisect_right(self.firsts, line) - 1
        if index >= 0 and self.logical[index][1] >= line:
            return self.logical[index]
        return line, line

    def after(self, line: int) -> Optional[tuple[int, int]]:
        """The first statement that starts below ``line``."""
        index = bisect.bisect_right(self.firsts, line)
        return self.logical[index] if index < len(self.logical) else None


CODE = re.compile(r"[A-Z]+[0-9]*")


def code_problems(source: bytes, encoding: str, known: Iterable[str], python: bool = True) -> list[tuple[int, str]]:
    """(line, problem) for each code in a suppression comment that is not a
    rule code or prefix (`HPU13O`, `HPU110 HPU111`) or names no known rule.
    ``python``: the source is Python (or a notebook), whose comments Python's
    tokenizer tells from strings; other files are not Python, and the
    tokenizer reads some of their lines (a quote left open, many escapes)
    in time that grows with the square of the line's length."""
    if MARKER not in source:
        return []
    known = sorted(set(known))
    problems = []
    for line, codes in _python_directive_codes(source, encoding) if python else _directive_codes(source.decode(encoding, "replace")):
        for code in codes:
            close = closest_code(code, known)
            hint = f"; did you mean {close}?" if close else ""
            if not CODE.fullmatch(code):
                problems.append((line, f"malformed rule code {code!r} in a suppression comment "
                                 f"(codes are like HPU110 or a prefix like HPU1, separated by commas){hint}"))
            elif not any(k.startswith(code) for k in known):
                problems.append((line, f"unknown rule code {code!r} in a suppression comment{hint}"))
    return problems


def _python_directive_codes(source: bytes, encoding: str) -> list[tuple[int, tuple[str, ...]]]:
    suppressions = scan(source, encoding)
    return [(d.line, d.codes) for d in suppressions.directives] if suppressions is not None else []


def _directive_codes(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(line, codes) of each `#` or `//` suppression comment of a document."""
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    return [(bisect.bisect_right(line_starts, match.start()), _codes(match)) for match in DIRECTIVE_ANY.finditer(text)]


def _codes(directive: re.Match) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in (directive.group("codes") or "").split(",") if c.strip())


# Letters typed for the digits they look like.
_LOOKALIKES = str.maketrans({"O": "0", "I": "1", "L": "1", " ": "", "-": "", "_": ""})


def closest_code(code: str, known: list[str]) -> Optional[str]:
    """The known rule code ``code`` was most likely meant to be, if any."""
    fixed = code.translate(_LOOKALIKES)
    if fixed != code and any(k.startswith(fixed) for k in known):
        return fixed
    close = difflib.get_close_matches(code, known, n=1, cutoff=0.8)
    return close[0] if close else None


def scan_lines(
    text: str,
    comment: Optional[str],
    comment_starts: Optional[set] = None,
    line_break: re.Pattern = re.compile("\n"),
    statements: Iterable[tuple[int, int]] = (),
    every_comment: bool = False,
) -> Optional[Suppressions]:
    """The suppression comments of a document whose comments start with
    ``comment`` (`#`, `//`); None when it has none or has no comments (JSON).

    At the end of a line a directive covers that line; alone on a line, the
    next line that holds more than a comment. ``comment_starts``: the offsets
    where the format's parser saw comments begin; without it, a ``comment``
    at the start of a line or after a space counts. ``every_comment``: they
    are all the comments, so that a line that starts with ``comment`` but
    not with one (a job directive `#SBATCH ...`) holds code. Lines end where
    ``line_break`` matches. ``statements``: the (first, last) lines of
    statements that run over several lines (a command continued with `\\`):
    a directive at the end of one of their lines covers all of them, one
    alone on a line the rest of the statement that follows it.
    """
    if comment is None or "hpu-port:" not in text:
        return None
    breaks = list(line_break.finditer(text))
    starts = [0] + [m.end() for m in breaks]
    ends = [m.start() for m in breaks] + [len(text)]
    reach = _statement_reach(statements)
    known = comment_starts if every_comment else None
    directives = []
    pending: list[Directive] = []
    for number, (offset, end) in enumerate(zip(starts, ends), 1):
        line = text[offset:end]
        match = _directive_in(line, offset, comment, comment_starts)
        before = line[: match.start()] if match else line
        has_code = bool(before.strip()) and not _starts_comment(before, offset, comment, known)
        if has_code:
            for directive in pending:
                directive.first, directive.last = number, reach.get(number, (number, number))[1]
            pending = []
        if match:
            codes = _codes(match)
            if match.group("kind") == "file-ignore":
                directives.append(Directive(number, codes, 1, len(starts)))
            elif has_code:
                directives.append(Directive(number, codes, *reach.get(number, (number, number))))
            else:
                directive = Directive(number, codes, 0, -1)
                directives.append(directive)
                pending.append(directive)
    directives = [d for d in directives if d.last >= d.first]
    return Suppressions(directives) if directives else None


def _statement_reach(statements: Iterable[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Line -> the (first, last) lines of the longest statement holding it."""
    reach: dict[int, tuple[int, int]] = {}
    for first, last in statements:
        for line in range(first, last + 1):
            held = reach.get(line)
            if held is None or held[1] - held[0] < last - first:
                reach[line] = (first, last)
    return reach


def _starts_comment(line: str, offset: int, comment: str, comment_starts: Optional[set]) -> bool:
    """Whether the first thing on a line is a comment: one of ``comment_starts``
    when given, else a ``comment``."""
    start = len(line) - len(line.lstrip())
    if comment_starts is not None:
        return offset + start in comment_starts
    return line.startswith(comment, start)


def _directive_in(line: str, offset: int, comment: str, comment_starts: Optional[set]):
    for match in DIRECTIVE_ANY.finditer(line):
        start = match.start()
        if not line.startswith(comment, start):
            continue
        if comment_starts is not None:
            if offset + start in comment_starts:
                return match
        elif start == 0 or line[start - 1] in " \t":
            return match
    return None


DIRECTIVE_ANY = re.compile(r"(?:#|//)\s*hpu-port:\s*(?P<kind>ignore|file-ignore)\b(?:\[(?P<codes>[^\]]*)\])?")
