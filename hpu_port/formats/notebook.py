"""The shell inside notebooks: `!` lines, `%env`, `%pip`, `%%bash` cells.

A notebook's code cells are Python with IPython's additions; the additions
are masked before the cells are ported as Python (``hpu_port.notebooks``).
Those that run a shell or set the environment are read here as shell
scripts: `!cmd`, `!!cmd` and `%sx cmd` (`x = !cmd` captures what the command
prints, so its commands are not plain), `%pip`/`%conda` lines, `%env NAME=value`
and `%set_env` (read as `export`), `%env NAME` (a read of the variable), and
cells under `%%bash`, `%%sh` or `%%script bash`. Cells under other cell
magics, and line magics that run Python code (`%timeit`), are unread parts.

The lines and cells are gathered into one text of *units*, each after a
marker line, so that the document engine finds, suppresses, edits and
re-parses them like any file; ``join`` builds that text and ``split`` gives
each unit's new text back. A unit's lines are the cell's own lines, so a
finding's line and column within its unit are its line and column in the cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from hpu_port import notebooks
from hpu_port.formats import Document, Span, Word
from hpu_port.formats.embedded import Copy, Glue, Scripts

# Marker lines are this, or this with a number when a unit holds this text, then " line" or " cell".
MARK = "#@hpu-port"
_CAPTURE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*\s*=\s*")
_MAGIC = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)[ \t]*")
_SHELL_MAGICS = frozenset({"sx", "system"})
_INSTALL_MAGICS = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
_ENV_MAGICS = frozenset({"env", "set_env"})
_PYTHON_LINE_MAGICS = frozenset({"time", "timeit", "prun", "debug", "run"})
_SHELLS = frozenset({"bash", "sh"})


@dataclass(frozen=True)
class Unit:
    """A masked line (``key``: its placeholder number) or a whole cell (``key`` None)."""

    cell: int  # code-cell number
    line: int  # the unit's first line in its cell, 1-based
    key: Optional[int] = None
    trailing_newline: bool = False
    more: tuple = ()  # the placeholders of the lines that continue a masked line


def join(notebook: notebooks.Notebook) -> tuple[str, list[Unit]]:
    """The notebook's shell units as one text, and what each unit is."""
    units = []
    for key, line in notebook.magics.items():
        if key in notebook.continuing and units:
            # One unit for a line and those that continue it: the shell reads them as one command.
            unit, text = units[-1]
            units[-1] = (Unit(unit.cell, unit.line, unit.key, more=unit.more + (key,)), text + "\n" + line)
            continue
        cell, line_number = notebook.places[key]
        units.append((Unit(cell, line_number, key), line))
    for number in sorted(notebook.skipped):
        source = notebook.cell_source(number)
        if written(source):
            continue  # ported as the file it writes (see engine.port_notebook)
        text = source[:-1] if source.endswith("\n") else source
        units.append((Unit(number, 1, None, source.endswith("\n")), text))
    units.sort(key=lambda pair: (pair[0].cell, pair[0].line))
    # Marker lines no unit contains, so that none of the user's lines reads as one.
    line_mark, cell_mark = _marks(notebooks.unused_tag((text for _, text in units), MARK))
    pieces = [f"{line_mark if unit.key is not None else cell_mark}\n{text}\n" for unit, text in units]
    return "".join(pieces), [unit for unit, _ in units]


def _marks(tag: str) -> tuple[str, str]:
    """The marker lines before a masked line and before a whole cell."""
    return f"{tag} line", f"{tag} cell"


def _marks_of(text: str) -> tuple[str, str]:
    """The marker lines of a text ``join`` made: it starts with one."""
    return _marks(text.split("\n", 1)[0].rsplit(" ", 1)[0])


def split(text: str) -> list[str]:
    """Each unit's text, in order, from a text ``join`` made (after edits)."""
    marks = _marks_of(text)
    found: list[list[str]] = []
    for line in text.split("\n")[:-1]:
        if line in marks:
            found.append([])
        else:
            found[-1].append(line)
    return ["\n".join(lines) for lines in found]


def place(text: str, units: list[Unit], line: int) -> tuple[int, int]:
    """(code-cell number, line in the cell) of a line of the joined text."""
    marks = _marks_of(text)
    unit_index, marker_line = -1, 0
    for number, content in enumerate(text.split("\n"), 1):
        if number > line:
            break
        if content in marks:
            unit_index, marker_line = unit_index + 1, number
    unit = units[max(unit_index, 0)]
    return unit.cell, unit.line + max(line - marker_line - 1, 0)


