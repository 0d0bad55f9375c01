"""Dockerfiles (and Containerfiles): instructions with their spans.

`FROM` gives an image, `ENV` and `ARG` give assignments. The shell form of
`RUN` is read as a shell script (``hpu_port.formats.embedded``), its spans in
the Dockerfile; so is the body of a `RUN <<EOF` here-document that a shell
runs, and the script of an exec form `RUN ["bash", "-c", "..."]` (where its
JSON string holds escapes, its findings are reported only). Other exec forms
are commands whose words are never edited. The `# escape=` parser directive
is obeyed; `RUN` lines under an `escape` other than `\\` or after a `SHELL`
instruction that picks another shell (PowerShell, cmd) are not read as POSIX
shell, and are listed as unread.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from hpu_port.formats import Assignment, Command, Document, Span, Word
from hpu_port.formats.embedded import Copy, EmbeddedShell, Glue, Scripts

_INSTRUCTION = re.compile(r"[ \t]*([A-Za-z]+)(?:[ \t]+|$)")
_HEREDOC = re.compile(r"<<-?[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")
# Runs of plain characters are matched in one step, escapes one at a time:
# an alternation per character would keep a backtracking point for each.
_KEY_VALUE = re.compile(r"""([A-Za-z_][A-Za-z0-9_.-]*)=("[^"\\]*(?:\\.[^"\\]*)*"|'[^']*'|[^\s\\]*(?:\\.[^\s\\]*)*)""")
_DIRECTIVE = re.compile(r"#[ \t]*([A-Za-z]+)[ \t]*=[ \t]*(\S*)[ \t]*\r?$")
# A quote in a flag's value is the start of a quoted part when another
# follows it, else a character like any other: each quote is read one way
# only (read both ways, 40 quotes took the search minutes).
_RUN_FLAG = re.compile(r"--[a-z-]+(?:=(?:\"[^\"]*\"|[^\s\"]|\"(?![^\"]*\"))*)?[ \t]+")
_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})


