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
