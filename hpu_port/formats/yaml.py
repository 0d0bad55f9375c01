"""YAML documents, read with PyYAML's composer.

``yaml.compose_all`` builds the node graph without constructing Python
objects (so custom tags do no harm) and gives every node its exact start and
end in the text. Values are edited in place, in their span: comments,
quotes, anchors and indentation stay byte for byte. Block scalars and plain
scalars folded over several lines are read but never edited.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from hpu_port.formats import MAX_NESTING, Assignment, Command, Document, Entry, FormatError, Span, Word, too_deep
from hpu_port.formats.containers import launch_scripts
from hpu_port.formats.embedded import Copy, Glue, Scripts
from hpu_port.intervals import Reach

_ENV_KEYS = frozenset({"env", "environment", "variables", "envs"})
# PyYAML's line breaks (YAML 1.1): a comment ends at any of them.
_BREAK = "\r\n\x85\u2028\u2029"
LINE_BREAK = re.compile(f"\r\n|[{_BREAK}]")
_COMMENT = re.compile(f"(?<![^ \t{_BREAK}])#[^{_BREAK}]*")


class YamlDocument(Document):
    format = "yaml"
    language = "yaml"
    finds_comments = True
    line_break = LINE_BREAK

    def __init__(self, text: str, path: str, roots: list) -> None:
        super().__init__(text, path)
        self._entries: list[Entry] = []
        self._styles: dict[int, str] = {}  # scalar start -> its style (`|`, `>`, quotes)
        self._scalars: Optional[Reach] = None
        seen: set[int] = set()
        for number, root in enumerate(roots):
            self._document = number
            self._walk(root, (), None, seen)
        self._shell = Scripts(text)
        self._unread: list[Word] = []
        jobs = job_scripts(self._entries)
        # Where a cluster job's own script runs: its launches are training runs.
        self.job_regions = [entry.span for entry, _ in jobs]
        for entry, shell in ci_scripts(self._entries, path) + jobs:
            self._embed(entry, shell)
        for parts, region, label in launch_scripts(self._entries):
            self._shell.add(_masked(text, parts), region, label)

    def commands(self) -> list[Command]:
        return self._shell.commands

    def references(self) -> list[Word]:
        return self._shell.references

    def unread(self) -> list[Word]:
        return self._unread + self._shell.unread

    def statements(self) -> list[Span]:
        return self._shell.statements

    def exact(self, span: Span) -> bool:
        return self._shell.exact(span)

    def _embed(self, entry: Entry, shell: str) -> None:
        """Read a CI step's script (`run:`, `script:`) as a shell script."""
        label = str(entry.name or (entry.path[-2] if len(entry.path) > 1 else "script"))
        if shell not in SHELLS:
            self._unread.append(Word(label, entry.span))
            return
        parts = _script_parts(self.text, entry, self._styles.get(entry.span.start, ""))
        self._shell.add(_masked(self.text, parts), entry.span, label)

    def entries(self) -> list[Entry]:
        return self._entries

    def assignments(self) -> list[Assignment]:
        """`environment:` / `env:` maps, `NAME=value` items of such lists, and
        their `- name: NAME` / `value: ...` items (Kubernetes)."""
        found = self._named_values()
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
        return found + self._shell.assignments

    def _named_values(self) -> list[Assignment]:
        by_path = {(entry.document, entry.path): entry for entry in self._entries}
        found = []
        for entry in self._entries:
            path = entry.path
            if len(path) >= 3 and path[-1] == "name" and isinstance(path[-2], int) and path[-3] in _ENV_KEYS and entry.value is not None:
                value = by_path.get((entry.document, path[:-1] + ("value",)))
                if value is not None and value.value is not None:
                    found.append(Assignment(entry.value, value.value))
        return found

    def images(self) -> list[Word]:
        """`image:` values, and base images named for a build (a CI matrix's
        `base_image:`, handed to `docker build --build-arg`), also as list items."""
        found = []
        for entry in self._entries:
            named = entry.name if entry.name is not None else _list_name(entry)
            if entry.value is not None and named is not None and _joined_name(named) in _IMAGE_KEYS:
                found.append(entry.value)
        return found

    def requirements(self) -> list[Word]:
        """A conda environment file's `dependencies`, with its `pip:` list,
        and the packages CI scripts install."""
        found = []
        for entry in self._entries:
            path = entry.path
            if entry.value is None or not path or path[0] != "dependencies":
                continue
            if len(path) == 2 or (len(path) == 4 and path[2] == "pip"):
                found.append(entry.value)
        from hpu_port.formats.shell import installed

        return found + installed(self._shell.commands)

    def comment_spans(self) -> list[Span]:
        found = [Span(m.start(), m.end()) for m in _COMMENT.finditer(self.text) if not self._inside_scalar(m.start())]
        return sorted(found + self._shell.comments, key=lambda span: span.start)

    def _inside_scalar(self, offset: int) -> bool:
        """Within a scalar's text: a value's, or a key's (`'a #b': 1`)."""
        if self._scalars is None:  # searched, not scanned: a file can hold thousands of comments and values
            values = [(e.span.start, e.span.end) for e in self._entries if e.kind == "scalar"]
            keys = [(e.key.span.start, e.key.span.end) for e in self._entries if e.key is not None]
            self._scalars = Reach(values + keys)
        return self._scalars.surrounds(offset)

    def _walk(self, node, path: tuple, key, seen: set) -> None:
        import yaml

        if id(node) in seen:  # an alias of a node already read
            return
        seen.add(id(node))
        span = Span(node.start_mark.index, node.end_mark.index)
        if isinstance(node, yaml.ScalarNode):
            self._styles[span.start] = node.style or ""
            self._entries.append(Entry(path, key, self._word(node), span, "scalar", node.value, document=self._document))
        elif isinstance(node, yaml.MappingNode):
            self._entries.append(Entry(path, key, None, span, "mapping", document=self._document))
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    self._walk(value_node, path + (key_node.value,), self._word(key_node), seen)
        elif isinstance(node, yaml.SequenceNode):
            self._entries.append(Entry(path, key, None, span, "sequence", document=self._document))
            for index, item in enumerate(node.value):
                self._walk(item, path + (index,), None, seen)

    def _word(self, node) -> Word:
        span = Span(node.start_mark.index, node.end_mark.index)
        quote = node.style if node.style in ("'", '"') else ""
        raw = self.text[span.start + len(quote): span.end - len(quote)]
        if node.style in ("|", ">") or raw != node.value:
            quote = quote or "?"  # the source is not the value: never edited
        return Word(node.value, span, quote)


