"""Kind ``string-literal``: string literals with a fixed meaning (environment variable names).

``replace`` maps exact literal values to new ones (``"CUDA_VISIBLE_DEVICES"`` ->
``"HABANA_VISIBLE_MODULES"``); ``match`` lists regular expressions whose
matching literals are reported without a fix (``NCCL_.*``). With ``dict-keys-only``, only literals
used as keys of dict displays count (config dicts); with ``dict-with-keys``
too, only in a dict that also has one of those keys (what makes it a
DeepSpeed config, say). A key is never renamed to one the dict already has,
and with ``value-keys`` a key whose value is a dict that sets other keys
than those (fp16's loss scaling, which the `"bf16"` section does not take) is
reported, not renamed.
With ``plain-args`` the literals of ``replace`` are program names: one is
renamed only as the first item of a list or tuple (``["nvidia-smi", "-L"]``)
whose other items are all literal strings among ``plain-args``; anywhere
else it is reported, since the arguments it is run with may be the old
program's own. Docstrings and bytes are never touched.
"""

from __future__ import annotations

import re

from hpu_port.kinds import Kind, register_kind, string_list, string_table
from hpu_port.triggers import text_trigger


@register_kind
class StringLiteral(Kind):
    name = "string-literal"
    KEYS = {
        "replace": (dict, False),
        "match": (list, False),
        "dict-keys-only": (bool, False),
        "dict-with-keys": (list, False),
        "plain-args": (list, False),
        "value-keys": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        replace = string_table(table.get("replace", {}), "replace")
        patterns = []
        for pattern in string_list(table.get("match", []), "match"):
            try:
                patterns.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"'match': {pattern!r} is not a regular expression: {exc}") from None
        if not replace and not patterns:
            raise ValueError("needs 'replace' or 'match'")
        companions = frozenset(string_list(table.get("dict-with-keys", []), "dict-with-keys"))
        if companions and not table.get("dict-keys-only", False):
            raise ValueError("'dict-with-keys' needs 'dict-keys-only = true'")
        return {
            "replace": replace,
            "match": patterns,
            "dict-keys-only": table.get("dict-keys-only", False),
            "dict-with-keys": companions,
            "plain-args": _optional_set(table, "plain-args"),
            "value-keys": _optional_set(table, "value-keys"),
        }

    def describe(self, rule):
        rows = [f"| `{old}` | `{new}` |" for old, new in rule.params["replace"].items()]
        rows += [f"| `{p.pattern}` (pattern) | reported |" for p in rule.params["match"]]
        return "| literal | becomes |\n|---|---|\n" + "\n".join(rows) + "\n"

    def triggers(self, rule):
        tokens = set(rule.params["replace"])
        for pattern in rule.params["match"]:
            tokens.add(re.match(r"[A-Za-z0-9_]*", pattern.pattern).group(0))
        if "" in tokens and not rule.triggers:
            # Every file would have to be read: make the rule say what to look for.
            raise ValueError("a 'match' pattern starts with no literal text; list the text files must contain in 'triggers'")
        return [text_trigger(token) for token in sorted(tokens)]


def _optional_set(table, key: str):
    """The strings listed under ``key``, or None when the key is absent."""
    return frozenset(string_list(table[key], key)) if key in table else None
