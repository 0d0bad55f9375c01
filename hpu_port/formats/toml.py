"""TOML documents (job and training configs: `[training] mixed_precision = ...`).

The standard library's reader (``tomllib``) decides whether the file is TOML
and gives each scalar its value, but no places. So this module scans the
text itself, once the reader has accepted it, and records for every value
the keys that lead to it and its span; each scalar's source text is handed
back to the reader to decode it. Values are edited in their span, in their
own quotes: comments, tables and layout stay byte for byte.
"""

from __future__ import annotations

import re
from typing import Optional

from hpu_port._compat import toml
from hpu_port.formats import MAX_NESTING, Document, Entry, FormatError, Span, Word, too_deep

_BLANK = re.compile(r"[ \t]*")
_SPACE = re.compile(r"(?:[ \t\r\n]|#[^\n]*)*")  # inside arrays: blanks, line ends and comments
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})?)?")
_ATOM = re.compile(r"[^ \t\r\n,\]}#]+")  # numbers, booleans, times
_COMMENT = re.compile(r"#[^\n]*")
_ERROR_LINE = re.compile(r"\(at line (\d+)")


class TomlDocument(Document):
    format = "toml"
    language = "toml"
    finds_comments = True

    def __init__(self, text: str, path: str, entries: list[Entry], comments: list[Span]) -> None:
        super().__init__(text, path)
        self._entries = entries
        self._comments = comments

    def entries(self) -> list[Entry]:
        return self._entries

    def comment_spans(self) -> list[Span]:
        return self._comments


