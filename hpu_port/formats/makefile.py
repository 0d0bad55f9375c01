"""Makefiles and Apptainer (Singularity) definition files: shell inside a host.

A Makefile's recipes are shell lines (each starts with a tab, and may go on
over `\\`-ended lines); its variable assignments (`X = 1`, `export X := 1`)
set variables that recipes and the programs they run see. An Apptainer
definition names its base image in its header (`From: nvcr.io/...`) and
runs shell in its sections (`%post`, `%environment`, `%runscript`, ...).
Each script is read by the shell parser, its views given in the host's
spans (``formats.embedded``); the host's own lines are read here.
"""

from __future__ import annotations

import re

from hpu_port.formats import Assignment, Command, Document, Span, Word
from hpu_port.formats.embedded import Copy, Scripts

_LINE = re.compile(r"[^\n]*\n?")
_MAKE_ASSIGNMENT = re.compile(r"(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:\?|:|::|\+|!)?=[ \t]*")
# Reads of a variable: make's `$(NAME)` / `${NAME}`, and the shell's `$$NAME` in a recipe.
_MAKE_READ = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]|\$\$\{?([A-Za-z_][A-Za-z0-9_]*)")
# A recipe line's prefixes: `@` (do not echo), `-` (ignore errors), `+` (run under -n).
_RECIPE_PREFIX = re.compile(r"\t[@+\-]*[ \t]*")
_SECTION = re.compile(r"%(\w+)")
_HEADER = re.compile(r"(\w+):[ \t]*(\S+)")
# Sections of an Apptainer definition that hold shell; `%files`, `%labels` and `%help` hold data.
_SHELL_SECTIONS = frozenset({"setup", "post", "environment", "runscript", "startscript", "test"})


class _HostDocument(Document):
    """A document whose scripts are embedded shell (``Scripts``)."""

    finds_comments = False

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self._shell = Scripts(text)
        self._assignments: list[Assignment] = []
        self._images: list[Word] = []
        self._comments: list[Span] = []

    def commands(self) -> list[Command]:
        return self._shell.commands

    def assignments(self) -> list[Assignment]:
        return sorted(self._assignments + self._shell.assignments, key=lambda a: a.name.span.start)

    def script_variables(self) -> list[Assignment]:
        # The file's own variables; each recipe line or `RUN` is a shell of its own.
        return list(self._assignments)

    def references(self) -> list[Word]:
        return self._shell.references + self._reads

    _reads: list = []

    def entries(self) -> list:
        from hpu_port.formats.shell import override_entries

        return override_entries(self._shell.commands)

    def images(self) -> list[Word]:
        from hpu_port.formats.shell import container_images

        return self._images + container_images(self._shell.commands)

    def requirements(self) -> list[Word]:
        from hpu_port.formats.shell import installed

        return installed(self._shell.commands)

    def comment_spans(self) -> list[Span]:
        return sorted(self._comments + self._shell.comments, key=lambda span: span.start)

    def statements(self) -> list[Span]:
        return self._shell.statements

    def unread(self) -> list[Word]:
        return self._shell.unread

    def exact(self, span: Span) -> bool:
        return self._shell.exact(span)

    def _lines(self):
        """(start, end) of each line, its line break (LF or CRLF) left out."""
        for match in _LINE.finditer(self.text):
            if match.start() == match.end():
                break
            line = match.group()
            yield match.start(), match.end() - len(line) + len(line.rstrip("\r\n"))


class MakefileDocument(_HostDocument):
    format = "makefile"
    language = "makefile"

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        lines = list(self._lines())
        self._reads = [
            Word(m.group(1) or m.group(2), Span(m.start(1) if m.group(1) else m.start(2), m.end(1) if m.group(1) else m.end(2)))
            for m in _MAKE_READ.finditer(text)
        ]
        index = 0
        while index < len(lines):
            start, end = lines[index]
            line = text[start:end]
            if line.startswith("\t"):
                index = self._recipe(lines, index)
                continue
            if line.lstrip().startswith("#"):
                self._comments.append(Span(start + line.index("#"), end))
            else:
                self._assignment(line, start)
            index += 1

    def _recipe(self, lines: list, index: int) -> int:
        """Read the recipe line at ``index`` (with the lines it continues on); the index after it."""
        start, end = lines[index]
        prefix = _RECIPE_PREFIX.match(self.text, start)
        first = index
        while self.text[lines[index][0]:lines[index][1]].endswith("\\") and index + 1 < len(lines):
            index += 1
        end = lines[index][1]
        self._shell.add([Copy(Span(prefix.end(), end))], Span(lines[first][0], end), "recipe")
        return index + 1

    def _assignment(self, line: str, start: int) -> None:
        match = _MAKE_ASSIGNMENT.match(line)
        if match is None:
            return
        rest = line[match.end():]
        comment = rest.find("#")
        value = (rest if comment < 0 else rest[:comment]).rstrip(" \t")
        name = Word(match.group(1), Span(start + match.start(1), start + match.end(1)))
        self._assignments.append(Assignment(name, Word(value, Span(start + match.end(), start + match.end() + len(value)))))


class ApptainerDocument(_HostDocument):
    format = "apptainer"
    language = "singularity"

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        section, body_start = None, None
        for start, end in self._lines():
            line = text[start:end]
            header = _SECTION.match(line)
            if header is not None:
                self._section(section, body_start, start)
                section, body_start = header.group(1).lower(), None
                continue
            if section is None:
                self._header(line, start)
            elif body_start is None:
                body_start = start
        self._section(section, body_start, len(text))

    def _header(self, line: str, start: int) -> None:
        if line.lstrip().startswith("#"):
            self._comments.append(Span(start + line.index("#"), start + len(line)))
            return
        match = _HEADER.match(line)
        if match is not None and match.group(1).lower() == "from":
            self._images.append(Word(match.group(2), Span(start + match.start(2), start + match.end(2))))

    def _section(self, section, body_start, end: int) -> None:
        if section in _SHELL_SECTIONS and body_start is not None and body_start < end:
            self._shell.add([Copy(Span(body_start, end))], Span(body_start, end), f"%{section}")


def parse(text: str, path: str = "", file_type: str = "makefile") -> Document:
    if file_type == "apptainer":
        return ApptainerDocument(text, path)
    return MakefileDocument(text, path)
