"""Parse less when only reporting: stub out the functions and classes no rule could act on.

The full parse costs about ten times the standard parser's, and in a big model
file the rules usually act in a few functions out of hundreds. For `check`
(nothing is rewritten), each top-level function and class, and each method of
a class, is tested with the same triggers that screen whole files; one in
which no selected rule could match becomes `def name():` on its first line,
followed by a string that ends on its last line (a class with bases keeps its
`class` statement as written, so that a subclass of a subclass of a library
class is still known as one). Every other line keeps its bytes, so findings
keep their line and column, and names stay bound where they were.

A unit is kept when:
- it holds a place where a rule whose kind tells where it could act
  (`Kind.places`: a loop under `torch.no_grad()`) could act there;
- its code, with each import alias spelled out (`sync()` is
  `torch.cuda.synchronize()`), matches a selected rule's triggers, or its raw
  text (comments too) matches a rule that reads comments;
- it mentions a name some rule consults elsewhere in the file (`Kind.context`:
  the optimizer constructors that tell `opt.step()` is a step, say);
- it declares `global` or `nonlocal` names (it binds names outside itself).

Uses of an import inside stubbed code are not counted; they only decide
whether `rewrite` would drop an import all of whose uses it rewrote, and a
use that could be rewritten is never stubbed.

`rewrite` ports each file so first too, and parses the whole file only when
its rules planned an edit there: it prints that file back
(``engine._port_parsing_less``).
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from itertools import accumulate
from typing import Iterator, Optional

from hpu_port.settings import RuleSet
from hpu_port.triggers import CodeView, TriggerIndex, first_line
from hpu_port.words import IDENTIFIER_RUN, WORD_BYTES

_UNITS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BOM = b"\xef\xbb\xbf"


def narrow(source: bytes, view: CodeView, rules: RuleSet) -> Optional[bytes]:
    """The source with every unit no rule could act on stubbed; None when
    nothing would be stubbed or the file's layout is unusual (a byte order
    mark, lone carriage returns), where the whole file is parsed."""
    narrowed, _ = narrow_units(source, view, rules)
    return narrowed


def narrow_units(source: bytes, view: CodeView, rules: RuleSet) -> tuple[Optional[bytes], frozenset]:
    """``narrow``'s source, and the ids of the standard parser's nodes of
    the units it stubbed (whose code the full parser is then never given)."""
    if source.startswith(_BOM) or source.count(b"\r") != source.count(b"\r\n"):
        return None, frozenset()
    relevant = _Relevance(view, rules)
    raw_lines = source.splitlines(keepends=True)
    code_lines = view.text.splitlines(keepends=True)
    if len(raw_lines) != len(code_lines):
        return None, frozenset()
    stubs = list(_units(view.tree.body, relevant, raw_lines, code_lines))
    if not stubs:
        return None, frozenset()
    lines = list(raw_lines)
    for node, first, last in stubs:
        _write_stub(lines, node, first, last)
    return b"".join(lines), frozenset(id(node) for node, _, _ in stubs)


def _write_stub(lines: list, node: ast.AST, first: int, last: int) -> None:
    """Replace lines ``first``..``last`` (1-based) by a stub binding the same name."""
    if isinstance(node, ast.ClassDef) and _class_bases(node):
        # The `class` statement's lines stay as written, from its name to its
        # body (see ``_stubbable``); its decorators become blank lines.
        for number in range(first, node.lineno):
            lines[number - 1] = _ending(lines[number - 1])
        # The body begins at its first statement's decorators, if any.
        body_first = first_line(node.body[0])
        _fill(lines, body_first, last, lines[body_first - 1][: node.body[0].col_offset])
        return
    _fill(lines, first, last, _stub_header(node, lines) + b" ")


def _fill(lines: list, first: int, last: int, head: bytes) -> None:
    """Lines ``first``..``last`` become ``head`` and `pass`, or ``head`` and
    one string spanning the other lines: a single token for the parser, where
    empty lines would each be a node."""
    if first == last:
        lines[first - 1] = head + b"pass" + _ending(lines[first - 1])
        return
    lines[first - 1] = head + b'"""' + _ending(lines[first - 1])
    for number in range(first + 1, last):
        lines[number - 1] = _ending(lines[number - 1])
    lines[last - 1] = b'"""' + _ending(lines[last - 1])


def _units(body: list, relevant: "_Relevance", raw_lines: list, code_lines: list) -> Iterator[tuple]:
    """(node, first line, last line) of each unit to stub: classes whole when
    nothing in them is relevant, else their methods one by one."""
    for node in body:
        if not isinstance(node, _UNITS):
            continue
        first = first_line(node)
        last = node.end_lineno
        code = b"".join(code_lines[first - 1:last])
        raw = b"".join(raw_lines[first - 1:last])
        if not relevant(code, raw, first, last) and _stubbable(node):
            yield node, first, last
        elif isinstance(node, ast.ClassDef):
            yield from _units(node.body, relevant, raw_lines, code_lines)


