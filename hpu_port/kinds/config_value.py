"""Kind ``config-value``: values of YAML and JSON configs (Lightning, Hydra,
accelerate, docker-compose, DeepSpeed).

Matches a scalar whose key is one of ``keys`` (a key name, or a dotted tail
of the path to it: `trainer.accelerator`) and whose value is one of
``values``, a table from the value to its Gaudi spelling (`""`: report
only). ``documents`` lists keys of which the document must hold at least one
(anywhere) for the rule to read it, so that `precision: 16` is only read in
a file that looks like a trainer config. The new value is written in the
span of the old one, in the same quotes; a JSON number or literal that
becomes text gets double quotes.
"""

from __future__ import annotations

import json
import re
from typing import Iterator

from hpu_port.formats import Edit, Entry
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_list, string_table


@register_kind
class ConfigValue(DocumentKind):
    name = "config-value"
    KEYS = {"keys": (list, True), "values": (dict, True), "documents": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "value", "replacement"})
    FORMATS = ("yaml", "json")
    EXAMPLE_FILE = "config.yaml"

    def build_params(self, table):
        return {
            "keys": [tuple(k.split(".")) for k in string_list(table["keys"], "keys")],
            "values": string_table(table["values"], "values"),
            "documents": set(string_list(table.get("documents", []), "documents")),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return tuple(key[-1].lower() for key in rule.params["keys"])

    def describe(self, rule) -> str:
        shown = {value: new or "(report only)" for value, new in rule.params["values"].items()}
        keys = ", ".join(f"`{'.'.join(k)}`" for k in rule.params["keys"])
        return f"Keys: {keys}.\n\n" + markdown_table(("value", "on Gaudi"), shown, code_values=False)

    def match(self, rule, document, options) -> Iterator[Match]:
        entries = document.entries()
        wanted = rule.params["documents"]
        if wanted and not any(e.name in wanted for e in entries):
            return
        for entry in entries:
            if entry.value is None or not self._key_matches(rule, entry):
                continue
            text = entry.value.value
            if text not in rule.params["values"]:
                continue
            replacement = rule.params["values"][text]
            message = rule.message.format(name=".".join(str(p) for p in entry.path), value=text, replacement=replacement)
            yield Match(entry.value.span, message, _fix(document, entry, replacement))

    def _key_matches(self, rule, entry: Entry) -> bool:
        path = tuple(p for p in entry.path if isinstance(p, str))
        return bool(entry.name) and any(path[-len(key):] == key for key in rule.params["keys"])


def _fix(document, entry: Entry, replacement: str) -> tuple:
    if not replacement:
        return ()
    word = entry.value
    if word.quote not in ("", "'", '"'):
        return ()  # a block or folded scalar: its source is not its value
    if word.quote:
        return (Edit(word.inner, _escaped(replacement, word.quote)),)
    if document.format == "json" or not _plain_yaml(replacement):
        return (Edit(word.span, json.dumps(replacement)),)
    return (Edit(word.span, replacement),)


def _plain_yaml(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:/-]*", text) is not None and text.lower() not in ("yes", "no", "on", "off", "true", "false", "null")


def _escaped(text: str, quote: str) -> str:
    return text.replace("'", "''") if quote == "'" else json.dumps(text)[1:-1]
