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
from itertools import chain, compress, count, repeat
from operator import contains
from typing import Iterable, Iterator, Optional

from hpu_port.ast_nodes import node_fields
from hpu_port.shapes import written
from hpu_port.words import IDENTIFIER_RUN, words_in

_WORD = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Trigger:
    """Whole ``words`` that must all occur, ``texts`` that must all occur as
    they are, and a ``pattern`` (bytes) that must match, tested last: a form of
    statement that words cannot tell (`for i in range(` at a line's start,
    not in a comprehension). ``alongside``: triggers of which one must also
    occur somewhere in the file (a marker of a training script the advice is
    for), tested on whole files only, never on a part of one."""

    words: frozenset = frozenset()
    texts: frozenset = frozenset()
    pattern: Optional["re.Pattern"] = None
    alongside: tuple = ()


def name_trigger(qualified: str, *extra_words: str) -> Trigger:
    """Every spelling of an imported name mentions each of its components."""
    parts = [part for part in qualified.split(".") if part and "*" not in part]
    return Trigger(words=frozenset(p.encode() for p in (*parts, *extra_words)))


def text_trigger(text: str) -> Trigger:
    """A piece of text, plus the words it encloses (`backward` in `.backward(`),
    which are checked first because checking words is cheaper."""
    enclosed = [m.group() for m in _WORD.finditer(text) if m.start() > 0 and m.end() < len(text)]
    return Trigger(words=frozenset(w.encode() for w in enclosed), texts=frozenset({text.encode()}))


class TriggerIndex:
    """The triggers of a list of rules, ready to test files against."""

    def __init__(self, entries: Iterable[tuple[object, Optional[list[Trigger]]]]) -> None:
        # None: the rule has no triggers and rides along with the others
        # (an import added as the consequence of another rule's fix).
        self.entries = list(entries)
        every = [t for _, triggers in self.entries for t in triggers or ()]
        self._words = frozenset(w for t in every for w in t.words)
        self._text_parts = frozenset(part for t in every for text in t.texts for part in _word_parts(text))
        self._text_without_words = any(not _word_parts(text) for t in every for text in t.texts)
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

    def could_use(self, words: Iterable[bytes]) -> bool:
        """Whether adding ``words`` to a text could make a trigger match it: one
        is a trigger's word, or holds part of a trigger's text."""
        if self._text_without_words:
            return True
        return any(w in self._words or any(part in w for part in self._text_parts) for w in words)

    def has_triggers(self, rule) -> bool:
        return id(rule) in self._triggered

    def __setstate__(self, state: dict) -> None:
        # Rules are known by identity: a copy in a worker has new ones.
        self.__dict__.update(state)
        self._triggered = frozenset(id(rule) for rule, triggers in self.entries if triggers)

    @property
    def empty(self) -> bool:
        return not any(triggers for _, triggers in self.entries)

    def matching(self, source: bytes, shapes: bool = True) -> list:
        """The rules whose triggers occur in ``source``, and those without triggers;
        empty when no rule with triggers matches. ``shapes``: False to test
        only words and texts, patterns counting as found (``source`` is not
        laid out as Python, a notebook's JSON; or the patterns were asked of
        the same file's bytes already)."""
        matched = self._matched(words_in(source), source, first_only=False, whole_file=True, shapes=shapes)
        if not matched:
            return []
        return [rule for position, (rule, triggers) in enumerate(self.entries) if triggers is None or position in matched]

    def matches(self, words: set, source: bytes) -> bool:
        """Whether any rule's trigger occurs in ``source``, a part of a file
        (a function), whose words are ``words``."""
        return bool(self._matched(words, source, first_only=True, whole_file=False))

    def _matched(self, words: set, source: bytes, first_only: bool, whole_file: bool, shapes: bool = True) -> set[int]:
        filed = chain.from_iterable(self._by_word[key] for key in words & self._by_word.keys())
        texts = _Texts(words, source)
        matched: set[int] = set()
        for position, trigger in chain(filed, self._wordless):
            if position not in matched and _occurs(trigger, words, texts, source, shapes):
                if whole_file and trigger.alongside and not any(_occurs(t, words, texts, source, shapes) for t in trigger.alongside):
                    continue
                matched.add(position)
                if first_only:
                    break
        return matched


def _occurs(trigger: Trigger, words: set, texts: "_Texts", source: bytes, shapes: bool = True) -> bool:
    return (
        trigger.words <= words
        and all(map(texts.occurs, trigger.texts))
        and (trigger.pattern is None or not shapes or bool(trigger.pattern.search(source)))
    )


