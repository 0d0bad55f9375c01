"""Every Gaudi name and keyword hpu-port writes exists in Intel's Gaudi PyTorch bridge.

``rules/gaudi_bridge_api.csv`` is the bridge's public Python API as data (see
``tests/bridge_api.py``): module, name, kind, parameters.
"""

import csv
import re
from pathlib import Path

import pytest

from hpu_port.rules import bundled_rules_dir, load_rules
from tests.bridge_api import ALIASES

TABLE = list(csv.DictReader((bundled_rules_dir() / "gaudi_bridge_api.csv").open(encoding="utf-8")))
MODULES = {row["module"] for row in TABLE}
NAMES = {(row["module"], row["name"]): row for row in TABLE if row["name"]}
PACKAGE = Path(__file__).resolve().parent.parent / "hpu_port"
GAUDI_NAME = re.compile(r"\b(?:habana_frameworks|torch\.hpu|htcore)(?:\.[A-Za-z_]\w*)*")


def resolve(dotted: str):
    """(module, name) for a dotted Gaudi name, or None when the bridge has no such thing."""
    for alias, module in ALIASES.items():
        if dotted == alias or dotted.startswith(alias + "."):
            dotted = module + dotted[len(alias):]
    parts = dotted.split(".")
    # `...movingavrg.FusedEMA` is a class the package exports (and a module of the same name).
    if len(parts) > 1 and (".".join(parts[:-1]), parts[-1]) in NAMES:
        return ".".join(parts[:-1]), parts[-1]
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        rest = parts[cut:]
        # A module, or a name in one (and an attribute of it: `FusedSDPA.apply`).
        if module in MODULES and (not rest or (module, rest[0]) in NAMES):
            return module, rest[0] if rest else ""
    return None


def written_names() -> dict[str, set[str]]:
    """Every Gaudi name in the rule files and in the package's own code, with where it is."""
    found: dict[str, set[str]] = {}
    sources = sorted(bundled_rules_dir().glob("*.toml")) + sorted(PACKAGE.rglob("*.py"))
    for path in sources:
        for name in GAUDI_NAME.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name.rstrip("."), set()).add(path.name)
    return found


def test_the_table_holds_the_bridge_api():
    assert len(TABLE) > 500
    assert ("habana_frameworks.torch.core", "mark_step") in NAMES
    assert "habana_frameworks.torch.hpu" in MODULES


# Names of earlier bridge releases that rules still recognise in code already
# ported by hand (never written): a project may hold them.
RECOGNISED_ONLY = {"torch.hpu.amp.autocast", "habana_frameworks.torch.core.hpu.ModuleCacher"}


def test_every_gaudi_name_hpu_port_writes_is_in_the_bridge():
    names = {name: where for name, where in written_names().items() if name not in RECOGNISED_ONLY}
    assert len(names) > 50  # the rules and the package name many
    missing = sorted(f"{name} ({', '.join(sorted(where))})" for name, where in names.items() if resolve(name) is None)
    assert missing == []


def _keywords_passed(entry: dict) -> set[str]:
    """The keywords a call rewrite can pass to its target: the old callable's
    parameters past those kept positional, and those it sets, less those it drops."""
    positional = entry.get("positional", [])[entry.get("keep-positional", 0):]
    given = set(positional) | set(entry.get("set", {})) | set(entry.get("defaults", {})) | set(entry.get("prepend", {}))
    return given - set(entry.get("drop", [])) - {entry.get("switch-keyword")} - set(entry.get("as-positional", {}))


CALL_REWRITES = [
    pytest.param(rule.code, old, entry, id=f"{rule.code}-{old}")
    for rule in load_rules()
    if rule.kind == "call-rewrite"
    for old, entry in rule.params["rewrites"].items()
    if str(entry.get("to", "")).startswith("habana_frameworks")
]


@pytest.mark.parametrize("code, old, entry", CALL_REWRITES)
def test_every_keyword_a_rewrite_passes_is_a_parameter_of_its_gaudi_target(code, old, entry):
    module, name = resolve(entry["to"])
    if entry["to"].endswith(".apply"):
        name += ".apply"
    parameters = NAMES[(module, name)]["parameters"].split()
    keep = entry.get("keep-positional", 0)
    # Arguments passed by position land on the target's parameters in its order.
    by_position = list(entry.get("as-positional", {}))
    assert parameters[keep:keep + len(by_position)] == by_position, f"{code}: {old} -> {entry['to']}({' '.join(parameters)})"
    if any(p.startswith("**") for p in parameters):
        return  # takes any keyword
    assert _keywords_passed(entry) <= set(parameters), f"{code}: {old} -> {entry['to']}({' '.join(parameters)})"