class DockerfileDocument(Document):
    format = "dockerfile"
    language = "dockerfile"
    finds_comments = True

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self._comments: list[Span] = []
        self._images: list[Word] = []
        self._assignments: list[Assignment] = []
        self._commands: list[Command] = []  # exec forms
        self._references: list[Word] = []
        self._unread: list[Word] = []
        self._instructions: list[Span] = []  # without their here-documents' bodies
        self._shell = Scripts(text)
        self._escape = "\\"
        self._posix_shell = True
        self._read()

    def commands(self) -> list[Command]:
        return sorted(self._commands + self._shell.commands, key=lambda c: c.span.start)

    def assignments(self) -> list[Assignment]:
        return sorted(self._assignments + self._shell.assignments, key=lambda a: a.name.span.start)

    def script_variables(self) -> list[Assignment]:
        # The file's own variables; each recipe line or `RUN` is a shell of its own.
        return list(self._assignments)

    def references(self) -> list[Word]:
        return self._references + self._shell.references

    def images(self) -> list[Word]:
        return self._images

    def requirements(self) -> list[Word]:
        from hpu_port.formats.shell import installed

        return installed(self.commands())

    def comment_spans(self) -> list[Span]:
        return sorted(self._comments + self._shell.comments, key=lambda span: span.start)

    def unread(self) -> list[Word]:
        return self._unread + self._shell.unread

    def statements(self) -> list[Span]:
        return self._instructions + self._shell.statements

    def exact(self, span: Span) -> bool:
        return self._shell.exact(span)

    def _read(self) -> None:
        text, position, directives = self.text, 0, True
        while position < len(text):
            end = _line_end(text, position)
            line = text[position:end]
            if line.lstrip().startswith("#"):
                directive = _DIRECTIVE.match(line.strip()) if directives else None
                if directive is None:
                    directives = False
                elif directive.group(1).lower() == "escape" and directive.group(2) in ("`", "\\"):
                    self._escape = directive.group(2)
                self._comments.append(Span(position + line.index("#"), end))
                position = end + 1
                continue
            directives = False
            match = _INSTRUCTION.match(line)
            if not line.strip() or match is None:
                position = end + 1
                continue
            finish = _instruction_end(text, position, self._escape)
            arguments = Span(position + match.end(), finish)
            heredoc = _HEREDOC.search(text, arguments.start, finish)
            body = marker = None
            if heredoc:
                marker_end = _line_end(text, heredoc.end())
                finish, body_end = _heredoc_end(text, marker_end, heredoc.group(1))
                body = Span(min(marker_end + 1, body_end), body_end)
                marker = Span(heredoc.start(), heredoc.end())
                arguments = Span(arguments.start, marker_end)
            self._instructions.append(Span(position, arguments.end))
            self._instruction(match.group(1).upper(), arguments, body, marker)
            position = finish + 1

    def _instruction(self, name: str, arguments: Span, body: Optional[Span], marker: Optional[Span]) -> None:
        text = self.text[arguments.start:arguments.end]
        if name == "FROM":
            for part in re.finditer(r"\S+", text):
                if not part.group().startswith("--"):
                    start = arguments.start + part.start()
                    self._images.append(Word(part.group(), Span(start, start + len(part.group()))))
                    self._images += self._image_arguments(part.group())
                    self._images += self._expanded_image(part.group(), Span(start, start + len(part.group())))
                    break
        elif name in ("ENV", "ARG"):
            self._assignments += _key_values(text, arguments.start)
            self._references += [_word_at(m, 1, arguments.start) for m in _REFERENCE.finditer(text)]
        elif name == "SHELL":
            shell = _exec_form(text)
            self._posix_shell = bool(shell) and _program(shell[0]) in POSIX_SHELLS
        elif name == "RUN":
            self._run(arguments, body, marker)

    def _image_arguments(self, image: str) -> list[Word]:
        """`FROM ${BASE_IMAGE}`: the default `ARG BASE_IMAGE=...` gives is the image."""
        named = _IMAGE_ARGUMENT.match(image)
        if named is None:
            return []
        return [a.value for a in self._assignments if a.name.value == named.group(1) and a.value is not None and a.value.value]

    def _expanded_image(self, image: str, span: Span) -> list[Word]:
        """`FROM pytorch/$IMG_REPO:$IMG_TAG`: the image the `ARG` defaults
        spell, at the `FROM` line, when every argument it names has one (an
        image that starts with one is ``_image_arguments``')."""
        names = [m.group(1) for m in _IMAGE_ARGUMENT.finditer(image)]
        if not names or _IMAGE_ARGUMENT.match(image):
            return []
        defaults = {a.name.value: a.value.value for a in self._assignments if a.value is not None and a.value.value}
        if not all(name in defaults for name in names):
            return []
        return [Word(_IMAGE_ARGUMENT.sub(lambda m: defaults[m.group(1)], image), span)]

    def _run(self, arguments: Span, body: Optional[Span], marker: Optional[Span]) -> None:
        flags = _RUN_FLAG.match(self.text, arguments.start, arguments.end)
        start = flags.end() if flags else arguments.start
        while flags:  # `--mount=...`, `--network=...`: options of RUN, not of the command
            start = flags.end()
            flags = _RUN_FLAG.match(self.text, start, arguments.end)
        script = Span(start, arguments.end if body is None else body.end)
        if self._escape != "\\" or not self._posix_shell:
            self._unread.append(Word("RUN", script))
            return
        if self.text.startswith("[", start):
            self._exec_run(Span(start, arguments.end))
            return
        line = Span(start, arguments.end)
        if body is None:
            self._embed(_as_the_shell_sees_it(self.text, line), line)
            return
        # `RUN <<EOF`, `RUN bash -e <<EOF`, `RUN python3 <<EOF`: the command
        # line is read with the here-document's marker blanked out; the body
        # is a script when a shell (or nothing) reads it.
        blank = Glue(" " * (marker.end - marker.start), marker.start, marker.end - marker.start)
        command = [Copy(Span(start, marker.start)), blank, Copy(Span(marker.end, arguments.end))]
        reader = self._embed(command, line) if self.text[start:arguments.end].strip() != self.text[marker.start:marker.end] else None
        if _runs_body_as_shell(reader, self.text[body.start:body.end]):
            self._embed([Copy(body)], body)

    def _exec_run(self, span: Span) -> None:
        """`RUN ["prog", "arg", ...]`: no shell unless the program is one given `-c`."""
        words = _exec_words(self.text, span)
        if words is None:
            self._unread.append(Word("RUN", span))
            return
        if len(words) >= 3 and _program(words[0].value) in POSIX_SHELLS and re.fullmatch(r"-[a-z]*c", words[1].value):
            script = words[2]
            raw = self.text[script.inner.start:script.inner.end]
            parts = [Copy(script.inner)] if raw == script.value else [Glue(script.value, script.span.start)]
            self._embed(parts, script.span)
            return
        self._commands.append(Command(tuple(words), span, True))

    def _embed(self, parts: list, region: Span) -> EmbeddedShell:
        return self._shell.add(parts, region, "RUN")