class _Texts:
    """Whether pieces of text occur in a file, each looked up once.

    Many triggers are texts (`cuda`, `.backward(`) tested against every file.
    A text made only of identifier characters occurs exactly when it is part of
    one of the file's distinct words, and those, joined, are a small fraction of
    the file; other texts are looked for in the file once their identifier
    parts were found among its words.
    """

    def __init__(self, words: set, source: bytes) -> None:
        self._words = words
        self._source = source
        self._joined: Optional[bytes] = None
        self._seen: dict[bytes, bool] = {}

    def occurs(self, text: bytes) -> bool:
        found = self._seen.get(text)
        if found is None:
            found = self._seen[text] = self._look_up(text)
        return found

    def _look_up(self, text: bytes) -> bool:
        if self._joined is None:
            self._joined = b" ".join(self._words)
        parts = _word_parts(text)
        if not all(part in self._joined for part in parts):
            return False
        return parts == (text,) or text in self._source


@lru_cache(maxsize=None)
def _word_parts(text: bytes) -> tuple:
    return tuple(IDENTIFIER_RUN.findall(text))


class CodeView:
    """A file as the standard parser sees it: its tree, its nodes by type, and
    its text with comments and bare string statements blanked out (line
    structure kept).

    Statements are indexed when the view is made; other nodes (calls, names)
    only when a kind's screen first asks for them, since walking every
    expression of a big file costs about half of parsing it."""

    def __init__(self, tree: ast.AST, text: bytes, statements: dict, first_line: bytes = b"") -> None:
        self.tree = tree
        self.text = text
        # As written: ``text`` has its comments blanked, and a notebook's
        # cells, joined as a module, start with a marker comment.
        self.first_line = first_line
        self._statements = statements
        self._everything: Optional[dict] = None
        self._line_starts: Optional[list] = None
        self._referenced: Optional[frozenset] = None
        self._remembered: dict = {}

    def remembered(self, key, compute):
        """``compute()``, once per view and ``key``: a kind's screen and its
        places (see ``Kind.places``) ask the same question of a file."""
        if key not in self._remembered:
            self._remembered[key] = compute()
        return self._remembered[key]

    def nodes(self, node_type: type) -> list:
        if issubclass(node_type, ast.stmt):
            return self._statements.get(node_type, [])
        if self._everything is None:
            self._everything = _nodes_by_type(self.tree)
        return self._everything.get(node_type, [])

    def lines_matching(self, pattern: "re.Pattern") -> list:
        """The numbers of the lines (1-based, sorted) that a match of
        ``pattern`` in the code's text starts or ends on."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(self.text))]
        starts = self._line_starts
        lines = set()
        for match in pattern.finditer(self.text):
            lines.add(bisect.bisect_right(starts, match.start()))
            lines.add(bisect.bisect_right(starts, max(match.start(), match.end() - 1)))
        return sorted(lines)

    def nodes_on_lines(self, node_type: type, lines: list) -> list:
        """The nodes of ``node_type`` (of the kinds ``nodes`` indexes) in the
        statements that hold one of ``lines`` (sorted, from ``lines_matching``):
        the others are not walked. A screen that can tell from the text
        where what it looks for could be asks this instead of ``nodes``."""
        if not lines:
            return []
        if self._everything is not None:
            return self._everything.get(node_type, [])
        found = []
        stack = list(self.tree.body)
        while stack:
            statement = stack.pop()
            if not _holds_a_line(lines, first_line(statement), statement.end_lineno):
                continue
            children = child_statements(statement)
            found += [node for node in _walk_expressions(_header_of(statement) if children else [statement]) if type(node) is node_type]
            stack.extend(children)
        return found

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

    def referenced_names(self) -> Optional[frozenset]:
        """Every qualified name the file's imports could make a name or an
        attribute chain refer to (`torch.sparse.mm` for `import torch` and
        `torch.sparse.mm(a, b)`), and the imported modules themselves, with
        no regard to scopes: more than the full parser's references, never
        fewer. None when a star import makes them unknowable."""
        if self._referenced is None:
            self._referenced = _referenced_names(self)
        return self._referenced or None

    def may_reference(self, wanted: frozenset) -> bool:
        """Whether a name of ``referenced_names()`` is one of ``wanted`` or under
        one. Told from the imports and the file's words where they suffice:
        an attribute chain reaching a wanted name spells each of its parts
        after the imported one, so without those words no walk of every
        expression is needed."""
        if self._referenced is None:
            imports = self.remembered("import bindings", lambda: _imports_and_targets(self))
            if imports is None:
                return True
            imported, targets = imports
            if any(_under(name, wanted) for name in imported):
                return True
            words = words_in(self.text)
            if not any(_spelled_after(name, targets, words) for name in wanted):
                return False
            # Only the names bound to a module on the way to a wanted name
            # matter: the statements where they are written are walked.
            bound, _ = import_bindings(self)
            leading = sorted(local for local, names in bound.items() if any(_on_the_way(name, wanted) for name in names))
            lines = self.lines_matching(written(tuple(leading))) if leading else []
            return any(_under(name, wanted) for name in _referenced_names(self, lines))
        referenced = self.referenced_names()
        return referenced is None or any(_under(name, wanted) for name in referenced)


def _on_the_way(qualified: str, wanted: frozenset) -> bool:
    """Whether ``qualified`` is a wanted name, under one, or a module one is under."""
    return _under(qualified, wanted) or any(name.startswith(qualified + ".") for name in wanted)


def _referenced_names(view: CodeView, lines: Optional[list] = None) -> frozenset:
    """``CodeView.referenced_names``; with ``lines``, only those the
    statements that hold them make (see ``CodeView.nodes_on_lines``)."""
    imports = import_bindings(view)
    if imports is None:
        return frozenset()
    bound, found = imports
    found = set(found)
    names = view.nodes(ast.Name) if lines is None else view.nodes_on_lines(ast.Name, lines)
    attributes = view.nodes(ast.Attribute) if lines is None else view.nodes_on_lines(ast.Attribute, lines)
    for node in names:
        found.update(bound.get(node.id, ()))
    for node in attributes:
        parts = []
        expr = node
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if isinstance(expr, ast.Name) and expr.id in bound:
            rest = ".".join(reversed(parts))
            found.update(f"{target}.{rest}" for target in bound[expr.id])
    return frozenset(found) or frozenset({""})


def _under(qualified: str, wanted: frozenset) -> bool:
    """Whether ``qualified`` is one of ``wanted`` or a name under one."""
    parts = qualified.split(".")
    return any(".".join(parts[:end]) in wanted for end in range(1, len(parts) + 1))


def _spelled_after(name: str, targets: frozenset, words: frozenset) -> bool:
    """Whether ``name`` lies under one of ``targets`` and the file holds the
    words of the parts between them."""
    parts = name.split(".")
    return any(
        ".".join(parts[:end]) in targets and all(part.encode() in words for part in parts[end:])
        for end in range(1, len(parts))
    )


def _imports_and_targets(view: CodeView) -> Optional[tuple[set, frozenset]]:
    """(the qualified names the file imports, those its imported names stand
    for), or None after a star import."""
    imports = import_bindings(view)
    if imports is None:
        return None
    bound, imported = imports
    return imported, frozenset().union(*bound.values())


def import_bindings(view: CodeView) -> Optional[tuple[dict, set]]:
    """(each name the file's imports bind: the qualified names it stands for;
    the qualified names imported), or None after a star import."""
    bound: dict[str, set] = {}
    found = set()
    for node in view.nodes(ast.Import):
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            bound.setdefault(local, set()).add(alias.name if alias.asname else local)
            found.add(alias.name)
    for node in view.nodes(ast.ImportFrom):
        if node.level or not node.module:
            continue  # relative imports are not resolved by the full parser either
        for alias in node.names:
            if alias.name == "*":
                return None
            bound.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
            found.add(f"{node.module}.{alias.name}")
    return bound, found


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
    # The numbers of the lines holding a `#`, counted in C (a big file has a million lines).
    with_hash = list(compress(count(1), map(contains, lines, repeat(b"#"))))
    statements: dict = {}
    prose, strings = _prose_and_string_spans(tree, with_hash, statements)
    blanked = list(lines)
    for span in prose:
        _blank(blanked, span)
    for number, start in _comment_starts(lines, with_hash, strings):
        _blank(blanked, (number, start, number, len(lines[number - 1])))
    return CodeView(tree, b"".join(blanked), statements, lines[0] if lines else b"")


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _declares_other_encoding(source: bytes) -> bool:
    # The parser's column offsets count UTF-8 bytes of the decoded text;
    # they match the file's bytes only when the file is UTF-8.
    head = source[:4096]
    if head.count(b"\n") + head.count(b"\r") < 2:  # the first two lines are longer
        head = source
    for line in head.splitlines()[:2]:
        match = _COOKIE.match(line)
        if match:
            name = match.group(1).decode("ascii", "replace").lower().replace("_", "-")
            return not (name.startswith("utf-8") or name == "utf8")
    return False


Span = tuple  # (first line, first column, last line, end column): 1-based lines, byte columns


def _prose_and_string_spans(tree: ast.AST, with_hash: list, statements: dict) -> tuple[list, list]:
    """The spans of bare string statements (docstrings) and of the strings
    that share a line with a `#` (which is then no comment); every statement
    filed under its type on the way.

    Only statements are walked, and the expressions of a simple statement
    only when one of its lines holds a `#`: most lines hold none.
    """
    prose: list = []
    strings: list = []
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        kind = type(node)
        statements.setdefault(kind, []).append(node)
        if kind is ast.Expr and _is_bare_string(node.value):
            prose.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))
            continue
        children = child_statements(node)
        if children:
            stack.extend(reversed(children))
            if _holds_a_line(with_hash, first_line(node), _header_end(node, children)):
                _strings_in(_header_of(node), strings)
        elif _holds_a_line(with_hash, node.lineno, node.end_lineno):
            _strings_in([node], strings)
    return prose, strings


# The fields of a compound statement that hold statements, directly or in
# clauses (`except`, `case`).
_BLOCKS = ("body", "orelse", "finalbody")
_CLAUSES = ("handlers", "cases")


def child_statements(node: ast.stmt) -> list:
    """The statements directly inside a compound statement, its clauses' included."""
    children: list = []
    for name in _BLOCKS:
        value = getattr(node, name, None)
        if value:
            children.extend(value)
    for group in getattr(node, "handlers", ()) or getattr(node, "cases", ()):
        children.extend(group.body)
    return children


