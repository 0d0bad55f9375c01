"""Kind ``nvidia-config-value``: a config value that picks the project's NVIDIA-only code.

`if cfg.BN.NORM_TYPE == "sync_batchnorm_apex": import apex ...` in the
project's code makes `NORM_TYPE: "sync_batchnorm_apex"` under `BN:` in any of
its YAML, JSON or TOML configs send a Gaudi run down apex's CUDA path, though
the Python port leaves the branch as it is (it is the NVIDIA run's too). The
project facts find the keys (the attribute path under the config object) and
their values (``ProjectFacts.nvidia_config_values``); a config entry whose path
ends with the key and whose value is one of them is reported, with the place
of the branch. Reported, not rewritten: which other value is right is the
project's choice.
"""

from __future__ import annotations

import re
from typing import Iterator

from hpu_port.kinds import DocumentKind, Match, register_kind

# A needle no config holds: without facts there is nothing to look for.
_NOTHING = ("\x00",)


@register_kind
class NvidiaConfigValue(DocumentKind):
    name = "nvidia-config-value"
    KEYS = {}
    MESSAGE_FIELDS = frozenset({"name", "value", "reason"})
    FORMATS = ("yaml", "json", "toml")
    EXAMPLE_FILE = "config.yaml"

    def build_params(self, table):
        return {}

    def needles(self, rule) -> tuple[str, ...]:
        return _NOTHING

    def project_needles(self, rule, facts) -> tuple[str, ...]:
        if facts is None or not facts.nvidia_config_values:
            return _NOTHING
        return tuple(sorted({key.rsplit(".", 1)[-1].lower() for key, _, _ in facts.nvidia_config_values}))

    def match(self, rule, document, options) -> Iterator[Match]:
        facts = document.facts
        if facts is None or not facts.nvidia_config_values:
            return
        wanted = [(tuple(_folded(part) for part in key.split(".")), re.compile(pattern), why) for key, pattern, why in facts.nvidia_config_values]
        for entry in document.entries():
            if entry.value is None:
                continue
            path = tuple(_folded(part) for part in entry.path if isinstance(part, str))
            for key, pattern, why in wanted:
                if path[-len(key):] == key and pattern.fullmatch(entry.value.value):
                    name = ".".join(str(part) for part in entry.path)
                    yield Match(entry.value.span, rule.message.format(name=name, value=entry.value.value, reason=why))
                    break


def _folded(key: str) -> str:
    """Keys compare whatever their case and word joins (`norm-type`, `NORM_TYPE`)."""
    return key.replace("-", "_").lower()