def written(source: str) -> Optional[str]:
    """The file a `%%writefile` cell writes, when hpu-port reads files of its type."""
    from hpu_port import filetypes

    first, body = notebooks.split_first_line(source)
    name = notebooks.written_file(first)
    return name if name and filetypes.detect(name, body[: filetypes.HEAD_SIZE].encode("utf-8")) else None


class NotebookShellDocument(Document):
    format = "notebook"
    language = "text"

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self._shell = Scripts(text)
        self._unread: list[Word] = []
        position = 0
        cell_mark = _marks_of(text)[1]
        for unit_text in split(text):
            mark = text[position:text.index("\n", position)]
            start = position + len(mark) + 1
            span = Span(start, start + len(unit_text))
            if mark == cell_mark:
                self._cell(span)
            else:
                self._line(span)
            position = span.end + 1

    def commands(self):
        return self._shell.commands

    def assignments(self):
        return self._shell.assignments

    def references(self):
        return self._shell.references

    def requirements(self) -> list[Word]:
        from hpu_port.formats.shell import installed

        return installed(self._shell.commands)

    def entries(self) -> list:
        from hpu_port.formats.shell import override_entries

        return override_entries(self._shell.commands)

    def images(self) -> list[Word]:
        from hpu_port.formats.shell import container_images

        return container_images(self._shell.commands)

    def comment_spans(self):
        return self._shell.comments

    def unread(self):
        return self._unread + self._shell.unread

    def exact(self, span: Span) -> bool:
        return self._shell.exact(span)

    def _embed(self, parts: list, region: Span, captured: bool = False) -> None:
        label = self.text[region.start:region.end].split("\n", 1)[0].strip()[:40]
        self._shell.add(parts, region, label, captured)

    def _cell(self, span: Span) -> None:
        text = self.text[span.start:span.end]
        first = text.split("\n", 1)[0]
        name = notebooks.cell_magic(first)
        arguments = first.strip()[2 + len(name):].split()
        runs_shell = name in _SHELLS or (name == "script" and arguments and arguments[0].rsplit("/", 1)[-1] in _SHELLS)
        body_start = span.start + len(first) + 1
        if not first.lstrip().startswith("%%") or name in notebooks.PYTHON_CELL_MAGICS:
            # Kept whole though no cell magic of another language: its Python does not parse.
            self._unread.append(Word("this cell (not Python that hpu-port can parse)", span))
        elif not runs_shell:
            self._unread.append(Word(f"%%{name}", span))
        elif body_start < span.end:
            self._embed([Copy(Span(body_start, span.end))], Span(body_start, span.end))

    def _line(self, span: Span) -> None:
        text = self.text[span.start:span.end]
        position = span.start + len(text) - len(text.lstrip())
        capture = _CAPTURE.match(self.text, position, span.end)
        if capture:
            position = capture.end()
        if self.text.startswith("!", position):
            start = position + (2 if self.text.startswith("!!", position) else 1)
            self._embed([Copy(Span(start, span.end))], span, bool(capture))
            return
        magic = _MAGIC.match(self.text, position, span.end)
        if magic is None:
            return
        name, rest = magic.group(1), Span(magic.end(), span.end)
        if name in _SHELL_MAGICS:
            self._embed([Copy(rest)], span, bool(capture))
        elif name in _INSTALL_MAGICS:
            self._embed([Copy(Span(position + 1, span.end))], span, bool(capture))
        elif name in _ENV_MAGICS:
            self._env(rest, span)
        elif name in _PYTHON_LINE_MAGICS and rest.start < rest.end:
            self._unread.append(Word(f"%{name}", span))

    def _env(self, rest: Span, span: Span) -> None:
        """`%env NAME=value`, `%env NAME value` (set), `%env NAME` (read)."""
        text = self.text[rest.start:rest.end]
        name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text)
        if name is None:
            return
        after = rest.start + name.end()
        if text[name.end():name.end() + 1] == "=":
            parts = [Glue("export ", rest.start), Copy(rest)]
        elif text[name.end():].strip():
            value = re.compile(r"[ \t]+").match(self.text, after, rest.end)
            parts = [Glue("export ", rest.start), Copy(Span(rest.start, after)), Glue("=", after, 0), Copy(Span(value.end(), rest.end))]
        else:
            parts = [Glue("echo $", rest.start), Copy(Span(rest.start, after))]
        self._embed(parts, span)


def parse(text: str, path: str = "", file_type: str = "notebook") -> NotebookShellDocument:
    return NotebookShellDocument(text, path)