SHELLS = frozenset({"bash", "sh"})
_IMAGE_KEYS = frozenset({"image", "base_image", "baseimage", "docker_image", "container_image", "base_docker_image"})


def _joined_name(name) -> str:
    return str(name).replace("-", "_").lower()


def _list_name(entry: Entry):
    """The key of the list an item stands in (`base_image: [a, b]`), or None."""
    path = entry.path
    return path[-2] if len(path) >= 2 and isinstance(path[-1], int) and isinstance(path[-2], str) else None
# Keys whose value is a script, in CI files that list steps (GitHub Actions,
# CircleCI, Azure Pipelines) and in those whose jobs hold scripts (GitLab CI, Travis CI).
_STEP_KEYS = frozenset({"run", "script", "bash"})
_JOB_SCRIPT_KEYS = frozenset({"script", "before_script", "after_script"})
_REUSABLE_INPUTS = frozenset({"script", "run", "command", "commands", "test_script", "test-script"})
_TRAVIS_KEYS = frozenset({"install", "before_install", "script", "before_script", "after_success", "after_failure", "after_script", "before_deploy"})
# An expression left open runs to the end of its line: were it not to
# match, the search would read on to the line's end from every `${{` after it.
_EXPRESSION = re.compile(r"\$\{\{.*?(?:\}\}|$)", re.MULTILINE)


