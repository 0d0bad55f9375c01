"""Documents: files that are not Python, parsed into what rules can match, with
exact source spans.

One module per format (``shell``, ``yaml``, ``json``, ``dockerfile``,
``cmake``, ``cuda_source``, ``requirements``) turns a file's text into a
``Document``. A document offers the same few views whatever its syntax:

- ``commands()``: programs run with their arguments (shell scripts, `RUN`
  lines, notebook `!` lines, job-scheduler directives);
- ``assignments()``: environment variables set (`export X=1`, `ENV X=1`,
  `environment:` maps);
- ``entries()``: the keys and values of a structured document (YAML, JSON);
- ``requirements()``: the package requirements it lists.

Every piece carries a ``Span`` of character offsets into ``Document.text``,
so that a rule's fix replaces exactly those characters and nothing else: the
document is never dumped again, and the bytes no rule touched stay as they
were. After the edits, the new text is parsed again with the same parser;
output that does not parse is never written.
"""

from __future__ import annotations

import bisect
import importlib
import re
from dataclasses import dataclass, field
from typing import Optional, Union


LF = re.compile("\n")
# CRLF, CR and LF (YAML, and files read with Python's universal newlines).
ANY_EOL = re.compile("\r\n|[\r\n]")


# How deeply the structured formats (JSON, YAML) may nest. Every value is
# kept with the keys that lead to it, so a file nested N levels deep costs
# memory that grows with N times its length; real files nest a few dozen
# levels at most.
MAX_NESTING = 128


def too_deep() -> str:
    return f"nested too deeply (more than {MAX_NESTING} levels)"


class FormatError(Exception):
    """Text that the format's parser rejects; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.line = line

    def describe(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self}"


@dataclass(frozen=True)
class Span:
    """Characters ``start`` (inclusive) to ``end`` (exclusive) of a document's text."""

    start: int
    end: int


@dataclass(frozen=True)
class Word:
    """A piece of text with a meaning: ``value`` is what it means (quotes and
    escapes resolved), ``span`` where its source text is."""

    value: str
    span: Span
    quote: str = ""  # the quote character around the source text, if any

    @property
    def inner(self) -> Span:
        """The span of the text inside the quotes."""
        q = len(self.quote)
        return Span(self.span.start + q, self.span.end - q)


# A shell word that is only a variable's value (`$X`, `${X}`).
VARIABLE_ALONE = re.compile(r"\$\{?[A-Za-z_]\w*\}?")


def program_name(word: str) -> str:
    """The program a command word runs: its file name (`/usr/bin/nvidia-smi`
    is `nvidia-smi`), any `python3.10` being `python`."""
    name = word.rsplit("/", 1)[-1]
    return "python" if re.fullmatch(r"python[0-9.]*", name) else name


@dataclass(frozen=True)
class Command:
    """A program run with its arguments. ``plain`` is True when it stands as a
    statement of its own: not in a pipeline, a command substitution, a
    condition, nor with its output redirected (nothing reads what it prints)."""

    words: tuple[Word, ...]
    span: Span
    plain: bool = True

    @property
    def program(self) -> str:
        return self.words[0].value.rsplit("/", 1)[-1] if self.words else ""


@dataclass(frozen=True)
class Assignment:
    """An environment variable set to a value (None: the value is not a plain string)."""

    name: Word
    value: Optional[Word]


Key = Union[str, int]


@dataclass(frozen=True)
class Entry:
    """A value of a structured document and the keys that lead to it.

    ``value`` is set for scalars only; ``span`` covers the whole value
    (mappings and lists too); ``removal`` is the span to delete to remove
    the entry with its separator (None where the format cannot say).
    """

    path: tuple[Key, ...]
    key: Optional[Word]
    value: Optional[Word]
    span: Span
    kind: str = "scalar"  # scalar, mapping, sequence
    raw: object = None  # the scalar as the format types it (JSON: int, bool, ...)
    removal: Optional[Span] = None
    document: int = 0  # which document of a multi-document file (YAML's `---`) holds it

    @property
    def name(self) -> Optional[str]:
        return self.path[-1] if self.path and isinstance(self.path[-1], str) else None


@dataclass(frozen=True)
class Edit:
    """Replace a span of the document's text."""

    span: Span
    text: str