class _Scanner:
    """Walks text the TOML reader has accepted: any surprise is a bug here,
    reported as a format error rather than a wrong span."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.entries: list[Entry] = []
        self.comments: list[Span] = []
        self.table: tuple = ()
        self.array_tables: dict[tuple, int] = {}  # resolved path of an array of tables -> items so far
        self.last_key: Optional[Word] = None  # the last part of the dotted key just read

    def fail(self, position: int, problem: str) -> FormatError:
        return FormatError(problem, self.text.count("\n", 0, position) + 1)

    def document(self) -> None:
        position = 0
        while position < len(self.text):
            position = _BLANK.match(self.text, position).end()
            char = self.text[position:position + 1]
            if char in ("\n", "\r"):
                position += 1
            elif char == "#":
                position = self.comment(position)
            elif char == "[":
                position = self.end_of_line(self.header(position))
            elif char:
                position = self.end_of_line(self.key_value(position, self.table))

    def comment(self, position: int) -> int:
        end = _COMMENT.match(self.text, position).end()
        self.comments.append(Span(position, end))
        return end

    def end_of_line(self, position: int) -> int:
        position = _BLANK.match(self.text, position).end()
        if self.text.startswith("#", position):
            position = self.comment(position)
        if position < len(self.text) and self.text[position] not in "\r\n":
            raise self.fail(position, "expected the end of the line")
        return position

    def header(self, start: int) -> int:
        double = self.text.startswith("[[", start)
        keys, position = self.keys(_BLANK.match(self.text, start + (2 if double else 1)).end())
        closer = "]]" if double else "]"
        if not self.text.startswith(closer, position):
            raise self.fail(position, f"expected '{closer}'")
        end = position + len(closer)
        path = self.resolved(keys)
        if double:
            index = self.array_tables.get(path, 0)
            self.array_tables[path] = index + 1
            path = path + (index,)
        self.table = path
        self.entries.append(Entry(path, None, None, Span(start, end), "mapping"))
        return end

    def resolved(self, keys: tuple) -> tuple:
        """The path of a header's keys, with the current item of every array
        of tables on the way (`[[runs]]` then `[runs.env]`: runs, 0, env);
        each array is counted under the item of its parent it belongs to."""
        path: tuple = ()
        for position, key in enumerate(keys):
            path = path + (key,)
            count = self.array_tables.get(path)
            if count and position < len(keys) - 1:
                path = path + (count - 1,)
        return path

    def keys(self, position: int) -> tuple[tuple, int]:
        """A dotted key: its parts and the position after it."""
        parts, self.last_key = [], None
        while True:
            word, position = self.key(position)
            parts.append(word.value)
            self.last_key = word
            position = _BLANK.match(self.text, position).end()
            if not self.text.startswith(".", position):
                return tuple(parts), position
            position = _BLANK.match(self.text, position + 1).end()

    def key(self, position: int) -> tuple[Word, int]:
        char = self.text[position:position + 1]
        if char in ('"', "'"):
            word = self.string(position)
            return word, word.span.end
        match = _BARE_KEY.match(self.text, position)
        if match is None:
            raise self.fail(position, "expected a key")
        return Word(match.group(), Span(match.start(), match.end())), match.end()

    def key_value(self, position: int, table: tuple, depth: int = 0) -> int:
        keys, position = self.keys(position)
        if not self.text.startswith("=", position):
            raise self.fail(position, "expected '='")
        key = self.last_key
        value_start = _BLANK.match(self.text, position + 1).end()
        return self.value(value_start, table + keys, key, depth)

    def value(self, position: int, path: tuple, key: Optional[Word], depth: int) -> int:
        if depth >= MAX_NESTING:
            raise self.fail(position, too_deep())
        char = self.text[position:position + 1]
        if char == "[":
            return self.container(position, path, key, depth, "sequence", self.items)
        if char == "{":
            return self.container(position, path, key, depth, "mapping", self.members)
        if char in ('"', "'"):
            word = self.string(position)
        else:
            match = _DATE_TIME.match(self.text, position) or _ATOM.match(self.text, position)
            if match is None:
                raise self.fail(position, "expected a value")
            word = Word(match.group(), Span(match.start(), match.end()))
        self.entries.append(Entry(path, key, word, word.span, "scalar", self.decoded(word)))
        return word.span.end

    def decoded(self, word: Word) -> object:
        return toml().loads("v = " + self.text[word.span.start:word.span.end])["v"]

    def container(self, start, path, key, depth, kind, read_inside) -> int:
        index = len(self.entries)
        self.entries.append(None)  # filled once the end is known
        end = read_inside(start + 1, path, depth + 1)
        self.entries[index] = Entry(path, key, None, Span(start, end), kind)
        return end

    def items(self, position: int, path: tuple, depth: int) -> int:
        index = 0
        while True:
            position = self.skip_space(position)
            if self.text.startswith("]", position):
                return position + 1
            position = self.skip_space(self.value(position, path + (index,), None, depth))
            index += 1
            if self.text.startswith(",", position):
                position += 1
            elif not self.text.startswith("]", position):
                raise self.fail(position, "expected ',' or ']'")

    def members(self, position: int, path: tuple, depth: int) -> int:
        while True:
            position = _BLANK.match(self.text, position).end()
            if self.text.startswith("}", position):
                return position + 1
            position = _BLANK.match(self.text, self.key_value(position, path, depth)).end()
            if self.text.startswith(",", position):
                position += 1
            elif not self.text.startswith("}", position):
                raise self.fail(position, "expected ',' or '}'")

    def skip_space(self, position: int) -> int:
        end = _SPACE.match(self.text, position).end()
        for comment in _COMMENT.finditer(self.text, position, end):
            self.comments.append(Span(comment.start(), comment.end()))
        return end

    def string(self, position: int) -> Word:
        """The string that starts at ``position``, found by searching for its
        closing quote (linear in its length, whatever it holds)."""
        quote = self.text[position]
        if self.text.startswith(quote * 3, position):
            end = self.closing(position + 3, quote * 3, quote == '"')
            # Up to two quotes after the first closing three are the string's
            # last characters: `"""say "hi"""""`.
            for _ in range(2):
                if self.text.startswith(quote, end):
                    end += 1
            quote = quote * 3
        else:
            end = self.closing(position + 1, quote, quote == '"')
        word = Word("", Span(position, end), quote)
        return Word(self.decoded(word), word.span, quote)

    def closing(self, position: int, quote: str, escapes: bool) -> int:
        while True:
            found = self.text.find(quote, position)
            if found < 0:
                raise self.fail(position, "unterminated string")
            backslashes = 0
            while escapes and found - backslashes - 1 >= position and self.text[found - backslashes - 1] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                return found + len(quote)
            position = found + 1


def parse(text: str, path: str = "", file_type: str = "toml") -> TomlDocument:
    reader = toml()
    try:
        reader.loads(text)
    except reader.TOMLDecodeError as exc:
        found = _ERROR_LINE.search(str(exc))
        raise FormatError(str(exc).split(" (at ")[0], int(found.group(1)) if found else None) from None
    except RecursionError:
        raise FormatError(too_deep()) from None
    scanner = _Scanner(text)
    scanner.document()
    return TomlDocument(text, path, scanner.entries, scanner.comments)
