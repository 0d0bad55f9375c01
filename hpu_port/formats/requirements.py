"""Dependency lists: `requirements*.txt`, `pyproject.toml` and `setup.cfg`.

Each requirement is a ``Word`` whose span covers the requirement text in the
file (`torch>=2.1` in `"torch>=2.1",` or on a requirements line).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from hpu_port._compat import toml
from hpu_port.formats import ANY_EOL, LF, Document, FormatError, Span, Word

_POETRY_ENTRY = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=")


class RequirementsDocument(Document):
    format = "requirements"
    language = "text"
    finds_comments = True

    def __init__(self, text: str, path: str, read: "_Read") -> None:
        super().__init__(text, path)
        self._found = read.found
        self._comments = read.comments
        self._statements = read.statements

    def requirements(self) -> list[Word]:
        return self._found

    def comment_spans(self) -> list[Span]:
        return self._comments

    def statements(self) -> list[Span]:
        return self._statements


@dataclass
class _Read:
    found: list[Word] = field(default_factory=list)
    comments: list[Span] = field(default_factory=list)
    statements: list[Span] = field(default_factory=list)


# What ends a line for the tool that reads the file: pip splits requirements
# files with str.splitlines; setuptools reads setup.cfg with universal
# newlines; TOML ends lines with LF (or CRLF).
PIP_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LINE_BREAKS = {"pyproject": LF, "setup-cfg": ANY_EOL}


def parse(text: str, path: str = "", file_type: str = "requirements") -> RequirementsDocument:
    reader = {"pyproject": _pyproject, "setup-cfg": _setup_cfg}.get(file_type, _requirements_txt)
    document = RequirementsDocument(text, path, reader(text))
    document.format = file_type
    document.language = {"pyproject": "toml", "setup-cfg": "ini"}.get(file_type, "text")
    document.line_break = _LINE_BREAKS.get(file_type, PIP_LINE_BREAK)
    return document


def _lines(text: str, line_break: re.Pattern = LF):
    """(offset, line) of each line, without its line ending."""
    offset = 0
    for end in line_break.finditer(text):
        yield offset, text[offset:end.start()].rstrip("\r")
        offset = end.end()
    yield offset, text[offset:].rstrip("\r")


# pip's comment: from a `#` at the start of a line or after blanks.
_PIP_COMMENT = re.compile(r"(?:^|\s)(#.*)$", re.DOTALL)


def _requirements_txt(text: str) -> _Read:
    """Lines as pip reads them: a line ending in `\\` goes on on the next
    (unless it is a comment), and a comment runs to the end of the joined line."""
    read, pieces = _Read(), []  # pieces: (offset, text) of the lines joined so far
    for offset, line in _lines(text, PIP_LINE_BREAK):
        if line.endswith("\\") and not re.match(r"\s*#", line):
            pieces.append((offset, line.rstrip("\\")))
            continue
        pieces.append((offset, line))
        _logical_line(pieces, read)
        pieces = []
    if pieces:
        _logical_line(pieces, read)
    return read


def _logical_line(pieces: list[tuple[int, str]], read: _Read) -> None:
    """Read one line as pip joins it from ``pieces`` of the file."""
    joined = "".join(piece for _, piece in pieces)
    where = [offset + index for offset, piece in pieces for index in range(len(piece))]
    where.append(pieces[-1][0] + len(pieces[-1][1]))  # the joined text's end, in the file
    comment = _PIP_COMMENT.search(joined)
    body = joined[: comment.start(1)] if comment else joined
    if comment:
        start = comment.start(1)
        for offset, piece in pieces:  # the comment's part of each line it runs over
            if offset + len(piece) > where[start] and piece:
                first = max(where[start], offset)
                read.comments.append(Span(first, offset + len(piece)))
    requirement = body.strip()
    if requirement:
        first = len(body) - len(body.lstrip())
        last = first + len(requirement)
        read.found.append(Word(" ".join(requirement.split()), Span(where[first], where[last - 1] + 1)))
    if len(pieces) > 1:
        read.statements.append(Span(pieces[0][0], where[-1]))


# TOML's strings and comments, in the order a reader meets them.
_TOML_TOKEN = re.compile(
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'  # a multi-line basic string
    r"|'''.*?'''"  # a multi-line literal string
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'  # a basic string
    r"|'[^'\n]*'"  # a literal string
    r"|#[^\r\n]*",  # a comment
    re.DOTALL,
)


def _pyproject(text: str) -> _Read:
    tomllib = toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise FormatError(str(exc).split(" (at ")[0], int(line.group(1)) if line else None) from None
    wanted = _project_requirements(data)
    read, strings = _Read(), []
    for token in _TOML_TOKEN.finditer(text):
        if token.group().startswith("#"):
            read.comments.append(Span(token.start(), token.end()))
            continue
        strings.append(Span(token.start(), token.end()))
        inner = token.group()[1:-1]
        if token.group()[:3] not in ('"""', "'''") and inner in wanted:
            read.found.append(Word(inner, Span(token.start() + 1, token.end() - 1)))
    comments = {span.start: span for span in read.comments}
    section, inside = "", _Inside(strings)
    for offset, line in _lines(text):
        if inside(offset):
            continue  # a line of a multi-line string
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
            continue
        entry = _POETRY_ENTRY.match(line)
        if entry and section.startswith("[tool.poetry") and "dependencies" in section:
            comment = next((comments[o] for o in range(offset, offset + len(line)) if o in comments), None)
            end = offset + len(line[: comment.start - offset if comment else len(line)].rstrip())
            read.found.append(Word(text[offset + entry.start(1):end], Span(offset + entry.start(1), end)))
    return read


