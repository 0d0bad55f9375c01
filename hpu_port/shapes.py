"""Forms of Python statement looked for in a file's bytes, before any parse.

The kinds' screens (``Kind.screen``) look at the standard parser's tree,
and parsing is most of what a file that no rule acts on costs. The shapes
here tell from the text alone that a file cannot hold what a screen looks
for: each finds at least every place its screen would accept (it may find
more), in the raw bytes as in the text with comments and docstrings blanked
out. A kind gives one to its triggers as ``alongside`` (tested on whole
files only), so a file without it is never parsed for that rule.

Only questions a search answers in a fraction of a parse belong here: a
shape that needs the file's block structure (a loop under a `with`) costs
more in Python than the parse it would spare.

Each shape has the ``search(text)`` of a compiled pattern: truthy when
found. Those that are not one are dataclasses of plain values, which the
rule cache keeps (``hpu_port.rule_cache``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Optional

# Not followed by more of an identifier (any byte of a non-ASCII one included).
_AFTER = rb"(?![\w\x80-\xff])"
# A comment, matched whole only (a shorter match fails at once instead of
# being retried at every length).
_COMMENT = rb"#[^\r\n]*(?![^\r\n])"
# Between two tokens: spaces, line continuations, comments.
_GAP = rb"(?:[\s\\]|" + _COMMENT + rb")"
_IDENTIFIER_BYTE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(range(0x80, 0x100))


def _words(names: Iterable) -> bytes:
    """An alternation of ``names`` (str or bytes), longest first."""
    spelled = {name.encode() if isinstance(name, str) else name for name in names}
    return b"|".join(re.escape(name) for name in sorted(spelled, key=lambda n: (-len(n), n)))


@lru_cache(maxsize=256)
def written(words: tuple) -> "re.Pattern":
    """Where one of ``words`` is written, inside longer words too: a search
    that begins with a look behind or a word boundary is tried at every
    byte, and the lines it finds are only where to look."""
    return re.compile(_words(words))


@lru_cache(maxsize=None)
def cast_of_a_result(casts: frozenset) -> "re.Pattern":
    """A cast called bare on a call's or an index's result: `.to(d).float()`."""
    return re.compile(
        rb"[)\]]" + _GAP + rb"*\." + _GAP + rb"*(?:" + _words(casts) + rb")"
        + _GAP + rb"*\(" + _GAP + rb"*\)"
    )


@dataclass(frozen=True)
class ImportOf:
    """An import statement naming the module ``top`` or one under it
    (`import top.x as y`, `import a, top`, `from top.x import y`), or a
    star import of an absolute module (after which a name may stand for
    anything)."""

    top: str

    def search(self, text: bytes) -> bool:
        name = self.top.encode()
        if name in text:
            for found in _whole_words(re.escape(name)).finditer(text):
                start = found.start()
                if _starts_a_word(text, start) and _imported_here(_logical_line_before(text, start)):
                    return True
        return b"*" in text and _STAR_IMPORT.search(text) is not None


def _imported_here(before: bytes) -> bool:
    """Whether a module named right after ``before`` (the start of its
    logical line) is one an import statement names: `from` just before it,
    or `import` and a list of modules. An import starts a statement: at the
    line's start, after a `;` or after a compound statement's `:`."""
    statement = before.rsplit(b";", 1)[-1]
    keywords = list(_IMPORT_KEYWORD.finditer(statement))
    if not keywords:
        return False
    keyword = keywords[-1]
    head = statement[: keyword.start()].rstrip(_SPACES)
    if head and not head.endswith(b":"):
        return False
    between = statement[keyword.end() :]
    if keyword.group() == b"from":
        return not between.strip(_SPACES)
    # `import x.top`: another module's part, not the module wanted.
    return _MODULE_LIST.fullmatch(between) is not None and not between.rstrip(_SPACES).endswith(b".")


_SPACES = b" \t\f\\\r\n"
_IMPORT_KEYWORD = re.compile(rb"(?<![\w\x80-\xff.])(?:import|from)(?![\w\x80-\xff])")
# The modules listed before the one wanted: `import a.b as c, d, `.
_MODULE_LIST = re.compile(rb"(?:[\w\x80-\xff. \t\f,]|\\(?:\r\n?|\n))*")
_STAR_IMPORT = re.compile(
    rb"from(?<![\w\x80-\xff.]from)(?:[ \t\f]|\\(?:\r\n?|\n))+(?=[A-Za-z_\x80-\xff])(?:[^\r\n]|\\(?:\r\n?|\n))*?import(?:[ \t\f(]|\\(?:\r\n?|\n))*\*"
)


def _logical_line_before(text: bytes, position: int) -> bytes:
    """The text from the start of the line holding ``position`` (or of the
    lines it continues with a backslash) up to it. Lines end as Python
    ends them: at a line feed, a carriage return, or both."""
    start = _line_start(text, position)
    while start > 0:
        end = start - 1  # the line break's last byte
        if text[end] == 0x0A and end > 0 and text[end - 1] == 0x0D:
            end -= 1
        if end == 0 or text[end - 1] != 0x5C:
            break
        start = _line_start(text, end - 1)
    return text[start:position]


def _line_start(text: bytes, position: int) -> int:
    return max(text.rfind(b"\n", 0, position), text.rfind(b"\r", 0, position)) + 1


def top_module(name: str) -> Optional[str]:
    """The first component of a qualified name, if it is a plain identifier."""
    top = name.split(".")[0]
    return top if top.isidentifier() else None


def _starts_a_word(text: bytes, position: int) -> bool:
    return position == 0 or text[position - 1] not in _IDENTIFIER_BYTE


@lru_cache(maxsize=64)
def _whole_words(alternation: bytes) -> "re.Pattern":
    """The words of ``alternation`` not followed by an identifier's byte
    (whether one precedes is ``_starts_a_word``: a search that begins with
    a look behind tries every position)."""
    return re.compile(rb"(?:" + alternation + rb")" + _AFTER)


_ATTRIBUTES = rb"(?:" + _GAP + rb"*\." + _GAP + rb"*[A-Za-z_\x80-\xff][\w\x80-\xff]*)+"


@dataclass(frozen=True)
class TieOfMoved:
    """A statement tying one attribute chain of a name to another of the
    same name (`model.head.weight = model.embed.weight`), where the name is
    also moved (`model.to(...)`, one of ``methods``) somewhere in the file."""

    methods: tuple

    def search(self, text: bytes) -> bool:
        # The moves first: a search for a literal `.` is fast, and few names are moved.
        moved = set()
        for match in method_call(self.methods).finditer(text):
            end = match.start()
            while end > 0 and text[end - 1] in _SPACES:
                end -= 1
            start = end
            while start > 0 and text[start - 1] in _IDENTIFIER_BYTE:
                start -= 1
            if start < end and (start == 0 or text[start - 1] != 0x2E):
                moved.add(text[start:end])
        return any(_tie_of(name).search(text) for name in moved if b"=" in text)


@lru_cache(maxsize=16)
def method_call(methods: tuple) -> "re.Pattern":
    """`.to(`, `. cuda (`, `(m.to)(`: where a call of one of ``methods`` is
    (the object it is called on is before the `.`)."""
    return re.compile(rb"\.[\s\\]*(?:" + _words(methods) + rb")[\s\\)]*\(")


@lru_cache(maxsize=256)
def _tie_of(name: bytes) -> "re.Pattern":
    """`name.a.b = name.c`, `(name.a) = (name.c)`: one attribute chain of
    ``name`` assigned another (the name first: a literal is searched fast)."""
    word = re.escape(name)
    return re.compile(
        word + rb"(?<![\w\x80-\xff.]" + word + rb")" + _ATTRIBUTES + rb"(?:" + _GAP + rb"|\))*=(?!=)(?:" + _GAP + rb"|\()*"
        + word + _AFTER + _GAP + rb"*\."
    )