def _stubbable(node: ast.AST) -> bool:
    # A class keeps its bases (a subclass of a subclass of a library class
    # is followed through it), so its body must begin on a line of its own.
    return not (isinstance(node, ast.ClassDef) and _class_bases(node) and node.body[0].lineno == node.lineno)


def _class_bases(node: ast.ClassDef) -> bool:
    return bool(node.bases or node.keywords)


def _stub_header(node: ast.AST, raw_lines: list) -> bytes:
    line = raw_lines[node.lineno - 1]
    indent = line[: len(line) - len(line.lstrip(b" \t\f"))]
    keyword = b"class " if isinstance(node, ast.ClassDef) else b"def "
    signature = b":" if isinstance(node, ast.ClassDef) else b"():"
    return indent + keyword + node.name.encode() + signature


def _ending(line: bytes) -> bytes:
    if line.endswith(b"\r\n"):
        return b"\r\n"
    return b"\n" if line.endswith(b"\n") else b""


class _Relevance:
    """Whether a unit's text could hold something a selected rule acts on."""

    def __init__(self, view: CodeView, rules: RuleSet) -> None:
        # Rules whose kind tells where they could act are asked that, not
        # their triggers: `range` and `torch` are in most functions of a
        # model file, a loop indexing a tensor with its variable in few.
        self.index: TriggerIndex = rules.unplaced_trigger_index
        self.places = _Places(rules.places(view))
        self.comment_index: Optional[TriggerIndex] = rules.comment_trigger_index
        self.context: TriggerIndex = rules.context_index
        aliases, self.everywhere = _aliases(view)
        # Only aliases whose spelled-out name could make some rule match
        # (`nn` for `torch.nn`, not `logging` for `transformers.utils.logging`).
        self.aliases = {name: targets for name, targets in aliases.items() if self._could_matter(targets)}

    def _could_matter(self, targets: list) -> bool:
        words = {w for target in targets for w in target.split(b".")}
        if self.context.could_use(words) or self.index.could_use(words):
            return True
        return self.comment_index is not None and self.comment_index.could_use(words)

    def __call__(self, code: bytes, raw: bytes, first: int, last: int) -> bool:
        if self.places.meet(first, last):
            return True
        words = set(code.translate(WORD_BYTES).split())
        if b"global" in words or b"nonlocal" in words:
            return True
        spelled = self._spelled_out(code, words)
        if spelled:
            code += b"\n" + spelled
            raw += b"\n" + spelled
            words |= set(spelled.translate(WORD_BYTES).split())
        if self.context.matches(words, code) or self.index.matches(words, code):
            return True
        if self.comment_index is not None:
            raw_words = set(raw.translate(WORD_BYTES).split()) | words
            if self.comment_index.matches(raw_words, raw):
                return True
        return False

    def _spelled_out(self, code: bytes, words: set) -> bytes:
        """The unit's code with each import alias written as what it stands
        for (`sync()` -> `torch.cuda.synchronize()`), so that triggers match
        as they would on the full name; and the modules imported with `*`."""
        used = words & self.aliases.keys()
        if not used and not self.everywhere:
            return b""
        parts = list(self.everywhere)
        if used:
            parts.append(_spelled_aliases(code, self.aliases))
            # An alias bound by several imports (`try: ... except ImportError:`)
            parts += [target for name in used for target in self.aliases[name][1:]]
        return b"\n".join(parts)


class _Places:
    """Line spans, asked whether any meets a unit's lines."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        spans = sorted(spans)
        self.firsts = [first for first, _ in spans]
        # The furthest line reached by a span starting at or before each one.
        self.reach = list(accumulate((last for _, last in spans), max))

    def meet(self, first: int, last: int) -> bool:
        starting = bisect_right(self.firsts, last)
        return starting > 0 and self.reach[starting - 1] >= first


def _spelled_aliases(code: bytes, aliases: dict) -> bytes:
    """``code`` with each word that is an alias written as the first name it
    stands for. The words are split out, not matched by a pattern of the
    file's aliases: compiling one per file cost more than the narrowing."""
    parts = IDENTIFIER_RUN.split(code)
    parts[1::2] = [aliases[word][0] if word in aliases else word for word in parts[1::2]]
    return b"".join(parts)


def _aliases(view: CodeView) -> tuple[dict, list]:
    """Each name an import binds to something else -> the dotted names it
    stands for; and the modules imported with `*` (any name may come from them)."""
    aliases: dict[bytes, list] = {}
    everywhere: list[bytes] = []
    for node in view.nodes(ast.Import):
        for alias in node.names:
            if alias.asname:
                aliases.setdefault(alias.asname.encode(), []).append(alias.name.encode())
    for node in view.nodes(ast.ImportFrom):
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                everywhere.append(module.encode())
            else:
                target = f"{module}.{alias.name}" if module else alias.name
                aliases.setdefault((alias.asname or alias.name).encode(), []).append(target.encode())
    return aliases, everywhere
