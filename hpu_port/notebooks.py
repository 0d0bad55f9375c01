"""Jupyter notebooks: code cells ported as one module, everything else kept byte for byte.

The code cells are joined into one Python module, with a marker comment
between cells, so that an import in one cell resolves names in the next and an
added import appears once, in the first cell. IPython magics and shell lines
(`%`, `%%`, `!`, `x = !cmd`, trailing `?`) are masked by placeholder statements
and restored exactly; each one's place is kept, so that the shell lines
among them can be read as shell (``hpu_port.formats.notebook``). A cell under
a Python cell magic (`%%time`, `%%capture`) is Python below its first line;
cells under other cell magics (`%%bash`, `%%writefile`) are kept whole.
Markdown cells, outputs and metadata are not touched.

Markers and placeholders carry a tag that occurs in none of the code cells, so
no line a user wrote can be taken for one. Cells are split into lines where
Python splits them (`\\n`, `\\r\\n`, `\\r`), not where ``str.splitlines`` does:
a form feed or U+2028 is text inside a line. The module has `\\n` line ends;
each line gets its own line end back, and a new line the cell's usual one
(or, where that would join it to the line next to it, that of the line
above it, or CRLF: a lone CR above an empty LF line reads as one CRLF).

The notebook's JSON is never dumped again: only the text of a changed cell's
`"source"` value is replaced, so everything else in the file (other cells,
indentation, key order, escapes, the final newline) stays byte for byte.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Callable, Iterable, Optional

MAGIC_LINE = re.compile(r"^\s*(%%?[A-Za-z]|!(?!=))|^[^#]*\?\s*$|^\s*[A-Za-z_][A-Za-z0-9_.]*(\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*\s*=\s*(!|%[a-z])")
# Cell magics whose body is Python run by the kernel.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
# The only line breaks Python knows; str.splitlines knows eight more.
LINE_BREAK = re.compile(r"\r\n|\r|\n")
# The module of a notebook's code cells starts with the first cell's marker.
CELLS_MODULE_START = re.compile(rb"\A# hpu-port(?:-\d+)?-cell:0\r?\n")
# Whitespace Python accepts before a statement (a masked line keeps its own).
_INDENT = re.compile(r"[ \t\f]*")


def is_cells_module(text: bytes) -> bool:
    """Whether ``text`` is the module ``to_module`` makes of a notebook's cells."""
    return CELLS_MODULE_START.match(text) is not None


def split_lines(text: str) -> list[tuple[str, str]]:
    """(content, line end) of each line of ``text``; the last line end may be ""."""
    lines, start = [], 0
    for match in LINE_BREAK.finditer(text):
        lines.append((text[start:match.start()], match.group()))
        start = match.end()
    if start < len(text):
        lines.append((text[start:], ""))
    return lines


def split_first_line(text: str) -> tuple[str, str]:
    """The first line of ``text`` with its line end, and the rest."""
    match = LINE_BREAK.search(text)
    return (text, "") if match is None else (text[:match.end()], text[match.end():])


def unused_tag(texts: Iterable[str], base: str) -> str:
    """``base``, or ``base`` with a number after it, whichever occurs in none
    of ``texts``: a marker built on it cannot be mistaken for their text."""
    texts = list(texts)
    candidates = itertools.chain([base], (f"{base}-{number}" for number in itertools.count(1)))
    return next(tag for tag in candidates if not any(tag in text for text in texts))


@dataclass(frozen=True)
class Marks:
    """The comment that starts each cell in the module, and the placeholder
    that stands for a masked line, both built on a tag no cell contains."""

    tag: str

    @property
    def cell(self) -> str:
        return f"# {self.tag}-cell:"

    @property
    def placeholder(self) -> str:
        # A statement, so that a block whose body is only magics (`for f in
        # files:` over `!wget {f}`) still parses.
        return f"pass  # {self.tag}-magic:"

    def cell_number(self, line: str) -> Optional[int]:
        """The cell a marker line starts, or None for any other line."""
        return _number_after(line, self.cell)

    def magic_key(self, line: str) -> Optional[int]:
        """The key of the masked line a placeholder stands for, or None."""
        return _number_after(line.lstrip(" \t\f"), self.placeholder)


def _number_after(line: str, prefix: str) -> Optional[int]:
    rest = line[len(prefix):]
    return int(rest) if line.startswith(prefix) and rest.isascii() and rest.isdigit() else None