def ci_scripts(entries: list[Entry], path: str) -> list[tuple[Entry, str]]:
    """The scalars of a CI file that are shell scripts, each with the shell
    that runs it (a step's `shell:` may pick `pwsh` or `python`)."""
    by_path = {entry.path: entry for entry in entries}
    name = os.path.basename(path)
    gitlab = "gitlab-ci" in name or ".gitlab/" in path.replace(os.sep, "/") or any(e.path == ("stages",) for e in entries)
    travis = name == ".travis.yml"
    found = []
    for entry in entries:
        if entry.value is None:
            continue
        where = entry.path[:-1] if entry.path and isinstance(entry.path[-1], int) else entry.path
        key = where[-1] if where else None
        if _is_step(where, _STEP_KEYS):
            shell = _step_shell(by_path, where[:-1], key)
        elif len(where) >= 2 and where[-1] == "command" and _is_step(where[:-1], {"run"}):
            shell = "bash"  # CircleCI's `- run: {command: ...}`
        elif (gitlab and key in _JOB_SCRIPT_KEYS and len(where) == 2) or (travis and key in _TRAVIS_KEYS and len(where) == 1):
            shell = "bash"
        elif len(where) == 4 and where[0] == "jobs" and where[2] == "with" and key in _REUSABLE_INPUTS:
            shell = "bash"  # a script handed to a reusable workflow (`uses:` + `with: script:`)
        else:
            continue
        found.append((entry, shell))
    return found


# Job specs that run a script in a cloud or cluster job: MosaicML's `mcli`
# runs (`image:` and `command:`, beside `compute:`/`integrations:`) and
# SkyPilot tasks (`setup:` and `run:`, beside `resources:`). The key that
# marks the spec, the keys that hold its scripts, and what else shows it.
_JOB_SPECS = (
    ("image", ("command",), frozenset({"compute", "integrations", "gpu_num", "gpu_type", "cluster", "run_name", "parameters"})),
    ("resources", ("setup", "run"), frozenset({"num_nodes", "workdir", "file_mounts", "envs", "setup", "run"})),
)


def job_scripts(entries: list[Entry]) -> list[tuple[Entry, str]]:
    """The scripts of a job spec's top level (see ``_JOB_SPECS``), run by bash."""
    top: dict[int, dict[str, Entry]] = {}
    for entry in entries:
        if len(entry.path) == 1 and isinstance(entry.path[0], str):
            top.setdefault(entry.document, {})[entry.path[0]] = entry
    found = []
    for keys in top.values():
        for marker, script_keys, beside in _JOB_SPECS:
            if marker not in keys or not beside & keys.keys():
                continue
            found += [(keys[k], "bash") for k in script_keys if k in keys and keys[k].value is not None]
    return found


def _is_step(where: tuple, keys) -> bool:
    return len(where) >= 3 and where[-1] in keys and isinstance(where[-2], int) and where[-3] == "steps"


def _step_shell(by_path: dict, step: tuple, key: str) -> str:
    """The shell a step's script runs in: the step's `shell:`, else the
    job's or the workflow's `defaults: run: shell:` (GitHub Actions)."""
    if key == "bash":
        return "bash"
    job = step[:-2]  # (..., "steps", index) -> the job
    for place in (step + ("shell",), job + ("defaults", "run", "shell"), ("defaults", "run", "shell")):
        given = by_path.get(place)
        if given is not None and given.value is not None:
            words = given.value.value.split()
            return words[0].rsplit("/", 1)[-1] if words else "bash"
    return "bash"