def _as_the_shell_sees_it(text: str, span: Span) -> list:
    """The parts of a continued `RUN` line that Docker hands to the shell:
    comment lines inside it are dropped, and blanks after a line's closing
    `\\` are not passed on (bash would read `\\ ` as an escaped space)."""
    parts, position = [], span.start
    while position < span.end:
        end = min(_line_end(text, position), span.end)
        line = text[position:end]
        if position > span.start and line.lstrip().startswith("#"):
            position = end + 1
            continue
        content = line.rstrip()
        if content.endswith("\\") and end < span.end:
            parts += [Copy(Span(position, position + len(content))), Glue("\n", position + len(content))]
        else:
            parts.append(Copy(Span(position, end)))
        position = end + 1
    return parts


def _runs_body_as_shell(reader: Optional[EmbeddedShell], body: str) -> bool:
    """Whether a here-document is the script itself: `RUN <<EOF` alone (or
    fed to `bash`/`sh`), without a shebang naming another interpreter."""
    first = body.split("\n", 1)[0]
    if first.startswith("#!") and not any(re.search(rf"\b{name}\b", first) for name in POSIX_SHELLS):
        return False
    if reader is None:
        return True
    commands, _, _, _ = reader.views()
    if reader.error is not None:
        return False
    programs = [c.program for c in commands if c.words and c.words[0].value]
    return not programs or programs[0] in POSIX_SHELLS


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end


def _instruction_end(text: str, position: int, escape: str) -> int:
    """Where an instruction ends: the first line end not escaped by the escape
    character; comment lines inside a continued instruction do not end it."""
    while True:
        end = _line_end(text, position)
        if end >= len(text) or not text[position:end].rstrip().endswith(escape):
            return end
        position = end + 1
        while position < len(text) and text[position:_line_end(text, position)].lstrip().startswith("#"):
            position = _line_end(text, position) + 1


def _heredoc_end(text: str, position: int, marker: str) -> tuple[int, int]:
    """(end of the terminator line, start of it) of the here-document after ``position``."""
    match = re.compile(rf"^[ \t]*{re.escape(marker)}[ \t]*\r?$", re.MULTILINE).search(text, position + 1)
    return (match.end(), match.start()) if match else (len(text), len(text))


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _exec_form(text: str) -> Optional[list[str]]:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _exec_words(text: str, span: Span) -> Optional[list[Word]]:
    """The strings of a JSON array with their spans (quoted: never edited in place)."""
    from hpu_port.formats import FormatError, json as json_format

    try:
        document = json_format.parse(text[span.start:span.end])
    except FormatError:
        return None
    items = [e for e in document.entries() if len(e.path) == 1 and e.value is not None and isinstance(e.raw, str)]
    if len(items) != len([e for e in document.entries() if len(e.path) == 1]):
        return None
    shift = span.start
    return [Word(e.value.value, Span(e.span.start + shift, e.span.end + shift), '"') for e in items]


def _word_at(match: re.Match, group: int, offset: int) -> Word:
    return Word(match.group(group), Span(offset + match.start(group), offset + match.end(group)))


def _key_values(body: str, offset: int) -> list[Assignment]:
    found = []
    pairs = list(_KEY_VALUE.finditer(body))
    if pairs:
        for pair in pairs:
            name = _word_at(pair, 1, offset)
            raw = pair.group(2)
            quote = raw[0] if raw[:1] in ("'", '"') and len(raw) > 1 else ""
            value = raw[1:-1] if quote else raw
            found.append(Assignment(name, Word(value, Span(offset + pair.start(2), offset + pair.end(2)), quote)))
        return found
    legacy = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+(.*?))?\s*$", body, re.DOTALL)
    if legacy:  # `ENV NAME value`
        name = _word_at(legacy, 1, offset)
        value = _word_at(legacy, 2, offset) if legacy.group(2) else None
        found.append(Assignment(name, value))
    return found


_IMAGE_ARGUMENT = re.compile(r"\$\{?(\w+)(?::-[^}]*)?\}?")


def parse(text: str, path: str = "", file_type: str = "dockerfile") -> DockerfileDocument:
    return DockerfileDocument(text, path)
