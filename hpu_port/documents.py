"""Port one document (a file that is not Python): parse, match, edit spans, parse again.

The same contract as for Python sources: findings carry path, line and
column; `# hpu-port: ignore[...]` comments in the file's own comment syntax
switch findings (and their fixes) off; a fix replaces exactly the characters
of its spans, so every byte no rule touched is kept (encoding, BOM, line
endings, comments, quotes, indentation); output that the format's parser
rejects is never written. No printing and no disk access happen here.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Optional

from hpu_port import filetypes, formats
from hpu_port.formats import Document, FormatError, apply_edits
from hpu_port.kinds import Match, get_kind, screening
from hpu_port.results import FileResult, Finding
from hpu_port.suppressions import Suppressions, scan_lines

FORMAT_NAMES = {
    "shell": "a shell script",
    "yaml": "YAML",
    "json": "JSON",
    "toml": "TOML",
    "makefile": "a Makefile",
    "apptainer": "an Apptainer definition",
    "dotenv": "an environment file",
    "dockerfile": "a Dockerfile",
    "cmake": "CMake",
    "cuda": "CUDA source",
    "requirements": "a requirements file",
    "pyproject": "TOML",
    "setup-cfg": "a setup.cfg file",
    "notebook": "the shell lines of a notebook",
}


def document_rules(ruleset, file_type: str) -> list:
    """The selected rules whose kind reads files of ``file_type``."""
    return [rule for rule in ruleset.rules if file_type in screening(rule).document_types]


def could_match(rules: list, text: str, facts=None) -> bool:
    """False when no rule's needle text occurs (the file is then not parsed);
    ``facts``: the project's, which may add needles (keys its code reads)."""
    lowered = text.lower()
    for rule in rules:
        needles = get_kind(rule.kind).project_needles(rule, facts)
        if not needles or any(needle in lowered for needle in needles):
            return True
    return False


def port_document(path: str, source: bytes, ruleset, apply: bool, file_type: str) -> FileResult:
    """Port one document's bytes. Never raises for bad input: errors become data."""
    result = FileResult(path=path, source=source)
    rules = document_rules(ruleset, file_type)
    if not rules:
        return result
    limit = ruleset.options.max_file_size
    if len(source) > limit:
        result.error = f"too large to port ({len(source) / 2**20:.1f} MiB > {limit / 2**20:.1f} MiB)"
        return result
    bom, text = _decode(source, result)
    if text is None or not could_match(rules, text, ruleset.facts):
        return result
    document = _parse(file_type, text, path, result)
    if document is None:
        return result
    document.facts = ruleset.facts
    matched = _matches(rules, document, ruleset)
    suppressions = _suppressions(document)
    ci = nvidia_ci(path, text)
    groups, fixed = [], []
    for rule, match in matched:
        start = document.line_col(match.span.start)
        end = document.line_col(max(match.span.end, match.span.start))
        if suppressions is not None and suppressions.suppresses(rule.code, start[0], end[0]):
            continue
        has_fix = bool(match.edits) and rule.has_fix and all(document.exact(edit.span) for edit in match.edits)
        message, kept = match.message, {}
        if ci and has_fix:
            has_fix = False
            message += f" (not rewritten: {CI_REASON})"
            kept = {"kept": "other-device", "action": "keep"}
        fixable = has_fix and ruleset.fix_enabled(rule)
        finding = Finding(
            rule.code, message, start[0], start[1], end[0], end[1],
            fix=rule.fix if has_fix else "none", fixable=fixable, applied=False, category=rule.category,
            item_scope=rule.items, **kept,
        )
        if apply and fixable:
            groups.append(match.edits)
            fixed.append(len(result.findings))
        result.findings.append(finding)
    if groups:
        _apply(document, groups, fixed, bom, file_type, result)
    result.findings.sort(key=Finding.sort_key)
    return result


# A CI job runs on the machines its runner names: where those are NVIDIA's
# (a GPU runner label), or where a matrix lists CUDA beside other
# accelerators, renaming would make the job look for Gaudi on NVIDIA
# machines (and its values no longer match the tests on them): Gaudi needs a
# job or matrix entry of its own. A job on a runner that names no GPU (a
# self-hosted machine) is ported like the rest.
CI_REASON = (
    "a CI job runs on the runners it names, NVIDIA's here; test on Gaudi with a job or matrix entry "
    "of its own (device hpu, a Gaudi runner) beside this one"
)
_RUNNER_KEY = re.compile(r"^\s*-?\s*(?:runs-on|runner|runners|tags|resource_class|machine|pool|vmImage|instance_type)\s*:", re.IGNORECASE)
_NVIDIA_RUNNER = re.compile(
    # GPU names, and the cloud instance families that carry NVIDIA GPUs (AWS g4dn, g5, p4d...).
    r"(?<![A-Za-z0-9])(?:gpus?|nvidia|cuda|a10g?|a100|h100|h200|l4|l40s?|t4|v100|rtx[\w-]*|g4dn|g5|g6e?|p3|p4de?|p5e?)(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*-\s*[^:]*$")
