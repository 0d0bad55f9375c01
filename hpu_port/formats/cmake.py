"""CMake files: only their comments are told apart (`#` and `#[[...]]`);
rules match the rest of the text."""

from __future__ import annotations

import re

from hpu_port.formats import Document, Span

_COMMENT = re.compile(r'#\[(=*)\[.*?\]\1\]|#[^\n]*|"(?:[^"\\]|\\.)*"', re.DOTALL)


class CMakeDocument(Document):
    format = "cmake"
    language = "cmake"

    def comment_spans(self) -> list[Span]:
        return [Span(m.start(), m.end()) for m in _COMMENT.finditer(self.text) if m.group().startswith("#")]


def parse(text: str, path: str = "", file_type: str = "cmake") -> CMakeDocument:
    return CMakeDocument(text, path)
