"""Shell scripts inside other files: CI `run:` blocks, Dockerfile `RUN`
lines and here-documents, notebook `!` lines and `%%bash` cells.

An embedded script's text is put together from *parts*: pieces copied from
the host file's text, and text the host does not hold (an `export ` put
before a notebook's `%env X=1`, a placeholder of the same length over a
GitHub Actions `${{ ... }}` expression). The script is parsed with the shell
parser; its commands, assignments, variable reads and comments are given back
with spans in the host's text. A word that lies inside one copied piece maps
exactly and can be edited; any other word (one that crosses a piece's end or
touches text the host does not hold) keeps a span for its finding, but its
edits are refused (``exact``), so that an edit never lands on the wrong bytes.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Optional, Union

from hpu_port.formats import Assignment, Command, FormatError, Span, Word
from hpu_port.intervals import Reach


# A word whose text the shell reads as it is: safe to copy into a script as one word.
PLAIN_WORD = re.compile(r"[\w./:=,@%+-]+")


@dataclass(frozen=True)
class Copy:
    """Host text copied into the script as it is."""

    host: Span


@dataclass(frozen=True)
class Glue:
    """Text of the script that the host does not hold; its findings point at ``at``."""

    text: str
    at: int
    width: int = 0  # how many host characters it stands for (a same-length mask)


Part = Union[Copy, Glue]


class EmbeddedShell:
    """A shell script made of parts of a host text; views in host spans.

    ``captured``: what the script prints is read by its host (`x = !cmd` in a
    notebook), so none of its commands stands on its own. ``error`` is the
    shell parser's complaint when the script does not parse (the views are
    then empty).
    """

    def __init__(self, host_text: str, parts: list[Part], captured: bool = False) -> None:
        self.host_text = host_text
        self.parts = parts
        self.captured = captured
        self.error: Optional[FormatError] = None
        self._starts: list[int] = []
        pieces, position = [], 0
        for part in parts:
            self._starts.append(position)
            piece = host_text[part.host.start:part.host.end] if isinstance(part, Copy) else part.text
            pieces.append(piece)
            position += len(piece)
        self.text = "".join(pieces)
        self._inexact: list[Span] = []
        self._statements: list[Span] = []
        self._views: Optional[tuple] = None

    @property
    def anchor(self) -> int:
        first = self.parts[0] if self.parts else None
        return first.host.start if isinstance(first, Copy) else (first.at if first else 0)

    def views(self) -> tuple[list[Command], list[Assignment], list[Word], list[Span]]:
        """(commands, assignments, variables read, comments), all in host spans."""
        if self._views is None:
            self._views = self._read()
        return self._views

    def inexact(self) -> list[Span]:
        """Host spans of words that do not map exactly: never edited."""
        self.views()
        return self._inexact

    def statements(self) -> list[Span]:
        """Host spans of the script's statements that run over several lines."""
        self.views()
        return self._statements

    def _read(self) -> tuple:
        from hpu_port.formats import shell

        try:
            script = shell.parse(self.text, directives=False)
        except FormatError as exc:
            self.error = exc
            return [], [], [], []
        commands = [self._command(c) for c in script.commands()]
        assignments = [Assignment(self._word(a.name), self._word(a.value)) for a in script.assignments()]
        references = [self._word(w) for w in script.references()]
        comments = [self._span(s)[0] for s in script.comment_spans()]
        self._statements = [self._span(s)[0] for s in script.statements()]
        return commands, assignments, references, comments

    def _command(self, command: Command) -> Command:
        words = tuple(self._word(w) for w in command.words)
        return Command(words, self._span(command.span)[0], command.plain and not self.captured)

    def _word(self, word: Optional[Word]) -> Optional[Word]:
        if word is None:
            return None
        span, exact = self._span(word.span)
        if not exact:
            self._inexact.append(span)
        return Word(word.value, span, word.quote)

    def _span(self, span: Span) -> tuple[Span, bool]:
        """The host span of a script span, and whether it maps exactly."""
        first = bisect.bisect_right(self._starts, span.start) - 1
        last = bisect.bisect_right(self._starts, max(span.end - 1, span.start)) - 1
        start = self._host(first, span.start)
        if first == last and isinstance(self.parts[first], Copy):
            return Span(start, start + span.end - span.start), True
        end = self._host(last, span.end)
        return Span(start, max(start, end)), False

    def _host(self, index: int, offset: int) -> int:
        if index < 0:
            return self.anchor
        part, delta = self.parts[index], offset - self._starts[index]
        if isinstance(part, Copy):
            return part.host.start + min(delta, part.host.end - part.host.start)
        return part.at + min(delta, part.width)


class Scripts:
    """The shell scripts embedded in one host text, with their views
    gathered in host spans, and the parts the shell parser rejected."""

    def __init__(self, host_text: str) -> None:
        self.host_text = host_text
        self.scripts: list[EmbeddedShell] = []
        self.regions: list[Span] = []
        self.commands: list[Command] = []
        self.assignments: list[Assignment] = []
        self.references: list[Word] = []
        self.comments: list[Span] = []
        self.statements: list[Span] = []
        self.unread: list[Word] = []
        self._index: Optional[tuple[int, _EditIndex]] = None  # for as many scripts as were added

    def add(self, parts: list[Part], region: Span, label: str, captured: bool = False) -> EmbeddedShell:
        """Read the script made of ``parts``, which stands in ``region`` of the
        host; ``label`` names it when it does not parse."""
        script = EmbeddedShell(self.host_text, parts, captured)
        commands, assignments, references, comments = script.views()
        if script.error is not None:
            self.unread.append(Word(label, region))
        self.scripts.append(script)
        self.regions.append(region)
        self.commands += commands
        self.assignments += assignments
        self.references += references
        self.comments += comments
        self.statements += script.statements()
        return script

    def exact(self, span: Span) -> bool:
        """Whether an edit of ``span`` lands on the bytes it means: clear of
        (and not touching) every word that maps inexactly, since kinds place
        edits relative to a word's span; and outside every region, or inside
        one copied piece."""
        if self._index is None or self._index[0] != len(self.scripts):
            self._index = (len(self.scripts), _EditIndex(self.scripts, self.regions))
        return self._index[1].exact(span)


class _EditIndex:
    """The spans an edit is checked against, each kind searchable (a Dockerfile
    has as many scripts as RUN lines, and a fix for each)."""

    def __init__(self, scripts: list[EmbeddedShell], regions: list[Span]) -> None:
        self.inexact = Reach((s.start, s.end) for script in scripts for s in script.inexact())
        self.regions = Reach((r.start, r.end) for r in regions)
        self.copies = Reach(
            (part.host.start, part.host.end) for script in scripts for part in script.parts if isinstance(part, Copy)
        )

    def exact(self, span: Span) -> bool:
        touching = self.inexact.farthest_end(span.end)
        if touching is not None and touching >= span.start:
            return False  # an inexact word that overlaps or touches the span
        holding = self.regions.farthest_end(span.start)
        if holding is None or holding < span.end or holding == span.start:
            # In no region (one that ends where an insertion is does not hold it).
            overlapping = self.regions.farthest_end(span.end, starting_at_place=False)
            return overlapping is None or overlapping <= span.start
        return self.copies.holds(span.start, span.end)
