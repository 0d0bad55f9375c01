"""Kind ``deepspeed-config``: the `"fp16"` section of a DeepSpeed config, in
JSON or in YAML (GPT-NeoX keeps its DeepSpeed settings inline in YAML).

A document is a DeepSpeed config when it holds one of ``documents``
at its top level. Its `"fp16"` section becomes `"bf16"`: the key is renamed
and the keys only fp16 has (``drop``: loss scaling) are removed with their
commas, so the output stays valid JSON with its layout. A config that
already has a `"bf16"` section, or an fp16 section with keys that are not
known, is reported, never rewritten: no duplicate key, no setting lost.
"""

from __future__ import annotations

from typing import Iterator

from hpu_port.formats import Edit, Span
from hpu_port.kinds import DocumentKind, Match, register_kind, string_list


@register_kind
class DeepSpeedConfig(DocumentKind):
    name = "deepspeed-config"
    KEYS = {"section": (str, True), "rename-to": (str, True), "keep": (list, True), "drop": (list, True), "documents": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "replacement"})
    FORMATS = ("json", "yaml", "shell")  # shell: configs a script writes with a here-document
    EXAMPLE_FILE = "ds_config.json"

    def build_params(self, table):
        return {
            "section": table["section"],
            "rename-to": table["rename-to"],
            "keep": set(string_list(table["keep"], "keep")),
            "drop": set(string_list(table["drop"], "drop")),
            "documents": set(string_list(table["documents"], "documents")),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return (rule.params["section"].lower(),)

    def match(self, rule, document, options) -> Iterator[Match]:
        by_document: dict[int, list] = {}
        for entry in document.entries():
            by_document.setdefault(entry.document, []).append(entry)
        for entries in by_document.values():
            yield from self._match_config(rule, entries)

    def _match_config(self, rule, entries: list) -> Iterator[Match]:
        params = rule.params
        top = {e.path[0]: e for e in entries if len(e.path) == 1 and e.key is not None}
        if not params["documents"] & set(top):
            return
        section = top.get(params["section"])
        if section is None or section.kind != "mapping":
            return
        members = [e for e in entries if len(e.path) == 2 and e.path[0] == params["section"]]
        enabled = next((m for m in members if m.name == "enabled"), None)
        if enabled is not None and str(enabled.raw).lower() in ("false", "auto"):
            # Switched off, or left to the trainer's own fp16 flag (`"auto"`,
            # Hugging Face's integration): that flag is what changes.
            return
        if enabled is not None and enabled.value is not None and enabled.value.quote == "?":
            # `"enabled": $ENABLE_FP16` in a config a script writes: the script
            # chooses where it sets the variable, as the trainer does for "auto".
            return
        message = rule.message.format(name=params["section"], replacement=params["rename-to"])
        yield Match(section.key.span, message, self._fix(rule, top, section, members))

    def _fix(self, rule, top: dict, section, members: list) -> tuple:
        params = rule.params
        names = {m.name for m in members}
        if params["rename-to"] in top or not names <= params["keep"] | params["drop"]:
            return ()
        edits = [Edit(section.key.inner, params["rename-to"])]
        edits += removals(members, {m.name for m in members if m.name in params["drop"]})
        return tuple(edits)


def removals(members: list, names: set) -> list[Edit]:
    """Edits that delete the named members of one JSON object, commas
    included: each run of removed members goes as one span."""
    edits, index = [], 0
    while index < len(members):
        if members[index].name not in names:
            index += 1
            continue
        last = index
        while last + 1 < len(members) and members[last + 1].name in names:
            last += 1
        if last + 1 < len(members):
            span = Span(members[index].key.span.start, members[last + 1].key.span.start)
        elif index > 0:
            span = Span(members[index - 1].span.end, members[last].span.end)
        else:
            span = Span(members[index].key.span.start, members[last].span.end)
        edits.append(Edit(span, ""))
        index = last + 1
    return edits
