"""Kinds that read a document's text and names: ``container-image``,
``text-pattern`` and ``whole-file``.

``container-image``: images named by `FROM` in a Dockerfile (or the
`ARG` it names), by `image:` in YAML and JSON (CI jobs, compose services,
devcontainers), by `From:` in an Apptainer definition, and by the commands
that start or fetch containers (`docker run IMAGE`, `--build-arg
BASE=IMAGE`, `--container-image=IMAGE`, `docker://IMAGE`) that fully match
one of ``images``.

``text-pattern``: text matching one of ``patterns`` outside comments, in
documents of ``formats`` (any when not given); ``once`` reports only the
first match of a file.

``whole-file``: one finding at the top of every file of its formats (a CUDA
source is a kernel to rewrite as a whole).

``unread-part``: parts of a file that no parser read (a notebook's `%%html`
or `%%writefile` cell, a CI script or `RUN` line the shell parser rejects),
when their text matches one of ``mentions``: not examined, so a person must.
"""

from __future__ import annotations

import re
from typing import Iterator

from hpu_port.formats import Span
from hpu_port.intervals import Reach
from hpu_port.kinds import DocumentKind, Match, register_kind, string_list
from hpu_port.kinds._patterns import MatchingWords, compile_all, needles_of, patterns

TEXT_FORMATS = ("shell", "yaml", "dockerfile", "cmake", "requirements", "pyproject", "setup-cfg", "notebook", "makefile", "apptainer")


@register_kind
class ContainerImage(MatchingWords):
    name = "container-image"
    KEYS = {"images": (list, True)}
    PATTERNS = "images"
    FORMATS = ("dockerfile", "yaml", "apptainer", "json", "shell", "makefile", "notebook")
    EXAMPLE_FILE = "Dockerfile"

    def words(self, document) -> list:
        return document.images()


@register_kind
class TextPattern(DocumentKind):
    name = "text-pattern"
    KEYS = {"patterns": (list, True), "formats": (list, False), "once": (bool, False)}
    FORMATS = TEXT_FORMATS

    def build_params(self, table):
        formats = string_list(table.get("formats", list(TEXT_FORMATS)), "formats")
        unknown = set(formats) - set(TEXT_FORMATS)
        if unknown:
            raise ValueError(f"'formats': unknown {', '.join(sorted(unknown))} (known: {', '.join(TEXT_FORMATS)})")
        return {"patterns": patterns(table, "patterns"), "formats": set(formats), "once": table.get("once", False)}

    def needles(self, rule) -> tuple[str, ...]:
        return needles_of(rule.params["patterns"])

    def match(self, rule, document, options) -> Iterator[Match]:
        if document.format not in rule.params["formats"]:
            return
        comments = Reach((c.start, c.end) for c in document.comment_spans())
        found = []
        for pattern in rule.params["patterns"]:
            for match in pattern.finditer(document.text):
                if not comments.covers(match.start()):
                    found.append(match)
                    if rule.params["once"]:
                        break  # the first of each pattern; the first of all is reported
        if rule.params["once"]:
            found = sorted(found, key=lambda m: m.start())[:1]
        for match in found:
            yield Match(Span(match.start(), match.end()), rule.message.format(name=match.group()))


@register_kind
class WholeFile(DocumentKind):
    name = "whole-file"
    KEYS = {"formats": (list, True)}
    FORMATS = ("cuda",)
    EXAMPLE_FILE = "kernel.cu"

    def build_params(self, table):
        return {"formats": set(string_list(table["formats"], "formats"))}

    def match(self, rule, document, options) -> Iterator[Match]:
        if document.format in rule.params["formats"]:
            import os

            yield Match(Span(0, 0), rule.message.format(name=os.path.basename(document.path) or document.format))


@register_kind
class UnreadPart(DocumentKind):
    name = "unread-part"
    KEYS = {"mentions": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "mention"})
    FORMATS = ("dockerfile", "yaml", "notebook")
    EXAMPLE_FILE = "Dockerfile"

    def build_params(self, table):
        mentions = string_list(table["mentions"], "mentions")
        return {"mentions": tuple(re.compile(m, re.IGNORECASE) for m in compile_all(mentions, "mentions") and mentions)}

    def needles(self, rule) -> tuple[str, ...]:
        return needles_of(rule.params["mentions"])

    def match(self, rule, document, options) -> Iterator[Match]:
        for part in document.unread():
            text = document.text[part.span.start:part.span.end]
            found = next((m for p in rule.params["mentions"] for m in [p.search(text)] if m), None)
            if found is not None:
                yield Match(Span(part.span.start, part.span.start), rule.message.format(name=part.value, mention=found.group()))
