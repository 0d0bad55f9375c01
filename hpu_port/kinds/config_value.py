"""Kind ``config-value``: values of YAML, JSON and TOML configs (Lightning,
Hydra, accelerate, docker-compose, DeepSpeed, job configs), and the config
overrides that training commands pass in scripts (`trainer.device=cuda`).

Matches a scalar whose key is one of ``keys`` (a key name, or a dotted tail
of the path to it: `trainer.accelerator`; a key with a `/` is one name)
and whose value is one of ``values``, a table from the value to its Gaudi
spelling (`""`: report only, with ``report-message`` when given; `"*"`: any value);
``value-patterns`` adds values to report, as regular expressions the whole
value matches. ``documents`` lists keys of which the document must hold at least one
(anywhere) for the rule to read it, so that `precision: 16` is only read in
a file that looks like a trainer config; ``unless`` lists keys that mark
another framework's config, which the rule leaves to its own rules (a
GPT-NeoX config spells bf16 `bfloat16`); ``not-under`` lists keys under
which the rule's keys mean something else (a Composer algorithm's own
`precision`). ``roles`` (`backend`, `device`,
`dtype`) adds the keys the project's code reads at such a position
(`init_process_group(backend=cfg.comm_backend)`: `comm_backend`), wherever
the config sets them. Keys match whether their words are
joined by `_` or `-` (`distributed-backend`). ``rename-key`` renames the key
instead of changing the value (`fp16: true` -> `bf16: true`), reported only
when the mapping has that key already. The new value is written in the
span of the old one, in the same quotes; a JSON or TOML number or literal
that becomes text gets double quotes.
"""

from __future__ import annotations

import json
import re
from typing import Iterator

from hpu_port.formats import Edit, Entry
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_list, string_table
from hpu_port.kinds._patterns import compile_all, full_match


@register_kind
class ConfigValue(DocumentKind):
    name = "config-value"
    KEYS = {"keys": (list, True), "values": (dict, True), "documents": (list, False), "unless": (list, False), "rename-key": (str, False), "roles": (list, False),
            "report-message": (str, False), "not-under": (list, False), "value-patterns": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "value", "replacement"})
    FORMATS = ("yaml", "json", "toml", "shell", "notebook", "makefile")
    EXAMPLE_FILE = "config.yaml"

    def build_params(self, table):
        return {
            "keys": [_key_path(k) for k in string_list(table["keys"], "keys")],
            "values": string_table(table["values"], "values"),
            "documents": set(map(_joined, string_list(table.get("documents", []), "documents"))),
            "unless": set(map(_joined, string_list(table.get("unless", []), "unless"))),
            "rename-key": table.get("rename-key", ""),
            "roles": frozenset(string_list(table.get("roles", []), "roles")),
            "report-message": table.get("report-message", ""),
            "not-under": frozenset(map(_joined, string_list(table.get("not-under", []), "not-under"))),
            "value-patterns": compile_all(string_list(table.get("value-patterns", []), "value-patterns"), "value-patterns"),
        }

    def needles(self, rule) -> tuple[str, ...]:
        tails = {key[-1].lower() for key in rule.params["keys"]}
        return tuple(sorted(tails | {tail.replace("_", "-") for tail in tails}))

    def project_needles(self, rule, facts) -> tuple[str, ...]:
        read = _read_keys(rule, facts)
        return self.needles(rule) + tuple(sorted(key.lower() for key in read))

    def describe(self, rule) -> str:
        shown = {value: new or "(report only)" for value, new in rule.params["values"].items()}
        keys = ", ".join(f"`{'.'.join(k)}`" for k in rule.params["keys"])
        return f"Keys: {keys}.\n\n" + markdown_table(("value", "on Gaudi"), shown, code_values=False)

    def match(self, rule, document, options) -> Iterator[Match]:
        entries = document.entries()
        names = {_joined(e.name) for e in entries if e.name}
        if rule.params["documents"] and not names & rule.params["documents"]:
            return
        if names & rule.params["unless"]:
            return
        read = {_joined(key) for key in _read_keys(rule, document.facts)}
        for entry in entries:
            if entry.value is None or not (self._key_matches(rule, entry) or _read_here(entry, read)):
                continue
            text = entry.value.value
            if text not in rule.params["values"] and "*" not in rule.params["values"] and not full_match(rule.params["value-patterns"], text):
                continue
            replacement = rule.params["values"].get(text, rule.params["values"].get("*", ""))
            template = rule.params["report-message"] if not replacement and rule.params["report-message"] else rule.message
            message = template.format(name=".".join(str(p) for p in entry.path), value=text, replacement=replacement)
            if rule.params["rename-key"]:
                yield Match(entry.key.span, message, _renamed(entries, entry, rule.params["rename-key"]))
            else:
                yield Match(entry.value.span, message, _fix(document, entry, replacement))

    def _key_matches(self, rule, entry: Entry) -> bool:
        # A list's items are the list key's values (`attention_config: [[["flash"], 32]]`).
        path = tuple(_joined(p) for p in entry.path if isinstance(p, str))
        if rule.params["rename-key"] and entry.key is None:
            return False
        if rule.params["not-under"] & set(path[:-1]):
            return False
        return bool(path) and any(path[-len(key):] == key for key in rule.params["keys"])


def _read_keys(rule, facts) -> frozenset:
    if facts is None or not rule.params["roles"]:
        return frozenset()
    return facts.config_keys(rule.params["roles"])


def _read_here(entry: Entry, read: set) -> bool:
    return bool(read) and entry.name is not None and _joined(entry.name) in read


def _key_path(key: str) -> tuple:
    """`trainer.accelerator` -> (trainer, accelerator); a key that holds a
    `/` is one name (`nvidia.com/gpu`, a Kubernetes resource)."""
    return (key,) if "/" in key else tuple(map(_joined, key.split(".")))


def _joined(key: str) -> str:
    """A key with its words joined the one way (`distributed-backend`: distributed_backend)."""
    return key.replace("-", "_")


def _renamed(entries, entry: Entry, new_key: str) -> tuple:
    siblings = {e.path for e in entries}
    if entry.path[:-1] + (new_key,) in siblings or entry.key.quote not in ("", "'", '"'):
        return ()  # the mapping sets the new key already: a person picks one
    return (Edit(entry.key.inner, new_key),)


def _fix(document, entry: Entry, replacement: str) -> tuple:
    if not replacement:
        return ()
    word = entry.value
    if word.quote not in ("", "'", '"'):
        return ()  # a block or folded scalar: its source is not its value
    if not word.quote and _boolean(word.value) and _boolean(replacement):
        # A switch stays a switch, in the file's own spelling (`True` -> `False`).
        return (Edit(word.span, _same_case(replacement.lower(), word.value)),)
    if word.quote:
        if document.format == "toml" and word.quote == "'" and "'" in replacement:
            return ()  # a TOML literal string cannot hold its own quote
        return (Edit(word.inner, _escaped(replacement, word.quote)),)
    if document.format in ("json", "toml") or not _plain_yaml(replacement):
        return (Edit(word.span, json.dumps(replacement)),)
    return (Edit(word.span, replacement),)


def _boolean(text: str) -> bool:
    return text.lower() in ("true", "false")


def _same_case(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def _plain_yaml(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:/-]*", text) is not None and text.lower() not in ("yes", "no", "on", "off", "true", "false", "null")


def _escaped(text: str, quote: str) -> str:
    return text.replace("'", "''") if quote == "'" else json.dumps(text)[1:-1]
