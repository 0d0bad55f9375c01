"""CMake files: only their comments are told apart (`#` and `#[[...]]`);
rules match the rest of the text."""

from __future__ import annotations

import re

from hpu_port.formats import Document, Span

# What a `#` inside is not a comment of, and the comments, in the order CMake
# meets them. A bracket left open runs to the end of the file: were it not
# to match, the search would read on to the end from every `[[` after it.
_TOKEN = re.compile(
    r"#\[(=*)\[.*?(?:\]\1\]|\Z)"  # a bracket comment
    r"|#[^\n]*"  # a line comment
    r'|"[^"\\]*(?:\\.[^"\\]*)*"'  # a quoted argument
    r"|(?<![^\s(])\[(=*)\[.*?(?:\]\2\]|\Z)"  # a bracket argument
    r"|\\.",  # an escape sequence in an unquoted argument (`\"`, `\#`)
    re.DOTALL,
)


class CMakeDocument(Document):
    format = "cmake"
    language = "cmake"
    finds_comments = True

    def comment_spans(self) -> list[Span]:
        return [Span(m.start(), m.end()) for m in _TOKEN.finditer(self.text) if m.group().startswith("#")]


def parse(text: str, path: str = "", file_type: str = "cmake") -> CMakeDocument:
    return CMakeDocument(text, path)