def _script_parts(text: str, entry: Entry, style: str) -> list:
    """The parts a script scalar is read from: its lines where the source
    holds the value exactly (plain, quoted without escapes, literal `|`
    blocks); else its value, for findings reported at its first line."""
    word = entry.value
    if style in ("", "'", '"') and word.quote in ("", "'", '"') and "\n" not in word.value:
        return [Copy(word.inner)]
    if style == "|":
        lines = _literal_lines(text, entry.span, word.value)
        if lines is not None:
            parts = []
            for index, (start, end) in enumerate(lines):
                if index:
                    parts.append(Glue("\n", parts[-1].host.end if isinstance(parts[-1], Copy) else start))
                parts.append(Copy(Span(start, end)))
            return parts
    return [Glue(_EXPRESSION.sub(lambda m: "_" * len(m.group()), word.value), entry.span.start)]


def _literal_lines(text: str, span: Span, value: str):
    """(start, end) in ``text`` of each line of a literal block scalar's value,
    or None when the source does not hold them as they are."""
    header_end = LINE_BREAK.search(text, span.start, span.end)
    if header_end is None or re.match(r"\|[+-]?[0-9]", text[span.start:header_end.start()]):
        return None  # an explicit indentation indicator: not worth the risk
    lines = value.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    position, indent, found = header_end.end(), None, []
    for line in lines:
        line_end = LINE_BREAK.search(text, position)
        end = len(text) if line_end is None else line_end.start()
        source = text[position:end]
        if line == "":
            if source.strip():
                return None
            found.append((position, position))
        else:
            if indent is None:
                indent = len(source) - len(source.lstrip(" "))
            if source[indent:] != line or source[:indent].strip():
                return None
            found.append((position + indent, position + len(source)))
        position = len(text) if line_end is None else line_end.end()
    return found


def _masked(text: str, parts: list) -> list:
    """Parts with each GitHub Actions `${{ ... }}` expression in a copied
    piece put under a mask of the same length (the shell cannot parse them;
    words that touch a mask are never edited)."""
    masked = []
    for part in parts:
        if not isinstance(part, Copy):
            masked.append(part)
            continue
        position = part.host.start
        for match in _EXPRESSION.finditer(text, part.host.start, part.host.end):
            if match.start() > position:
                masked.append(Copy(Span(position, match.start())))
            width = match.end() - match.start()
            masked.append(Glue("_" * width, match.start(), width))
            position = match.end()
        if position < part.host.end or position == part.host.start:
            masked.append(Copy(Span(position, part.host.end)))
    return masked


def editable(word: Word) -> bool:
    """A scalar whose source text is its value, between its quotes if any."""
    return word.quote in ("", "'", '"')


def parse(text: str, path: str = "", file_type: str = "yaml") -> YamlDocument:
    import yaml

    try:
        roots = [root for root in yaml.compose_all(text, Loader=_nesting_loader()) if root is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise FormatError(exc.problem or str(exc), mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise FormatError(str(exc).splitlines()[0]) from None
    return YamlDocument(text, path, roots)


_NESTING_LOADER = None


def _nesting_loader():
    """PyYAML's SafeLoader, stopped past MAX_NESTING levels of nesting.

    Its scanner looks again at every open flow collection (`[`, `{`) for each
    token it reads, so 10,000 nested brackets take it minutes; and every
    level costs memory here (each value keeps the keys that lead to it).
    """
    global _NESTING_LOADER
    if _NESTING_LOADER is None:
        import yaml

        class NestingLoader(yaml.SafeLoader):
            depth = 0

            def fetch_flow_collection_start(self, TokenClass):
                if self.flow_level >= MAX_NESTING:
                    raise yaml.scanner.ScannerError(None, None, too_deep(), self.get_mark())
                super().fetch_flow_collection_start(TokenClass)

            def compose_node(self, parent, index):
                if self.depth >= MAX_NESTING:  # block collections, nested by indentation
                    raise yaml.composer.ComposerError(None, None, too_deep(), self.peek_event().start_mark)
                self.depth += 1
                try:
                    return super().compose_node(parent, index)
                finally:
                    self.depth -= 1

        _NESTING_LOADER = NestingLoader
    return _NESTING_LOADER