def _header_end(node: ast.stmt, children: list) -> int:
    """The last line a compound statement's header may reach: where its
    first inner statement starts; the whole statement when clauses with
    headers of their own follow (`except E:`, `case p:`)."""
    if getattr(node, "handlers", None) or getattr(node, "cases", None):
        return node.end_lineno
    return children[0].lineno


def _header_of(node: ast.stmt) -> list:
    """What a compound statement holds besides its statements (a loop's
    target and iterable, a function's decorators and arguments, an except
    clause's exception)."""
    parts = [getattr(node, name) for name in node_fields(type(node)) if name not in _BLOCKS and name not in _CLAUSES]
    for group in getattr(node, "handlers", ()):
        parts.append(group.type)
    for group in getattr(node, "cases", ()):
        parts += [group.pattern, group.guard]
    return parts


def _holds_a_line(lines: list, first: int, last: int) -> bool:
    """Whether one of ``lines`` (sorted) lies in ``first``..``last``."""
    index = bisect.bisect_left(lines, first)
    return index < len(lines) and lines[index] <= last


# Line breaks as Python counts them (a lone carriage return is one).
_LINE_BREAK = re.compile(rb"\r\n?|\n")


def _strings_in(roots: list, strings: list) -> None:
    """Adds the span of every string constant and f-string under ``roots``."""
    for node in _walk_expressions(roots):
        kind = type(node)
        if kind is ast.JoinedStr or (kind is ast.Constant and isinstance(node.value, (str, bytes))):
            strings.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))


def _nodes_by_type(tree: ast.AST) -> dict:
    by_type: dict = {}
    for node in _walk_expressions([tree]):
        by_type.setdefault(type(node), []).append(node)
    return by_type


# A constant holds no node; an f-string is taken as one string.
_NOT_ENTERED = (ast.Constant, ast.JoinedStr)


def _walk_expressions(roots: list) -> Iterator[ast.AST]:
    # A hand-rolled walk: ast.walk costs three times the parse on big files.
    stack = [root for root in roots if root is not None]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        if node is None:  # an absent item of a list (`{**x}` has a None key)
            continue
        if type(node) is list:
            extend(node)
            continue
        yield node
        if type(node) in _NOT_ENTERED:
            continue
        for name in node_fields(type(node)):
            value = getattr(node, name)
            if type(value) is list:
                extend(value)
            elif value is not None:
                push(value)


def _is_bare_string(value: ast.AST) -> bool:
    return isinstance(value, ast.JoinedStr) or (isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes)))


def _comment_starts(lines: list, with_hash: list, strings: list) -> list:
    """(line, column) of each `#` that starts a comment: one outside every string."""
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
            lines[number - 1] = line[:a] + b" " * (b - a) + line[b:]
