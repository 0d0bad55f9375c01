"""JSON documents, read by a small parser that keeps every value's span.

The standard library's `json` module gives values, not places, so this
module tokenizes the text itself (strictly: what it accepts, `json.loads`
accepts too) and records, for each value, its span, its key's span and the
span that removes the member with its separating comma. JSON has no
comments: its findings are switched off with `per-file-ignores`.

A file that is not strict JSON but JSON with comments (`//`, `/* */`) and
trailing commas, as VS Code, TypeScript and dev containers read their
`.json` files (`tsconfig.json`, `devcontainer.json`), is read as such.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from hpu_port.formats import MAX_NESTING, Document, Entry, FormatError, Span, Word, too_deep

_WHITESPACE = re.compile(r"[ \t\r\n]*")
# JSON with comments: whitespace, line comments and closed block comments.
_WHITESPACE_OR_COMMENTS = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}



class JsonDocument(Document):
    format = "json"
    language = "json"
    comment = None

    def __init__(self, text: str, path: str, entries: list[Entry]) -> None:
        super().__init__(text, path)
        self._entries = entries
        self._scripts = None

    def entries(self) -> list[Entry]:
        return self._entries

    def images(self) -> list[Word]:
        """`"image"` values (a devcontainer's, a job spec's)."""
        return [e.value for e in self._entries if e.name == "image" and e.kind == "scalar" and isinstance(e.raw, str)]

    def commands(self) -> list:
        """A devcontainer's `"runArgs"`, read as the options of `docker run`."""
        if self._scripts is None:
            from hpu_port.formats.embedded import PLAIN_WORD, Copy, Glue, Scripts

            self._scripts = Scripts(self.text)
            items = [e for e in self._entries if len(e.path) == 2 and e.path[0] == "runArgs" and isinstance(e.raw, str)]
            if items:
                parts = [Glue("docker run", items[0].span.start)]
                for item in items:
                    parts.append(Glue(" ", item.span.start))
                    exact = self.text[item.value.inner.start:item.value.inner.end] == item.value.value
                    parts.append(Copy(item.value.inner) if exact and PLAIN_WORD.fullmatch(item.value.value) else Glue("'x'", item.span.start))
                self._scripts.add(parts, Span(items[0].span.start, items[-1].span.end), "runArgs")
        return self._scripts.commands

    def exact(self, span: Span) -> bool:
        return self._scripts is None or self._scripts.exact(span)


