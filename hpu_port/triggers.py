"""Deciding cheaply which rules could act on a file, before it is parsed.

Each rule has triggers: alternatives, any of which must occur in a file for
the rule to possibly match it. A trigger is a set of whole identifiers that
must all occur (every component of `torch.cuda.amp.GradScaler`, since each is
spelled in the import or in the attribute chain) plus pieces of text that
must occur as they are (`.backward(`). Kinds derive triggers from their rule
data; a rule file can name its own with `triggers = [...]` (pieces of text).

Two screens use them: one on the raw bytes of every file, and one, for the
files that pass, on the code with its comments and bare string statements
(docstrings) blanked out, since no rule reads those. The second one also
lets a kind look at the standard parser's tree (``Kind.screen``), which costs
a fraction of the full parse the file would need otherwise.
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Iterable, Optional

# Identifier bytes stay, everything else becomes a separator, so that
# `source.translate(WORD_BYTES).split()` lists the identifiers of a file (and the
# words of its strings and comments) in one C-speed pass.
WORD_BYTES = bytes(c if chr(c).isalnum() and c < 128 or c == ord("_") else ord(" ") for c in range(256))
_WORD = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Trigger:
    """Whole ``words`` that must all occur, and ``texts`` that must all occur as they are."""

    words: frozenset = frozenset()
    texts: frozenset = frozenset()


def name_trigger(qualified: str, *extra_words: str) -> Trigger:
    """Every spelling of an imported name mentions each of its components."""
    parts = [part for part in qualified.split(".") if part and "*" not in part]
    return Trigger(words=frozenset(p.encode() for p in (*parts, *extra_words)))


def text_trigger(text: str) -> Trigger:
    """A piece of text, plus the words it encloses (`backward` in `.backward(`),
    which are checked first because checking words is cheaper."""
    enclosed = [m.group() for m in _WORD.finditer(text) if m.start() > 0 and m.end() < len(text)]
    return Trigger(words=frozenset(w.encode() for w in enclosed), texts=frozenset({text.encode()}))


def words_of(source: bytes, wanted: frozenset) -> set:
    """The ``wanted`` identifiers that occur in ``source`` as whole words."""
    return wanted.intersection(source.translate(WORD_BYTES).split())


class TriggerIndex:
    """The triggers of a list of rules, ready to test files against."""

    def __init__(self, entries: Iterable[tuple[object, Optional[list[Trigger]]]]) -> None:
        # None: the rule has no triggers and rides along with the others
        # (an import added as the consequence of another rule's fix).
        self.entries = list(entries)
        self.words = frozenset(w for _, triggers in self.entries for t in triggers or () for w in t.words)
        self._triggered = frozenset(id(rule) for rule, triggers in self.entries if triggers)
        # Each trigger filed under one of its words (the longest: usually the
        # rarest), so that a file is tested only against the triggers whose
        # word it contains, not against every rule.
        self._by_word: dict[bytes, list[tuple[int, Trigger]]] = {}
        self._wordless: list[tuple[int, Trigger]] = []
        for position, (_, triggers) in enumerate(self.entries):
            for trigger in triggers or ():
                if trigger.words:
                    key = max(sorted(trigger.words), key=len)
                    self._by_word.setdefault(key, []).append((position, trigger))
                else:
                    self._wordless.append((position, trigger))

    def has_triggers(self, rule) -> bool:
        return id(rule) in self._triggered

    @property
    def empty(self) -> bool:
        return not any(triggers for _, triggers in self.entries)

    def matching(self, source: bytes) -> list:
        """The rules whose triggers occur in ``source``, and those without triggers;
        empty when no rule with triggers matches."""
        matched = self._matched(words_of(source, self.words), source, first_only=False)
        if not matched:
            return []
        return [rule for position, (rule, triggers) in enumerate(self.entries) if triggers is None or position in matched]

    def matches(self, present: set, source: bytes) -> bool:
        """Whether any rule's trigger occurs, given the words ``present`` in ``source``."""
        return bool(self._matched(present, source, first_only=True))

    def _matched(self, present: set, source: bytes, first_only: bool) -> set[int]:
        filed = chain.from_iterable(self._by_word[key] for key in present & self._by_word.keys())
        matched: set[int] = set()
        for position, trigger in chain(filed, self._wordless):
            if position not in matched and _occurs(trigger, present, source):
                matched.add(position)
                if first_only:
                    break
        return matched


def _occurs(trigger: Trigger, present: set, source: bytes) -> bool:
    return trigger.words <= present and all(text in source for text in trigger.texts)