@dataclass
class Notebook:
    data: dict
    text: str  # the file's JSON text, as read
    code_cells: list  # indices of the code cells in data["cells"]
    marks: Marks
    magics: dict = field(default_factory=dict)  # placeholder number -> original line
    skipped: set = field(default_factory=set)  # code cells kept whole (cell magics: %%bash, ...; cells that are not Python)
    places: dict = field(default_factory=dict)  # placeholder number -> (cell number, line in the cell, 1-based)
    masked: dict = field(default_factory=dict)  # code-cell number -> its (module line, line end) pairs
    # Placeholders of lines that continue the magic or shell line above them (`!pip install a \\`).
    continuing: set = field(default_factory=set)

    def cell_source(self, number: int) -> str:
        """The source of code cell ``number`` (counted among code cells)."""
        return _cell_source(self.data["cells"][self.code_cells[number]])


def _cell_source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def load(raw: bytes) -> Notebook:
    """Parse a notebook; raises ValueError with a one-line reason."""
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a valid notebook: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("not a valid notebook: no list of cells")
    _check_cells(data["cells"])
    code = [i for i, cell in enumerate(data["cells"]) if cell.get("cell_type") == "code"]
    tag = unused_tag((_cell_source(data["cells"][i]) for i in code), "hpu-port")
    return Notebook(data, text, code, Marks(tag))


def _check_cells(cells: list) -> None:
    """Refuse what no notebook writer makes: a cell that is not an object, a
    source that is not text, a code cell without a source to write back to."""
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise ValueError(f"not a valid notebook: cell {number} is not a JSON object")
        source = cell.get("source")
        if source is None and cell.get("cell_type") != "code":
            continue
        if isinstance(source, str) or (isinstance(source, list) and all(isinstance(piece, str) for piece in source)):
            continue
        what = "has no source" if source is None else "has a source that is not a string or a list of strings"
        raise ValueError(f"not a valid notebook: cell {number} {what}")


def to_module(notebook: Notebook) -> str:
    """The code cells as one module, cells separated by marker comments."""
    parts = []
    for number, index in enumerate(notebook.code_cells):
        parts.append(f"{notebook.marks.cell}{number}\n")
        lines = split_lines(_cell_source(notebook.data["cells"][index]))
        python_from = _python_start([content for content, _ in lines])
        if python_from is None or number in notebook.skipped:
            notebook.skipped.add(number)  # a cell magic, or a cell the parser cannot read: not Python
            continue
        masked = []
        continued_indent = None  # the indentation of a magic line that goes on over `\\`
        for line_number, (content, end) in enumerate(lines, 1):
            original = content
            if continued_indent is not None:
                # IPython joins the lines of a magic or shell line ended by `\\`: the
                # rest of it is no Python, and stands where the line it continues does.
                notebook.continuing.add(len(notebook.magics))
                content = _mask(notebook, number, line_number, content, continued_indent)
            elif line_number <= python_from or (MAGIC_LINE.search(content) and not content.lstrip().startswith("#")):
                content = _mask(notebook, number, line_number, content)
            else:
                masked.append((content, end))
                continue
            continued_indent = _INDENT.match(content).group() if original.rstrip().endswith("\\") else None
            masked.append((content, end))
        notebook.masked[number] = masked
        parts += [content + "\n" for content, _ in masked]
    return "".join(parts)


def _mask(notebook: Notebook, number: int, line_number: int, line: str, indent: Optional[str] = None) -> str:
    """The placeholder for a magic or shell line, which is kept for later
    (``indent``: where it stands, when not its own indentation)."""
    key = len(notebook.magics)
    notebook.magics[key] = line
    notebook.places[key] = (number, line_number)
    return f"{_INDENT.match(line).group() if indent is None else indent}{notebook.marks.placeholder}{key}"


def cell_magic(line: str) -> str:
    """The name of the cell magic a cell's first line calls (`%%bash` -> `bash`), or ""."""
    stripped = line.strip()
    return stripped[2:].split(None, 1)[0] if stripped.startswith("%%") and len(stripped) > 2 else ""


def written_file(line: str) -> Optional[str]:
    """The file a `%%writefile NAME` cell writes (the whole file: not `-a`), or None."""
    if cell_magic(line) not in ("writefile", "file"):
        return None
    arguments = line.split()[1:]
    if len(arguments) != 1 or arguments[0].startswith("-"):
        return None
    return arguments[0].strip("'\"")


def _python_start(lines: list[str]) -> "int | None":
    """How many first lines of a cell are Python cell magics (`%%time`); None
    when the cell is under another cell magic (not Python)."""
    count = 0
    while count < len(lines) and lines[count].lstrip().startswith("%%"):
        if cell_magic(lines[count]) not in PYTHON_CELL_MAGICS:
            return None
        count += 1
    return count


