"""The rule tables agree with the API map kept in rules/gaudi_api_map.csv."""

import csv
import re

import pytest

from hpu_port.rules import bundled_rules_dir, load_rules

TABLE = list(csv.DictReader((bundled_rules_dir() / "gaudi_api_map.csv").open(encoding="utf-8")))


def _name(cell: str) -> str:
    """`torch.cuda.device (context manager)` -> `torch.cuda.device`."""
    return cell.split(" ")[0].strip()


RENAME_ROWS = {
    _name(row["source_api"]): _name(row["hpu_equivalent"])
    for row in TABLE
    if row["static_action"] == "rename" and row["source_api"].startswith(("torch.cuda.", "torch._C._cuda"))
}
RULE_RENAMES = {
    old: (rule.code, new)
    for rule in load_rules()
    if rule.kind == "rename"
    for old, new in rule.params["renames"].items()
}
# Every dotted name the table mentions as an HPU equivalent, wherever it sits
# in the cell ("torch.Tensor.to(torch.bfloat16)" names torch.bfloat16 too).
HPU_NAMES = {
    name
    for row in TABLE
    for name in re.findall(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", row["hpu_equivalent"])
}


def test_table_is_present_and_complete():
    assert len(TABLE) >= 200
    assert {"source_api", "hpu_equivalent", "classification", "static_action"} <= set(TABLE[0])


@pytest.mark.parametrize("source", sorted(RENAME_ROWS))
def test_every_torch_cuda_rename_row_has_a_rule(source):
    assert source in RULE_RENAMES, f"{source} is a rename in the API table but no rule renames it"
    assert RULE_RENAMES[source][1] == RENAME_ROWS[source]


@pytest.mark.parametrize("source", sorted(RULE_RENAMES))
def test_every_emitted_name_exists_in_the_table(source):
    code, target = RULE_RENAMES[source]
    assert target in HPU_NAMES, f"{code} emits {target}, which the API table does not list"


from hpu_port.kinds import get_kind  # noqa: E402

ALL_RULES = load_rules()
HANDLED = set().union(*(get_kind(r.kind).handled_names(r) for r in ALL_RULES))
PREFIXES = tuple(name[:-1] for name in HANDLED if name.endswith(".*"))
COVERED_ROWS = {row: rule.code for rule in ALL_RULES for row in rule.covers}
TABLE_TEXT_NAMES = HPU_NAMES | {
    name for row in TABLE for name in re.findall(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", row["notes"])
}


def _is_handled(source: str) -> bool:
    first = _name(source)
    return source in COVERED_ROWS or first in HANDLED or first.startswith(PREFIXES)


@pytest.mark.parametrize("row", TABLE, ids=[row["source_api"][:60] for row in TABLE])
def test_every_table_row_is_handled_by_a_rule(row):
    assert _is_handled(row["source_api"]), (
        f"no rule handles {row['source_api']!r} ({row['static_action']}); "
        "add it to a rule, or name the row in the `covers` of the rule that implements it"
    )


def test_covers_name_real_rows():
    rows = {row["source_api"] for row in TABLE}
    stale = sorted(f"{code}: {row}" for row, code in COVERED_ROWS.items() if row not in rows)
    assert stale == []


def _emitted(rule) -> set:
    params = rule.params
    names = set(params.get("renames", {}).values())
    for entry in params.get("rewrites", {}).values():
        names.add(entry["to"])
        names |= set(entry["switch"].values())
    if params.get("argument-name"):
        names.add(params["argument-name"])
    return names


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if _emitted(r)], ids=lambda r: r.code)
def test_every_emitted_name_is_in_the_table(rule):
    missing = sorted(name for name in _emitted(rule) if name not in TABLE_TEXT_NAMES)
    assert missing == [], f"{rule.code} emits names the API table does not mention"
