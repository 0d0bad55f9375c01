"""Jupyter notebooks: code cells ported as one module, everything else kept as it is.

The code cells are joined into one Python module, with a marker comment
between cells, so that an import in one cell resolves names in the next and an
added import appears once, in the first cell. IPython magics and shell lines
(`%`, `%%`, `!`, `x = !cmd`, trailing `?`) are masked by placeholder comments
and restored exactly; each one's place is kept, so that the shell lines
among them can be read as shell (``hpu_port.formats.notebook``). A cell under
a Python cell magic (`%%time`, `%%capture`) is Python below its first line;
cells under other cell magics (`%%bash`, `%%writefile`) are kept whole. Markdown cells, outputs and metadata are not touched. The notebook is
written back only when its JSON layout can be reproduced exactly, so that the
cells that did not change stay byte-identical.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Optional

CELL_MARK = "# hpu-port-cell:"
MAGIC_MARK = "# hpu-port-magic:"
# A statement, so that a block whose body is only magics (`for f in files:`
# over `!wget {f}`) still parses.
MAGIC_PLACEHOLDER = f"pass  {MAGIC_MARK}"
MAGIC_LINE = re.compile(r"^\s*(%%?[A-Za-z]|!(?!=))|^[^#]*\?\s*$|^\s*[A-Za-z_][A-Za-z0-9_.]*(\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*\s*=\s*(!|%[a-z])")
# Cell magics whose body is Python run by the kernel.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})


@dataclass
class Notebook:
    data: dict
    dump: dict  # json.dumps keyword arguments that reproduce the file
    trailing_newline: bool
    code_cells: list  # indices of the code cells in data["cells"]
    magics: dict  # placeholder number -> original line
    skipped: set  # code cells kept whole (cell magics: %%bash, ...)
    places: dict = field(default_factory=dict)  # placeholder number -> (cell number, line in the cell, 1-based)

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
    dump = _layout(text, data)
    if dump is None:
        raise ValueError("the notebook's JSON layout is not one hpu-port can reproduce exactly; not rewritten")
    code = [i for i, cell in enumerate(data["cells"]) if cell.get("cell_type") == "code"]
    return Notebook(data, dump, text.endswith("\n"), code, {}, set())


def _layout(text: str, data: dict) -> Optional[dict]:
    body = text[:-1] if text.endswith("\n") else text
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                options = {"indent": indent, "sort_keys": sort_keys, "ensure_ascii": ensure_ascii}
                if json.dumps(data, **options) == body:
                    return options
    return None


def to_module(notebook: Notebook) -> str:
    """The code cells as one module, cells separated by marker comments."""
    parts = []
    for number, index in enumerate(notebook.code_cells):
        source = _cell_source(notebook.data["cells"][index])
        parts.append(f"{CELL_MARK}{number}\n")
        lines = source.splitlines()
        python_from = _python_start(lines)
        if python_from is None:
            notebook.skipped.add(number)  # a cell magic: not Python
            continue
        for line_number, line in enumerate(lines, 1):
            if line_number <= python_from or (MAGIC_LINE.search(line) and not line.lstrip().startswith("#")):
                key = len(notebook.magics)
                notebook.magics[key] = line
                notebook.places[key] = (number, line_number)
                indent = line[: len(line) - len(line.lstrip())]
                line = f"{indent}{MAGIC_PLACEHOLDER}{key}"
            parts.append(line + "\n")
    return "".join(parts)


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


def cell_of_line(module_text: str, line: int) -> tuple[int, int]:
    """(cell number, line within the cell) of a line of the joined module."""
    cell, first = 0, 1
    for number, text in enumerate(module_text.splitlines(), 1):
        if number > line:
            break
        if text.startswith(CELL_MARK):
            cell, first = int(text[len(CELL_MARK):]), number + 1
    return cell, line - first + 1


def split_cells(notebook: Notebook, module_text: str) -> list[str]:
    """Each code cell's new source, magics restored."""
    cells: list[list[str]] = []
    for line in module_text.splitlines():
        if line.startswith(CELL_MARK):
            cells.append([])
            continue
        stripped = line.strip()
        if stripped.startswith(MAGIC_PLACEHOLDER):
            line = notebook.magics[int(stripped[len(MAGIC_PLACEHOLDER):])]
        cells[-1].append(line)
    return ["\n".join(lines) for lines in cells]


def new_sources(notebook: Notebook, module_text: str) -> dict[int, str]:
    """Code cells whose source changed: cell index -> new source."""
    changed = {}
    for number, new in enumerate(split_cells(notebook, module_text)):
        if number in notebook.skipped:
            continue
        index = notebook.code_cells[number]
        old = _cell_source(notebook.data["cells"][index])
        new_source = new + ("\n" if old.endswith("\n") else "")
        if new_source != old:
            changed[index] = new_source
    return changed


def dumps(notebook: Notebook, changed: dict[int, str]) -> bytes:
    """The notebook with the changed cells, in its own JSON layout."""
    for index, source in changed.items():
        cell = notebook.data["cells"][index]
        if isinstance(cell.get("source"), list):
            cell["source"] = source.splitlines(keepends=True)
        else:
            cell["source"] = source
    text = json.dumps(notebook.data, **notebook.dump)
    return (text + ("\n" if notebook.trailing_newline else "")).encode("utf-8")
