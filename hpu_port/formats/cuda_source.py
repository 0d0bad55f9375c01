"""CUDA sources (`.cu`, `.cuh`): read as a whole; comments are `//` and `/* */`."""

from __future__ import annotations

import re

from hpu_port.formats import Document, Span

# Comments, and the literals a `//` inside is not a comment of. A block
# comment or raw string left open runs to the end of the file, and an escape
# outside a literal is passed over: were the search to fail there, it would
# read on from every `/*`, `R"(` or `\"` after it.
_TOKEN = re.compile(
    r"//[^\n\\]*(?:\\(?:\r\n|.)[^\n\\]*)*"  # a line comment (a `\` at the end of a line continues it)
    r"|/\*.*?(?:\*/|\Z)"  # a block comment
    r'|(?<![A-Za-z0-9_])(?:u8|[uUL])?R"([^()\\\s]{0,16})\(.*?(?:\)\1"|\Z)'  # a raw string
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'  # a string
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"  # a character
    r"|\\.",  # an escape outside a literal
    re.DOTALL,
)


class CudaDocument(Document):
    format = "cuda"
    language = "cuda"
    finds_comments = True
    comment = "//"

    def comment_spans(self) -> list[Span]:
        return [Span(m.start(), m.end()) for m in _TOKEN.finditer(self.text) if m.group().startswith("/")]


def parse(text: str, path: str = "", file_type: str = "cuda") -> CudaDocument:
    return CudaDocument(text, path)