# A runner another job starts (an EC2 GPU instance: `runs-on: ${{ needs.start-runner.outputs.label }}`).
_STARTED_RUNNER = re.compile(r"\$\{\{\s*needs\.[\w-]+\.outputs\.")
# A runner given as a mapping (`runs-on:` then `group: aws-g4dn-metal`, `labels: [...]`).
_RUNNER_FIELD = re.compile(r"^\s+(?:group|labels)\s*:", re.IGNORECASE)
# Containers started with NVIDIA's GPUs (`options: --gpus all`, `--runtime=nvidia`).
_NVIDIA_CONTAINER = re.compile(r"--gpus[= ]|--runtime[= ]nvidia")
_OTHER_DEVICE_VALUE = re.compile(r"(?:[:\[,-]\s*)[\"']?(?:npu|xpu|mps|rocm|tpu|xla)[\"']?\s*(?:$|[,\]#])", re.MULTILINE)


def nvidia_ci(path: str, text: str) -> bool:
    """A CI file whose jobs run on NVIDIA runners (a runner label or tag
    names a GPU), or whose values list CUDA beside another accelerator."""
    if not filetypes.is_ci_file(path):
        return False
    if "cuda" in text.lower() and _OTHER_DEVICE_VALUE.search(text):
        return True
    if _NVIDIA_CONTAINER.search(text):
        return True
    in_runner = False
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if _RUNNER_KEY.match(code):
            in_runner = True  # the key's own line, and the list items or fields under it
        elif not (_LIST_ITEM.match(code) or (in_runner and _RUNNER_FIELD.match(code))):
            in_runner = False
        if in_runner and (_NVIDIA_RUNNER.search(code.split(":", 1)[-1]) or _STARTED_RUNNER.search(code)):
            return True
    return False


def _matches(rules: list, document: Document, ruleset) -> list[tuple[object, Match]]:
    """Every rule's matches, the first rule to speak about a span keeping it."""
    found, seen = [], set()
    for rule in rules:
        for match in get_kind(rule.kind).match(rule, document, ruleset.options):
            place = (match.span.start, match.span.end, rule.code)
            if place not in seen:
                seen.add(place)
                found.append((rule, match))
    return found


def _suppressions(document: Document) -> Optional[Suppressions]:
    if document.comment is None or "hpu-port:" not in document.text:
        return None
    starts = _comment_starts(document)
    statements = _statement_lines(document)
    return scan_lines(document.text, document.comment, starts, document.line_break, statements, document.finds_comments)


def _statement_lines(document: Document) -> list[tuple[int, int]]:
    """(first, last) line of each statement that runs over several lines."""
    found = []
    for span in document.statements():
        first, last = document.line_col(span.start)[0], document.line_col(max(span.start, span.end - 1))[0]
        if first < last:
            found.append((first, last))
    return found


def _comment_starts(document: Document) -> Optional[set]:
    spans = document.comment_spans()
    return {span.start for span in spans} if spans or document.finds_comments else None


def _decode(source: bytes, result: FileResult) -> tuple[bytes, Optional[str]]:
    bom = codecs.BOM_UTF8 if source.startswith(codecs.BOM_UTF8) else b""
    try:
        return bom, source[len(bom):].decode("utf-8")
    except UnicodeDecodeError as exc:
        result.error = f"cannot decode: {exc.reason} at byte {exc.start + len(bom)}"
        return bom, None


def _parse(file_type: str, text: str, path: str, result: FileResult) -> Optional[Document]:
    try:
        return formats.parse(file_type, text, path)
    except FormatError as exc:
        if file_type == filetypes.JSON and _is_json_lines(text):
            return None  # a dataset in JSON Lines under a `.json` name: data, no config and no error
        result.error = f"cannot parse as {FORMAT_NAMES[file_type]}: {exc.describe()}"
    except RecursionError:
        result.error = "too deeply nested to parse"
    return None


def _is_json_lines(text: str) -> bool:
    """Whether ``text`` is JSON Lines: one JSON value on each of several lines."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    try:
        for line in lines:
            json.loads(line)
    except ValueError:
        return False
    return True


def _apply(document: Document, groups: list, fixed: list, bom: bytes, file_type: str, result: FileResult) -> None:
    """Apply the fixes; refuse output the format's parser rejects."""
    import dataclasses

    applied = apply_edits(document.text, groups)
    try:
        formats.parse(file_type, applied.text, document.path)
    except FormatError as exc:
        codes = sorted({result.findings[i].code for i in fixed})
        result.error = (
            f"internal error: rules {', '.join(codes)} produced {FORMAT_NAMES[file_type]} that does not "
            f"parse ({exc.describe()}); nothing was written"
        )
        return
    for group_index in applied.used:
        index = fixed[group_index]
        result.findings[index] = dataclasses.replace(result.findings[index], applied=True)
    if applied.text != document.text:
        result.new_source = bom + applied.text.encode("utf-8")