class Document:
    """A parsed file. Formats override the views they have."""

    format: str = ""
    # What starts a comment (suppression comments use it); None: no comments.
    comment: Optional[str] = "#"
    # Whether comment_spans() finds every comment (none found: there are none);
    # else a suppression comment is known by its text alone.
    finds_comments: bool = False
    # The language name for examples in the rule docs.
    language: str = "text"
    # What ends a line for the format's own reader: line numbers and the
    # reach of suppression comments follow it.
    line_break: re.Pattern = LF

    def __init__(self, text: str, path: str = "") -> None:
        self.text = text
        self.path = path
        self._line_starts: Optional[list[int]] = None
        # The project facts of the run (what its code reads from configs), set by the engine.
        self.facts = None

    def commands(self) -> list[Command]:
        return []

    def assignments(self) -> list[Assignment]:
        return []

    def entries(self) -> list[Entry]:
        return []

    def images(self) -> list[Word]:
        """Container images named (`FROM image`, `image:` keys)."""
        return []

    def references(self) -> list[Word]:
        """Variables read (`$X`, `${X:-1}`): their names."""
        return []

    def script_variables(self) -> list[Assignment]:
        """Variables set for the rest of the script (`DEVICE=cuda` as a
        statement of its own, Make's `X = v`, a Dockerfile's `ENV`), not for
        one command (`DEVICE=cuda python prep.py`) nor in a separate shell
        (a notebook's `!` lines): what a later line's `$DEVICE` reads."""
        return []

    def argument_strings(self) -> list[Command]:
        """Arguments a script keeps in a string variable and hands to a
        program by word splitting (`ARGS="--device cuda"` then `python
        train.py $ARGS`): a command of that program and the string's words."""
        return []

    def requirements(self) -> list[Word]:
        return []

    def comment_spans(self) -> list[Span]:
        return []

    def statements(self) -> list[Span]:
        """Statements that may run over several lines (a command continued
        with `\\`, a Dockerfile instruction): a suppression comment covers
        each as a whole."""
        return []

    def unread(self) -> list[Word]:
        """Parts of the file no parser read (a notebook's `%%html` cell, a CI
        script the shell parser rejects): what they are, and where."""
        return []

    def exact(self, span: Span) -> bool:
        """Whether an edit of ``span`` lands on the bytes it means. False in
        text read through a transformation that cannot be undone exactly (a
        folded YAML scalar read as a script): such findings are reported only."""
        return True

    def in_comment(self, offset: int) -> bool:
        return any(span.start <= offset < span.end for span in self.comment_spans())

    def line_starts(self) -> list[int]:
        """The offset of each line, lines ended by the format's ``line_break``."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in self.line_break.finditer(self.text)]
        return self._line_starts

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        starts = self.line_starts()
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1


@dataclass
class Applied:
    text: str
    used: list[int] = field(default_factory=list)  # indices of the edit groups applied


def apply_edits(text: str, groups: list[tuple[Edit, ...]]) -> Applied:
    """Apply groups of edits (each group is one finding's fix, all or nothing);
    a group that overlaps one applied before it is left out."""
    taken = _TakenSpans()
    chosen: list[Edit] = []
    used: list[int] = []
    for index, group in enumerate(groups):
        if any(taken.collides(edit.span) for edit in group):
            continue
        for edit in group:
            taken.add(edit.span)
        chosen += group
        used.append(index)
    pieces, position = [], 0
    for edit in sorted(chosen, key=lambda e: (e.span.start, e.span.end)):
        pieces += [text[position:edit.span.start], edit.text]
        position = edit.span.end
    pieces.append(text[position:])
    return Applied("".join(pieces), used)


class _TakenSpans:
    """The spans of the edits taken so far, ordered by start. No two of them
    collide (the edits of one group that do are kept as one span around
    them), so they follow one another, touching at most, and a span can
    collide only with its neighbours in that order: the last to start
    before it, and the first to start at or after it."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._spans: list[Span] = []

    def collides(self, span: Span) -> bool:
        return self._colliding(span) is not None

    def add(self, span: Span) -> None:
        place = self._colliding(span)
        while place is not None:
            other = self._spans.pop(place)
            del self._starts[place]
            span = Span(min(span.start, other.start), max(span.end, other.end))
            place = self._colliding(span)
        place = bisect.bisect_left(self._starts, span.start)
        self._starts.insert(place, span.start)
        self._spans.insert(place, span)

    def _colliding(self, span: Span) -> Optional[int]:
        place = bisect.bisect_left(self._starts, span.start)
        for neighbour in (place - 1, place):
            if 0 <= neighbour < len(self._spans) and _overlap(span, self._spans[neighbour]):
                return neighbour
        return None


def _overlap(a: Span, b: Span) -> bool:
    if a.start == a.end or b.start == b.end:  # insertions collide only at the same place
        return a.start == b.start or b.start < a.start < b.end or a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


# file type -> module that parses it (imported only when such a file is read).
_PARSERS = {
    "shell": "shell",
    "yaml": "yaml",
    "json": "json",
    "toml": "toml",
    "makefile": "makefile",
    "apptainer": "makefile",
    "dotenv": "dotenv",
    "dockerfile": "dockerfile",
    "cmake": "cmake",
    "cuda": "cuda_source",
    "requirements": "requirements",
    "pyproject": "requirements",
    "setup-cfg": "requirements",
    "notebook": "notebook",  # the shell lines and cells of a notebook (see formats.notebook)
}


def parse(file_type: str, text: str, path: str = "") -> Document:
    """The document for ``text``; raises FormatError when it does not parse."""
    module = importlib.import_module(f"{__name__}.{_PARSERS[file_type]}")
    return module.parse(text, path, file_type)


def readable_types() -> tuple[str, ...]:
    return tuple(_PARSERS)
