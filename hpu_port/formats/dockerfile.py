"""Dockerfiles (and Containerfiles): instructions with their spans.

`FROM` gives an image, `ENV` and `ARG` give assignments, and the shell form
of `RUN` is parsed as a shell script (``hpu_port.formats.shell``), its spans
moved to where the command stands in the Dockerfile. Here-documents (`RUN
<<EOF`) are kept as bodies, not read as instructions.
"""

from __future__ import annotations

import re
from typing import Optional

from hpu_port.formats import Assignment, Command, Document, FormatError, Span, Word

_INSTRUCTION = re.compile(r"[ \t]*([A-Za-z]+)(?:[ \t]+|$)")
_HEREDOC = re.compile(r"<<-?[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")
_KEY_VALUE = re.compile(r"""([A-Za-z_][A-Za-z0-9_.-]*)=("(?:[^"\\]|\\.)*"|'[^']*'|(?:[^\s\\]|\\.)*)""")


class DockerfileDocument(Document):
    format = "dockerfile"
    language = "dockerfile"

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self._comments: list[Span] = []
        self._images: list[Word] = []
        self._assignments: list[Assignment] = []
        self._commands: list[Command] = []
        self._read()

    def commands(self) -> list[Command]:
        return self._commands

    def assignments(self) -> list[Assignment]:
        return self._assignments

    def images(self) -> list[Word]:
        return self._images

    def comment_spans(self) -> list[Span]:
        return self._comments

    def _read(self) -> None:
        text, position = self.text, 0
        while position < len(text):
            end = _line_end(text, position)
            line = text[position:end]
            if line.lstrip().startswith("#"):
                self._comments.append(Span(position + line.index("#"), end))
                position = end + 1
                continue
            match = _INSTRUCTION.match(line)
            if not line.strip() or match is None:
                position = end + 1
                continue
            finish = _instruction_end(text, position)
            arguments = Span(position + match.end(), finish)
            heredoc = _HEREDOC.search(text, arguments.start, finish)
            if heredoc:
                finish = _heredoc_end(text, finish, heredoc.group(1))
            self._instruction(match.group(1).upper(), arguments, heredoc is not None)
            position = finish + 1

    def _instruction(self, name: str, arguments: Span, has_heredoc: bool) -> None:
        body = self.text[arguments.start:arguments.end]
        if name == "FROM":
            for part in re.finditer(r"\S+", body):
                if not part.group().startswith("--"):
                    start = arguments.start + part.start()
                    self._images.append(Word(part.group(), Span(start, start + len(part.group()))))
                    break
        elif name in ("ENV", "ARG"):
            self._assignments += _key_values(body, arguments.start)
        elif name == "RUN" and not has_heredoc and not body.lstrip().startswith("["):
            self._run(arguments)

    def _run(self, arguments: Span) -> None:
        from hpu_port.formats import shell

        try:
            script = shell.parse(self.text[arguments.start:arguments.end])
        except FormatError:
            return  # a RUN line the shell parser cannot read: nothing is matched in it
        shift = arguments.start
        self._commands += [_moved_command(c, shift) for c in script.commands() if not c.words[0].value.startswith("#")]
        self._assignments += [Assignment(_moved(a.name, shift), _moved(a.value, shift)) for a in script.assignments()]


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def _instruction_end(text: str, position: int) -> int:
    """Where an instruction ends: the first line end not escaped by `\\`;
    comment lines inside a continued instruction do not end it."""
    while True:
        end = _line_end(text, position)
        if end >= len(text) or not text[position:end].rstrip().endswith("\\"):
            return end
        position = end + 1
        while position < len(text) and text[position:_line_end(text, position)].lstrip().startswith("#"):
            position = _line_end(text, position) + 1


def _heredoc_end(text: str, position: int, marker: str) -> int:
    match = re.compile(rf"^[ \t]*{re.escape(marker)}[ \t]*\r?$", re.MULTILINE).search(text, position)
    return match.end() if match else len(text)


def _key_values(body: str, offset: int) -> list[Assignment]:
    found = []
    pairs = list(_KEY_VALUE.finditer(body))
    if pairs:
        for pair in pairs:
            name = Word(pair.group(1), Span(offset + pair.start(1), offset + pair.end(1)))
            raw = pair.group(2)
            quote = raw[0] if raw[:1] in ("'", '"') and len(raw) > 1 else ""
            value = raw[1:-1] if quote else raw
            found.append(Assignment(name, Word(value, Span(offset + pair.start(2), offset + pair.end(2)), quote)))
        return found
    legacy = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+(.*?))?\s*$", body, re.DOTALL)
    if legacy:  # `ENV NAME value`
        name = Word(legacy.group(1), Span(offset + legacy.start(1), offset + legacy.end(1)))
        value = Word(legacy.group(2), Span(offset + legacy.start(2), offset + legacy.end(2))) if legacy.group(2) else None
        found.append(Assignment(name, value))
    return found


def _moved(word: Optional[Word], shift: int) -> Optional[Word]:
    if word is None:
        return None
    return Word(word.value, Span(word.span.start + shift, word.span.end + shift), word.quote)


def _moved_command(command: Command, shift: int) -> Command:
    words = tuple(_moved(w, shift) for w in command.words)
    return Command(words, Span(command.span.start + shift, command.span.end + shift), command.plain)


def parse(text: str, path: str = "", file_type: str = "dockerfile") -> DockerfileDocument:
    return DockerfileDocument(text, path)