class _Inside:
    """Whether an offset falls within one of some sorted spans."""

    def __init__(self, spans: list[Span]) -> None:
        self._spans = spans
        self._starts = [span.start for span in spans]

    def __call__(self, offset: int) -> bool:
        index = bisect.bisect_right(self._starts, offset) - 1
        return index >= 0 and self._spans[index].start < offset < self._spans[index].end


def _project_requirements(data: dict) -> set:
    project = data.get("project", {})
    found = set(project.get("dependencies", []) or [])
    for group in (project.get("optional-dependencies", {}) or {}).values():
        found |= set(group or [])
    for group in (data.get("dependency-groups", {}) or {}).values():
        found |= {r for r in group or [] if isinstance(r, str)}
    return {r for r in found if isinstance(r, str)}


def _setup_cfg(text: str) -> _Read:
    """`install_requires` of [options] and every key of [options.extras_require];
    comments: whole lines (`#`, `;`), and in requirements what follows a blank
    and `#` (setuptools drops it)."""
    read, section, reading = _Read(), "", False
    for offset, line in _lines(text, ANY_EOL):
        stripped = line.strip()
        if stripped.startswith(("#", ";")):
            read.comments.append(Span(offset + line.index(stripped[0]), offset + len(line)))
            continue
        if stripped.startswith("["):
            section, reading = stripped, False
            continue
        if line[:1] not in (" ", "\t") and "=" in line:
            key, _, value = line.partition("=")
            reading = (section == "[options]" and key.strip() in ("install_requires", "setup_requires")) or (
                section == "[options.extras_require]"
            )
            line, offset = value, offset + len(key) + 1
        if reading:
            comment = re.search(r"\s(#.*)", line)
            if comment:
                read.comments.append(Span(offset + comment.start(1), offset + len(line)))
            for part in _parts(line):
                start = offset + line.index(part)
                read.found.append(Word(part, Span(start, start + len(part))))
    return read


def _parts(value: str) -> list[str]:
    """The requirement on a value line, without a trailing comment."""
    body = re.split(r"\s[#;]", value, 1)[0].strip()
    return [body] if body else []