@dataclass
class CodeView:
    """A file as the standard parser sees it: its tree, its nodes by type, and
    its text with comments and bare string statements blanked out (line
    structure kept)."""

    tree: ast.AST
    text: bytes
    by_type: dict

    def nodes(self, node_type: type) -> list:
        return self.by_type.get(node_type, [])

    def imported_names(self, modules: Optional[set] = None) -> set:
        """Names the file's imports bind (only those from ``modules``, if given)."""
        names = set()
        for node in self.nodes(ast.Import):
            for alias in node.names:
                if modules is None or alias.name.split(".")[0] in modules:
                    names.add((alias.asname or alias.name).split(".")[0])
        for node in self.nodes(ast.ImportFrom):
            if modules is None or (node.module and node.module.split(".")[0] in modules):
                names.update(alias.asname or alias.name for alias in node.names)
        return names


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on, its decorators included."""
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])


def ast_root(expr: ast.AST) -> Optional[str]:
    """The name an attribute chain starts from (`model` in `model.a.weight`)."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def code_view(source: bytes) -> Optional[CodeView]:
    """The file's CodeView; None when the standard parser cannot say (a syntax
    error, syntax newer than this Python, an encoding other than UTF-8): then
    the file goes to the full parser, which decides.
    """
    if source.startswith(b"\xef\xbb\xbf"):
        source = source[3:]
    if _declares_other_encoding(source):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = source.splitlines(keepends=True)
    by_type: dict = {}
    prose, strings = _prose_and_string_spans(tree, by_type)
    blanked = [bytearray(line) for line in lines]
    for span in prose:
        _blank(blanked, span)
    for number, start in _comment_starts(lines, strings):
        _blank(blanked, (number, start, number, len(lines[number - 1])))
    return CodeView(tree, b"".join(blanked), by_type)


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _declares_other_encoding(source: bytes) -> bool:
    # The parser's column offsets count UTF-8 bytes of the decoded text;
    # they match the file's bytes only when the file is UTF-8.
    for line in source.splitlines()[:2]:
        match = _COOKIE.match(line)
        if match:
            name = match.group(1).decode("ascii", "replace").lower().replace("_", "-")
            return not (name.startswith("utf-8") or name == "utf8")
    return False


Span = tuple  # (first line, first column, last line, end column): 1-based lines, byte columns


def _prose_and_string_spans(tree: ast.AST, by_type: dict) -> tuple[list, list]:
    # A hand-rolled walk: ast.walk costs three times the parse on big files.
    # It also files every node under its type, for the kinds' screens.
    prose: list = []
    strings: list = []
    stack = [tree]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        if node is None:  # an absent item of a list (`{**x}` has a None key)
            continue
        kind = type(node)
        found = by_type.get(kind)
        if found is None:
            by_type[kind] = [node]
        else:
            found.append(node)
        if kind is ast.Constant or kind is ast.JoinedStr:
            if kind is ast.JoinedStr or isinstance(node.value, (str, bytes)):
                strings.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))
            continue
        if kind is ast.Expr and _is_bare_string(node.value):
            prose.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))
            continue
        for name in _node_fields(kind):
            value = getattr(node, name)
            if type(value) is list:
                extend(value)
            elif value is not None:
                push(value)
    return prose, strings


@lru_cache(maxsize=None)
def _node_fields(kind: type) -> tuple:
    """The fields of a node type that hold nodes or lists of nodes: not names,
    numbers and flags, and not the context and operator markers (`Load`,
    `Add`), which nothing looks at."""
    leaves = _LEAF_FIELDS | ({"names"} if kind in (ast.Global, ast.Nonlocal) else set())
    return tuple(name for name in kind._fields if name not in leaves)


# Fields whose values are strings, numbers, flags, or operator markers.
_LEAF_FIELDS = frozenset(
    {
        "ctx", "op", "ops", "id", "attr", "name", "arg", "asname", "module", "level", "kind",
        "type_comment", "is_async", "conversion", "simple", "tag", "rest", "kwd_attrs",
    }
)


def _is_bare_string(value: ast.AST) -> bool:
    return isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes)))


def _comment_starts(lines: list, strings: list) -> list:
    """(line, column) of each `#` that starts a comment: one outside every string."""
    with_hash = [n for n, line in enumerate(lines, 1) if b"#" in line]
    if not with_hash:
        return []
    inside: dict[int, list] = {}
    for first, start, last, end in strings:
        lo = bisect.bisect_left(with_hash, first)
        hi = bisect.bisect_right(with_hash, last)
        for number in with_hash[lo:hi]:
            inside.setdefault(number, []).append(
                (start if number == first else 0, end if number == last else len(lines[number - 1]))
            )
    found = []
    for number in with_hash:
        line = lines[number - 1]
        column = line.find(b"#")
        while column != -1:
            if not any(a <= column < b for a, b in inside.get(number, ())):
                found.append((number, column))
                break
            column = line.find(b"#", column + 1)
    return found


def _blank(lines: list, span: Span) -> None:
    first, start, last, end = span
    for number in range(first, last + 1):
        line = lines[number - 1]
        text_end = len(line.rstrip(b"\r\n"))
        a = start if number == first else 0
        b = min(end if number == last else text_end, text_end)
        if a < b:
            line[a:b] = b" " * (b - a)
