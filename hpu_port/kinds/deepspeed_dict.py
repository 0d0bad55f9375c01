"""Kind ``deepspeed-dict``: the `"fp16"` section of a DeepSpeed config that
Python code writes as a dict literal (`ds_config = {"train_batch_size": ...,
"fp16": {"enabled": True, "loss_scale": 0}}`, then `json.dump`).

The same decision as ``deepspeed-config`` makes for JSON and YAML files: a
dict literal is a DeepSpeed config when it holds, beside ``section``, one of
``documents`` among its string keys. The section's key becomes
``rename-to`` in the same quotes, and the members only fp16 has (``drop``)
are removed with their commas. A dict that already has ``rename-to``, whose
section is not a dict literal, or whose section holds a member that is
neither in ``keep`` nor in ``drop`` (or is not keyed by a string) is
reported, never rewritten. A section whose `"enabled"` is `False` or `"auto"`
is left alone.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.triggers import text_trigger


@register_kind
class DeepSpeedDict(Kind):
    name = "deepspeed-dict"
    KEYS = {"section": (str, True), "rename-to": (str, True), "keep": (list, True), "drop": (list, True), "documents": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        params = {
            "section": table["section"],
            "rename-to": table["rename-to"],
            "keep": frozenset(string_list(table["keep"], "keep")),
            "drop": frozenset(string_list(table["drop"], "drop")),
            "documents": frozenset(string_list(table["documents"], "documents")) - {table["section"], table["rename-to"]},
        }
        if not params["documents"]:
            raise ValueError("'documents' needs a key besides the section and its new name")
        return params

    def describe(self, rule):
        params = rule.params
        return (
            f"A dict literal with a `\"{params['section']}\"` dict beside one of "
            + ", ".join(f"`\"{key}\"`" for key in sorted(params["documents"]))
            + f". Kept in the section: {', '.join(f'`{k}`' for k in sorted(params['keep']))}; "
            + f"removed: {', '.join(f'`{k}`' for k in sorted(params['drop']))}.\n"
        )

    def triggers(self, rule):
        section = rule.params["section"]
        return [text_trigger(f'"{section}"'), text_trigger(f"'{section}'")]