def cell_of_line(notebook: Notebook, module_text: str, line: int) -> tuple[int, int]:
    """(cell number, line within the cell) of a line of the joined module."""
    cell, first = 0, 1
    for number, (text, _) in enumerate(split_lines(module_text), 1):
        if number > line:
            break
        found = notebook.marks.cell_number(text)
        if found is not None:
            cell, first = found, number + 1
    return cell, line - first + 1


def _module_cells(notebook: Notebook, module_text: str) -> list[list[str]]:
    """The lines of each code cell in a module ``to_module`` made (after edits)."""
    cells: list[list[str]] = []
    above: list[str] = []  # lines above the first marker, if a rule put any there, are the first cell's
    for text, _ in split_lines(module_text):
        if notebook.marks.cell_number(text) is not None:
            cells.append([] if cells else above)
        else:
            (cells[-1] if cells else above).append(text)
    if len(cells) != len(notebook.code_cells):
        raise ValueError("the cells of the ported notebook could not be told apart")
    return cells


def new_sources(notebook: Notebook, module_text: str) -> dict[int, str]:
    """Code cells whose source changed: cell index -> new source."""
    changed = {}
    for number, lines in enumerate(_module_cells(notebook, module_text)):
        if number in notebook.skipped:
            continue
        index = notebook.code_cells[number]
        new_source = _restored(notebook, number, lines)
        if new_source != notebook.cell_source(number):
            changed[index] = new_source
    return changed


def _restored(notebook: Notebook, number: int, lines: list[str]) -> str:
    """A cell's text from its new module lines: masked lines back, line ends kept."""
    contents = [_unmasked(notebook, line) for line in lines]
    ends, written = _line_ends(notebook.masked[number], lines)
    ends = _kept_apart(contents, ends, written)
    return "".join(content + end for content, end in zip(contents, ends))


def _unmasked(notebook: Notebook, line: str) -> str:
    key = notebook.marks.magic_key(line)
    return line if key is None else notebook.magics[key]


