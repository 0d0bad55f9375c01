"""Environment files (`.env`): `NAME=value` lines, as docker compose and
python-dotenv read them.

They are not shell scripts: a value may hold what a shell would not accept
(`PASSWORD=abc(def)`). Each line is `[export] NAME=value`, the value bare,
or in single or double quotes; `#` starts a comment at the start of a line
or after a blank.
"""

from __future__ import annotations

import re

from hpu_port.formats import Assignment, Document, Span, Word

_LINE = re.compile(r"[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.]*)[ \t]*=[ \t]*")
_COMMENT = re.compile(r"(?:^|(?<=[ \t]))#")


class DotenvDocument(Document):
    format = "dotenv"
    language = "sh"
    finds_comments = True

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self._assignments: list[Assignment] = []
        self._comments: list[Span] = []
        position = 0
        for line in text.splitlines(keepends=True):
            self._read(line.rstrip("\r\n"), position)
            position += len(line)

    def assignments(self) -> list[Assignment]:
        return self._assignments

    def comment_spans(self) -> list[Span]:
        return self._comments

    def _read(self, line: str, start: int) -> None:
        match = _LINE.match(line)
        if match is None:
            comment = _COMMENT.search(line)
            if comment is not None:
                self._comments.append(Span(start + comment.start(), start + len(line)))
            return
        name = Word(match.group(1), Span(start + match.start(1), start + match.end(1)))
        rest, at = line[match.end():], start + match.end()
        quote = rest[:1] if rest[:1] in ("'", '"') else ""
        if quote and rest.find(quote, 1) > 0:
            end = rest.find(quote, 1) + 1
            value = Word(rest[1:end - 1], Span(at, at + end), quote)
            tail = end
        else:
            comment = _COMMENT.search(rest)
            raw = (rest if comment is None else rest[:comment.start()]).rstrip(" \t")
            value = Word(raw, Span(at, at + len(raw)))
            tail = len(raw)
        comment = _COMMENT.search(rest, tail)
        if comment is not None:
            self._comments.append(Span(at + comment.start(), start + len(line)))
        self._assignments.append(Assignment(name, value))


def parse(text: str, path: str = "", file_type: str = "dotenv") -> DotenvDocument:
    return DotenvDocument(text, path)
