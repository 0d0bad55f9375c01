"""Dependency lists: `requirements*.txt`, `pyproject.toml` and `setup.cfg`.

Each requirement is a ``Word`` whose span covers the requirement text in the
file (`torch>=2.1` in `"torch>=2.1",` or on a requirements line).
"""

from __future__ import annotations

import re
from typing import Optional

from hpu_port._compat import toml
from hpu_port.formats import Document, FormatError, Span, Word

_POETRY_ENTRY = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=")
_QUOTED = re.compile(r"""(["'])(.*?)\1""")


class RequirementsDocument(Document):
    format = "requirements"
    language = "text"

    def __init__(self, text: str, path: str, found: list[Word], comments: list[Span]) -> None:
        super().__init__(text, path)
        self._found = found
        self._comments = comments

    def requirements(self) -> list[Word]:
        return self._found

    def comment_spans(self) -> list[Span]:
        return self._comments


def parse(text: str, path: str = "", file_type: str = "requirements") -> RequirementsDocument:
    reader = {"pyproject": _pyproject, "setup-cfg": _setup_cfg}.get(file_type, _requirements_txt)
    found, comments = reader(text)
    document = RequirementsDocument(text, path, found, comments)
    document.format = file_type
    document.language = {"pyproject": "toml", "setup-cfg": "ini"}.get(file_type, "text")
    return document


def _lines(text: str):
    """(offset, line) of each line, without its line ending."""
    offset = 0
    for line in text.split("\n"):
        yield offset, line.rstrip("\r")
        offset += len(line) + 1


def _hash_comment(offset: int, line: str) -> Optional[Span]:
    match = re.search(r"(?:^|\s)(#.*)$", line)
    return Span(offset + match.start(1), offset + match.end(1)) if match else None


def _requirements_txt(text: str) -> tuple[list[Word], list[Span]]:
    found, comments = [], []
    for offset, line in _lines(text):
        comment = _hash_comment(offset, line)
        if comment:
            comments.append(comment)
        body = line[: comment.start - offset] if comment else line
        requirement = body.strip()
        if requirement:
            start = offset + len(body) - len(body.lstrip())
            found.append(Word(requirement, Span(start, start + len(requirement))))
    return found, comments


def _pyproject(text: str) -> tuple[list[Word], list[Span]]:
    tomllib = toml()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise FormatError(str(exc).split(" (at ")[0], int(line.group(1)) if line else None) from None
    wanted = _project_requirements(data)
    found, comments, section = [], [], ""
    for offset, line in _lines(text):
        comment = _hash_comment(offset, line)
        if comment and not _QUOTED.search(line[: comment.start - offset] + "#"):
            comments.append(comment)
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
            continue
        for match in _QUOTED.finditer(line):
            if match.group(2) in wanted:
                found.append(Word(match.group(2), Span(offset + match.start(2), offset + match.end(2))))
        entry = _POETRY_ENTRY.match(line)
        if entry and section.startswith("[tool.poetry") and "dependencies" in section:
            found.append(Word(stripped.split("#")[0].strip(), Span(offset + entry.start(1), offset + len(line.rstrip()))))
    return found, comments


def _project_requirements(data: dict) -> set:
    project = data.get("project", {})
    found = set(project.get("dependencies", []) or [])
    for group in (project.get("optional-dependencies", {}) or {}).values():
        found |= set(group or [])
    for group in (data.get("dependency-groups", {}) or {}).values():
        found |= {r for r in group or [] if isinstance(r, str)}
    return {r for r in found if isinstance(r, str)}


def _setup_cfg(text: str) -> tuple[list[Word], list[Span]]:
    """`install_requires` of [options] and every key of [options.extras_require]."""
    found, comments, section, reading = [], [], "", False
    for offset, line in _lines(text):
        stripped = line.strip()
        if stripped.startswith(("#", ";")):
            comments.append(Span(offset + line.index(stripped[0]), offset + len(line)))
            continue
        if stripped.startswith("["):
            section, reading = stripped, False
            continue
        if line[:1] not in (" ", "\t") and "=" in line:
            key, _, value = line.partition("=")
            reading = (section == "[options]" and key.strip() in ("install_requires", "setup_requires")) or (
                section == "[options.extras_require]"
            )
            line, offset = value, offset + len(key) + 1
        if reading:
            for part in _parts(line):
                start = offset + line.index(part)
                found.append(Word(part, Span(start, start + len(part))))
    return found, comments


def _parts(value: str) -> list[str]:
    """The requirement on a value line, without a trailing comment."""
    body = re.split(r"\s[#;]", value, 1)[0].strip()
    return [body] if body else []
