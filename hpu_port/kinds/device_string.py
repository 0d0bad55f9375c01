"""Kind ``device-string``: string literals that name a device (``"cuda"``, ``"cuda:1"``).

A literal that is exactly a device, anywhere in code, is rewritten: arguments,
defaults, assignments, comparisons, containers. Docstrings and bytes are left
alone. Strings that *build* a device name are rewritten too when their role is
plain from the code: ``f"cuda:{rank}"``, ``"cuda:{}".format(i)``,
``"cuda:%d" % i`` and ``"cuda:" + str(i)``.
"""

from __future__ import annotations

import re

from hpu_port.kinds import Kind, register_kind
from hpu_port.triggers import text_trigger


@register_kind
class DeviceString(Kind):
    name = "device-string"
    KEYS = {"device": (str, True), "replacement": (str, True)}
    MESSAGE_FIELDS = frozenset({"name", "replacement"})

    def build_params(self, table):
        for key in ("device", "replacement"):
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", table[key]):
                raise ValueError(f"{key!r} must be a device type such as 'cuda' or 'hpu'")
        device = re.escape(table["device"])
        return {
            "device": table["device"],
            "replacement": table["replacement"],
            # exactly a device, or the prefix of one: "cuda", "cuda:0", "cuda:"
            "exact": re.compile(rf"{device}(:[0-9]*)?"),
            # a template that builds one: "cuda:{}", "cuda:{rank}", "cuda:%d", "cuda:"
            "template": re.compile(rf"{device}:(\{{[A-Za-z0-9_.]*\}}|%[dsi]|)"),
        }

    def triggers(self, rule):
        return [text_trigger(rule.params["device"])]