class _Parser:
    def __init__(self, text: str, with_comments: bool = False) -> None:
        self.text = text
        self.entries: list[Entry] = []
        self.with_comments = with_comments
        self._space = _WHITESPACE_OR_COMMENTS if with_comments else _WHITESPACE

    def fail(self, position: int, problem: str) -> FormatError:
        return FormatError(problem, self.text.count("\n", 0, position) + 1)

    def skip(self, position: int) -> int:
        return self._space.match(self.text, position).end()

    def closes_after_comma(self, position: int, closer: str) -> bool:
        """A trailing comma before the closer, which JSON with comments allows."""
        return self.with_comments and self.text.startswith(closer, position)

    def value(self, position: int, path: tuple, key: Optional[Word], removal: Optional[Span]) -> int:
        """Parse the value at ``position`` (no whitespace before it); return its end."""
        char = self.text[position:position + 1]
        if char == "{":
            return self.container(position, path, key, removal, "}", self.members)
        if char == "[":
            return self.container(position, path, key, removal, "]", self.items)
        if char == '"':
            word = self.string(position)
            if word is None:
                raise self.fail(position, "expected a JSON value")
            self.entries.append(Entry(path, key, word, word.span, "scalar", word.value, removal))
            return word.span.end
        match = _NUMBER.match(self.text, position)
        if match is not None:
            word = Word(match.group(), Span(match.start(), match.end()))
            self.entries.append(Entry(path, key, word, word.span, "scalar", json.loads(match.group()), removal))
            return match.end()
        for literal, raw in _LITERALS.items():
            if self.text.startswith(literal, position):
                word = Word(literal, Span(position, position + len(literal)))
                self.entries.append(Entry(path, key, word, word.span, "scalar", raw, removal))
                return position + len(literal)
        raise self.fail(position, "expected a JSON value")

    def string(self, position: int) -> Optional[Word]:
        """The string that starts at ``position``, or None. Read by the json
        module's own scanner: a regular expression would keep a backtracking
        point per character (hundreds of megabytes for a long string)."""
        if not self.text.startswith('"', position):
            return None
        try:
            value, end = json.decoder.scanstring(self.text, position + 1, True)
        except json.JSONDecodeError:
            return None
        return Word(value, Span(position, end), '"')

    def container(self, start, path, key, removal, closer, read_inside) -> int:
        if len(path) >= MAX_NESTING:
            raise self.fail(start, too_deep())
        index = len(self.entries)
        self.entries.append(None)  # placeholder, filled once the end is known
        end = read_inside(start + 1, path, closer)
        kind = "mapping" if closer == "}" else "sequence"
        self.entries[index] = Entry(path, key, None, Span(start, end), kind, None, removal)
        return end

    def members(self, position: int, path: tuple, closer: str) -> int:
        position = self.skip(position)
        if self.text.startswith(closer, position):
            return position + 1
        pending: list[tuple] = []  # (key word, value end, index of first entry) for the removal spans
        opened = position
        while True:
            key = self.string(position)
            if key is None:
                raise self.fail(position, "expected a string key")
            position = self.skip(key.span.end)
            if not self.text.startswith(":", position):
                raise self.fail(position, "expected ':'")
            first = len(self.entries)
            end = self.value(self.skip(position + 1), path + (key.value,), key, None)
            pending.append((key, end, first))
            position = self.skip(end)
            if self.text.startswith(",", position):
                position = self.skip(position + 1)
                if self.closes_after_comma(position, closer):
                    self._set_removals(pending, opened)
                    return position + 1
                continue
            if self.text.startswith(closer, position):
                self._set_removals(pending, opened)
                return position + 1
            raise self.fail(position, f"expected ',' or '{closer}'")

    def _set_removals(self, pending: list, opened: int) -> None:
        """A member is removed from its key to the next key; the last one from
        the end of the member before it (taking that comma along)."""
        for number, (key, end, first) in enumerate(pending):
            if number + 1 < len(pending):
                removal = Span(key.span.start, pending[number + 1][0].span.start)
            elif number > 0:
                removal = Span(pending[number - 1][1], end)
            else:
                removal = Span(key.span.start, end)
            entry = self.entries[first]
            self.entries[first] = Entry(entry.path, entry.key, entry.value, entry.span, entry.kind, entry.raw, removal)

    def items(self, position: int, path: tuple, closer: str) -> int:
        position = self.skip(position)
        if self.text.startswith(closer, position):
            return position + 1
        index = 0
        while True:
            end = self.value(position, path + (index,), None, None)
            position = self.skip(end)
            index += 1
            if self.text.startswith(",", position):
                position = self.skip(position + 1)
                if self.closes_after_comma(position, closer):
                    return position + 1
                continue
            if self.text.startswith(closer, position):
                return position + 1
            raise self.fail(position, f"expected ',' or '{closer}'")


def parse(text: str, path: str = "", file_type: str = "json") -> JsonDocument:
    try:
        return JsonDocument(text, path, _entries(_Parser(text)))
    except FormatError as strict_error:
        try:
            return JsonDocument(text, path, _entries(_Parser(text, with_comments=True)))
        except FormatError as lenient_error:
            # Where the reader that got further stopped: a file with comments
            # fails the strict reader at its first comment.
            got_further = (lenient_error.line or 0) > (strict_error.line or 0)
            raise (lenient_error if got_further else strict_error) from None


def _entries(parser: _Parser) -> list[Entry]:
    text = parser.text
    start = parser.skip(0)
    if start == len(text):
        raise FormatError("empty document", 1)
    end = parser.skip(parser.value(start, (), None, None))
    if end != len(text):
        raise parser.fail(end, "text after the JSON value")
    return parser.entries
