"""YAML documents, read with PyYAML's composer.

``yaml.compose_all`` builds the node graph without constructing Python
objects (so custom tags do no harm) and gives every node its exact start and
end in the text. Values are edited in place, in their span: comments,
quotes, anchors and indentation stay byte for byte. Block scalars and plain
scalars folded over several lines are read but never edited.
"""

from __future__ import annotations

import re

from hpu_port.formats import Document, Entry, FormatError, Span, Word, Assignment

_ENV_KEYS = frozenset({"env", "environment", "variables", "envs"})
_COMMENT = re.compile(r"(?:^|[ \t])(#.*)$", re.MULTILINE)


class YamlDocument(Document):
    format = "yaml"
    language = "yaml"

    def __init__(self, text: str, path: str, roots: list) -> None:
        super().__init__(text, path)
        self._entries: list[Entry] = []
        seen: set[int] = set()
        for root in roots:
            self._walk(root, (), None, seen)

    def entries(self) -> list[Entry]:
        return self._entries

    def assignments(self) -> list[Assignment]:
        """`environment:` / `env:` maps and `NAME=value` items of such lists."""
        found = []
        for entry in self._entries:
            parent = entry.path[-2] if len(entry.path) > 1 else None
            if parent not in _ENV_KEYS or entry.value is None:
                continue
            if entry.key is not None:
                found.append(Assignment(entry.key, entry.value))
            elif "=" in entry.value.value and entry.value.span.end - entry.value.span.start == len(entry.value.value) + 2 * len(entry.value.quote):
                name, value = entry.value.value.split("=", 1)
                start = entry.value.inner.start
                found.append(Assignment(Word(name, Span(start, start + len(name))), Word(value, Span(start + len(name) + 1, entry.value.inner.end))))
        return found

    def images(self) -> list[Word]:
        return [e.value for e in self._entries if e.name == "image" and e.value is not None]

    def requirements(self) -> list[Word]:
        """A conda environment file's `dependencies`, with its `pip:` list."""
        found = []
        for entry in self._entries:
            path = entry.path
            if entry.value is None or not path or path[0] != "dependencies":
                continue
            if len(path) == 2 or (len(path) == 4 and path[2] == "pip"):
                found.append(entry.value)
        return found

    def comment_spans(self) -> list[Span]:
        return [Span(m.start(1), m.end(1)) for m in _COMMENT.finditer(self.text) if not self._inside_scalar(m.start(1))]

    def _inside_scalar(self, offset: int) -> bool:
        return any(e.kind == "scalar" and e.span.start < offset < e.span.end for e in self._entries)

    def _walk(self, node, path: tuple, key, seen: set) -> None:
        import yaml

        if id(node) in seen:  # an alias of a node already read
            return
        seen.add(id(node))
        span = Span(node.start_mark.index, node.end_mark.index)
        if isinstance(node, yaml.ScalarNode):
            self._entries.append(Entry(path, key, self._word(node), span, "scalar", node.value))
        elif isinstance(node, yaml.MappingNode):
            self._entries.append(Entry(path, key, None, span, "mapping"))
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    self._walk(value_node, path + (key_node.value,), self._word(key_node), seen)
        elif isinstance(node, yaml.SequenceNode):
            self._entries.append(Entry(path, key, None, span, "sequence"))
            for index, item in enumerate(node.value):
                self._walk(item, path + (index,), None, seen)

    def _word(self, node) -> Word:
        span = Span(node.start_mark.index, node.end_mark.index)
        quote = node.style if node.style in ("'", '"') else ""
        raw = self.text[span.start + len(quote): span.end - len(quote)]
        if node.style in ("|", ">") or raw != node.value:
            quote = quote or "?"  # the source is not the value: never edited
        return Word(node.value, span, quote)


def editable(word: Word) -> bool:
    """A scalar whose source text is its value, between its quotes if any."""
    return word.quote in ("", "'", '"')


def parse(text: str, path: str = "", file_type: str = "yaml") -> YamlDocument:
    import yaml

    try:
        roots = [root for root in yaml.compose_all(text, Loader=yaml.SafeLoader) if root is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise FormatError(exc.problem or str(exc), mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise FormatError(str(exc).splitlines()[0]) from None
    return YamlDocument(text, path, roots)