def _line_ends(old: list[tuple[str, str]], new: list[str]) -> tuple[list[str], set[int]]:
    """The line end of each new line: the old line's where a line stayed or was
    changed in place, the cell's usual line end for new lines, none after the
    last line when the cell did not end with one; and which new lines the
    rules wrote (all but the lines that stayed)."""
    usual = _usual_line_end(old)
    ends = [usual] * len(new)
    written = set(range(len(new)))
    matcher = SequenceMatcher(None, [content for content, _ in old], new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            ends[j1:j2] = [end or usual for _, end in old[i1:i2]]
        if tag == "equal":
            written.difference_update(range(j1, j2))
    if new and not (old and old[-1][1]):
        ends[-1] = ""
    return ends, written


def _kept_apart(contents: list[str], ends: list[str], written: set[int]) -> list[str]:
    """``ends`` changed so that the lines, joined, read as the same lines again.

    A line ending in a lone CR above an empty line ending in LF would read as
    one line ending in CRLF, and a line would be lost. No two lines of a cell
    were ever so, but a line the rules wrote (``written``), with the cell's
    usual line end, can meet a line kept as it was. Of such a pair, the line
    the rules wrote (the lower one when both or neither were) takes another
    line end: that of the line above it, else CRLF, which joins no line.
    """
    ends = list(ends)

    def text(index: int) -> str:
        return contents[index] + ends[index] if index < len(ends) else ""

    for below in range(1, len(ends)):
        above = below - 1
        if not _joins(ends[above], text(below)):
            continue
        changed = above if above in written and below not in written else below
        end = ends[changed - 1] if changed else "\r\n"  # (only the last line may have no end)
        ends[changed] = "\r\n" if _joins(end, text(changed + 1)) else end
    return ends


def _joins(end: str, following: str) -> bool:
    """Whether a line ending in ``end`` and the line ``following`` it read as one."""
    return end == "\r" and following.startswith("\n")


def _usual_line_end(lines: list[tuple[str, str]]) -> str:
    counts = Counter(end for _, end in lines if end)
    return counts.most_common(1)[0][0] if counts else "\n"


def dumps(notebook: Notebook, changed: dict[int, str]) -> bytes:
    """The notebook's file with the changed cells' sources, and nothing else, replaced."""
    spans = _source_spans(notebook.text)
    pieces, position = [], 0
    for index in sorted(changed):
        start, end = spans[index]
        pieces += [notebook.text[position:start], _source_json(notebook, (start, end), index, changed[index])]
        position = end
    pieces.append(notebook.text[position:])
    return "".join(pieces).encode("utf-8")


def _source_json(notebook: Notebook, span: tuple[int, int], index: int, source: str) -> str:
    """The JSON text of a cell's new source, written as the old one (at
    ``span``) was: a string or a list of lines, unchanged lines in their old spelling."""
    text = notebook.text
    start, end = span
    escaped = _escapes_non_ascii(text[start:end], text)
    if text[start] != "[":
        return json.dumps(source, ensure_ascii=escaped)
    items = _array_item_spans(text, start)
    spelled: dict[str, str] = {}
    for piece, (item_start, item_end) in zip(notebook.data["cells"][index]["source"], items):
        spelled.setdefault(piece, text[item_start:item_end])
    lines = [content + line_end for content, line_end in split_lines(source)]
    if not lines:
        return "[]"
    opening, separator, closing = _list_layout(text, start, end, items)
    return "[" + opening + separator.join(spelled.get(line) or json.dumps(line, ensure_ascii=escaped) for line in lines) + closing + "]"


# A \uXXXX escape of a character beyond ASCII, not preceded by an escaped backslash.
_NON_ASCII_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u(?!00[0-7][0-9a-fA-F])[0-9a-fA-F]{4}")


def _escapes_non_ascii(value_text: str, file_text: str) -> bool:
    """Whether new text should escape characters beyond ASCII (`\\u00e9` for
    `é`): as the old source did, else as the file does; Jupyter does not."""
    for text in (value_text, file_text):
        if not text.isascii():
            return False
        if _NON_ASCII_ESCAPE.search(text):
            return True
    return False


def _list_layout(text: str, start: int, end: int, items: list) -> tuple[str, str, str]:
    """The whitespace after `[`, between items and before `]` of the list at ``start``."""
    if items:
        opening = text[start + 1:items[0][0]]
        closing = text[items[-1][1]:end - 1]
        separator = text[items[0][1]:items[1][0]] if len(items) > 1 else "," + (opening or " ")
        return opening, separator, closing
    # An empty list: its items go one level deeper than the line it is on.
    space = re.match(r"[ \t\n\r]*\{([ \t\n\r]*)", text).group(1)  # before the file's first key
    line_break = LINE_BREAK.search(space)
    if line_break is None:  # a file on one line
        return "", ", ", ""
    unit = LINE_BREAK.split(space)[-1]
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    indent = line_break.group() + _INDENT.match(text, line_start).group()
    return indent + unit, "," + indent + unit, indent


# Where things are in the JSON text. json.loads has accepted the text already,
# so these walk it without checking it again.

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Cell index -> (start, end) of its "source" value in the file's text."""
    spans: dict[int, tuple[int, int]] = {}

    def read_cell(index: int, start: int) -> int:
        def read_member(key: str, value_start: int) -> int:
            value_end = _value_end(text, value_start)
            if key == "source":
                spans[index] = (value_start, value_end)
            return value_end

        return _walk_object(text, start, read_member)

    def read_top(key: str, start: int) -> int:
        if key != "cells":
            return _value_end(text, start)
        spans.clear()  # of duplicate keys, json.loads keeps the last
        return _walk_array(text, start, read_cell)

    _walk_object(text, _SPACE.match(text).end(), read_top)
    return spans


def _array_item_spans(text: str, start: int) -> list[tuple[int, int]]:
    spans = []

    def read_item(_: int, item_start: int) -> int:
        spans.append((item_start, _value_end(text, item_start)))
        return spans[-1][1]

    _walk_array(text, start, read_item)
    return spans


def _value_end(text: str, start: int) -> int:
    return _DECODER.raw_decode(text, start)[1]


def _walk_object(text: str, start: int, read: Callable[[str, int], int]) -> int:
    """Call ``read(key, value start)`` (which returns the value's end) for each
    member of the object at ``start``; returns the object's end."""
    position = _SPACE.match(text, start + 1).end()
    while text[position] != "}":
        key, position = json.decoder.scanstring(text, position + 1)
        value_start = _SPACE.match(text, _SPACE.match(text, position).end() + 1).end()  # past the ":"
        position = _after_separator(text, read(key, value_start))
    return position + 1


def _walk_array(text: str, start: int, read: Callable[[int, int], int]) -> int:
    """Call ``read(item number, item start)`` (which returns the item's end)
    for each item of the array at ``start``; returns the array's end."""
    position = _SPACE.match(text, start + 1).end()
    number = 0
    while text[position] != "]":
        position = _after_separator(text, read(number, position))
        number += 1
    return position + 1


def _after_separator(text: str, position: int) -> int:
    """Past the whitespace and comma after a value: where the next one (or the closing bracket) starts."""
    position = _SPACE.match(text, position).end()
    if text[position] == ",":
        position = _SPACE.match(text, position + 1).end()
    return position
