"""Helpers the document kinds share: name patterns and the needles they give."""

from __future__ import annotations

import re
from typing import Iterable

from hpu_port.kinds import DocumentKind, Match, string_list


def compile_all(patterns: Iterable[str], key: str) -> tuple[re.Pattern, ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"{key!r}: bad pattern {pattern!r}: {exc}") from None
    return tuple(compiled)


def patterns(table: dict, key: str, required: bool = True) -> tuple[re.Pattern, ...]:
    values = table.get(key, [] if not required else None)
    return compile_all(string_list(values, key), key)


def full_match(compiled: Iterable[re.Pattern], text: str) -> bool:
    return any(p.fullmatch(text) for p in compiled)


def needles_of(compiled: Iterable[re.Pattern]) -> tuple[str, ...]:
    """The literal text each pattern starts with, lower-cased (`NCCL_[A-Z]+` -> `nccl_`)."""
    found = []
    for pattern in compiled:
        literal = re.match(r"(?:\\.|[A-Za-z0-9_ /:.=-])+", pattern.pattern.lstrip("^"))
        if literal is None:
            return ()  # a pattern without literal text: read every document
        found.append(re.sub(r"\\(.)", r"\1", literal.group()).lower())
    return tuple(found)


class MatchingWords(DocumentKind):
    """A kind that reports the words of one view of a document (``words``)
    that fully match one of the rule's patterns (under ``PATTERNS``)."""

    PATTERNS = ""

    def build_params(self, table):
        return {self.PATTERNS: patterns(table, self.PATTERNS)}

    def needles(self, rule) -> tuple[str, ...]:
        return needles_of(rule.params[self.PATTERNS])

    def words(self, document) -> list:
        raise NotImplementedError

    def match(self, rule, document, options):
        for word in self.words(document):
            if full_match(rule.params[self.PATTERNS], word.value):
                yield Match(word.span, rule.message.format(name=word.value))
