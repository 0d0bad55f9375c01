"""Kinds ``env-variable`` and ``variable-read``: environment variables set
(and read) in scripts, containers, CI configs and notebooks.

Matches where a variable is given a value: `export X=...`, `X=... cmd`,
`ENV X=...` in a Dockerfile, `environment:` / `env:` maps and `X=...` list
items in YAML, `%env X=...` in notebooks. ``variables`` are patterns the
whole name must match. ``rename`` maps a name to its Gaudi counterpart; the
rename is a fix only when the value fully matches ``rename-values`` (when
given), so that a value whose meaning would change is reported instead.
"""

from __future__ import annotations

from typing import Iterator

from hpu_port.formats import Edit
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_table
from hpu_port.kinds._patterns import MatchingWords, compile_all, full_match, needles_of, patterns


@register_kind
class EnvVariable(DocumentKind):
    name = "env-variable"
    KEYS = {"variables": (list, True), "rename": (dict, False), "rename-values": (str, False)}
    MESSAGE_FIELDS = frozenset({"name", "value", "replacement"})
    FORMATS = ("shell", "dockerfile", "yaml", "notebook", "makefile", "apptainer", "dotenv")
    EXAMPLE_FILE = "run.sh"

    def build_params(self, table):
        rename = string_table(table.get("rename", {}), "rename")
        values = table.get("rename-values")
        return {
            "variables": patterns(table, "variables"),
            "rename": rename,
            "rename-values": compile_all([values], "rename-values") if values else (),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return needles_of(rule.params["variables"])

    def describe(self, rule) -> str:
        if not rule.params["rename"]:
            return ""
        return markdown_table(("variable", "on Gaudi"), rule.params["rename"], code_values=True)

    def match(self, rule, document, options) -> Iterator[Match]:
        read = {word.value for word in document.references()}
        for assignment in document.assignments():
            name = assignment.name.value
            if not full_match(rule.params["variables"], name):
                continue
            value = assignment.value.value if assignment.value is not None else ""
            replacement = rule.params["rename"].get(name, "")
            message = rule.message.format(name=name, value=value, replacement=replacement)
            fix = () if name in read else self._fix(rule, assignment, replacement)
            yield Match(assignment.name.span, message, fix)

    def _fix(self, rule, assignment, replacement: str) -> tuple:
        # A script that also reads the variable keeps it: renaming only the
        # assignment would change what the reads see.
        if not replacement or assignment.value is None:
            return ()
        allowed = rule.params["rename-values"]
        if allowed and not full_match(allowed, assignment.value.value):
            return ()
        return (Edit(assignment.name.span, replacement),)


@register_kind
class VariableRead(MatchingWords):
    """Kind ``variable-read``: places where a script reads one of
    ``variables`` (`$CUDA_VISIBLE_DEVICES`, `${NVIDIA_VISIBLE_DEVICES:-all}`).
    Reported only: what the script does with the value is for a person to
    change."""

    name = "variable-read"
    KEYS = {"variables": (list, True)}
    PATTERNS = "variables"
    FORMATS = ("shell", "dockerfile", "yaml", "notebook", "makefile", "apptainer", "dotenv")
    EXAMPLE_FILE = "run.sh"

    def words(self, document) -> list:
        return document.references()
