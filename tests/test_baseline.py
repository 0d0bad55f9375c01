"""`check --baseline`: a team accepts today's findings and the gate fails only on new ones."""

import json

import pytest
from click.testing import CliRunner

from hpu_port import baseline
from hpu_port.results import FileResult, Finding

CUDA_CODE = 'import torch\n\nx = torch.zeros(2, device="cuda")\ntorch.cuda.synchronize()\n'


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(CUDA_CODE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args):
    from hpu_port.cli import main

    return CliRunner().invoke(main, ["check", "--no-cache", *args], catch_exceptions=False)


def test_written_baseline_passes_the_gate_and_lists_every_finding(tree):
    before = check(".")
    assert before.exit_code == 1
    written = check("--baseline", "base.json", "--write-baseline", ".")
    assert written.exit_code == 0
    data = json.loads((tree / "base.json").read_text())
    assert data["tool"] == "hpu-port"
    assert sum(entry["count"] for entry in data["findings"]) == before.stdout.count("train.py:")
    after = check("--baseline", "base.json", ".")
    assert after.exit_code == 0 and "train.py" not in after.stdout
    assert "known findings left out" in after.stderr


def test_a_new_finding_fails_even_when_lines_above_moved(tree):
    check("--baseline", "base.json", "--write-baseline", ".")
    (tree / "train.py").write_text("# a comment added above\n" + CUDA_CODE + 'y = torch.ones(1).cuda()\n')
    result = check("--baseline", "base.json", ".")
    assert result.exit_code == 1
    reported = [line for line in result.stdout.splitlines() if line.startswith("train.py:")]
    assert len(reported) == 1 and ".cuda()" in reported[0]


def test_a_second_copy_of_a_known_line_is_new(tree):
    check("--baseline", "base.json", "--write-baseline", ".")
    (tree / "train.py").write_text(CUDA_CODE + "torch.cuda.synchronize()\n")
    result = check("--baseline", "base.json", ".")
    assert result.exit_code == 1
    assert [line for line in result.stdout.splitlines() if "synchronize" in line]


def test_fixed_findings_are_counted_as_stale(tree):
    check("--baseline", "base.json", "--write-baseline", ".")
    (tree / "train.py").write_text('import torch\n\nx = torch.zeros(2, device="cuda")\n')
    result = check("--baseline", "base.json", ".")
    assert result.exit_code == 0
    assert "fixed since" in result.stderr


def test_the_baseline_file_is_not_examined(tree):
    check("--baseline", "base.json", "--write-baseline", ".")
    rewritten = check("--baseline", "base.json", "--write-baseline", ".")
    assert "base.json" not in json.dumps(json.loads((tree / "base.json").read_text())["findings"])
    assert rewritten.exit_code == 0


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not a baseline"),
    ('{"tool": "other", "findings": []}', "not a baseline written by"),
    ('{"tool": "hpu-port", "version": 99, "findings": []}', "baseline format 99"),
    ('{"tool": "hpu-port", "version": 1, "findings": [{"path": "a"}]}', "entry 1 is not a finding"),
])
def test_a_bad_baseline_is_one_error_line_and_exit_2(tree, content, problem):
    (tree / "base.json").write_text(content)
    result = check("--baseline", "base.json", ".")
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "base.json" in errors[0] and problem in errors[0]


def test_missing_baseline_file_names_it(tree):
    result = check("--baseline", "missing.json", ".")
    assert result.exit_code == 2 and "missing.json: cannot read the baseline" in result.stderr


def test_write_baseline_needs_the_file():
    result = check("--write-baseline", ".")
    assert result.exit_code == 2 and "--write-baseline needs --baseline" in result.output


def test_filtering_leaves_the_results_themselves_alone():
    finding = Finding("HPU101", "m", 1, 1, 1, 5)
    result = FileResult("a.py", source=b"torch.cuda.synchronize()\n", findings=[finding])
    known = baseline.read_data(baseline.build([result]))
    filtered = baseline.without_known([result], known)
    assert filtered.known == 1 and filtered.results[0].findings == []
    assert result.findings == [finding]


def test_entries_of_files_not_examined_are_not_stale():
    finding = Finding("HPU101", "m", 1, 1, 1, 5)
    other = FileResult("b.py", source=b"torch.cuda.synchronize()\n", findings=[finding])
    known = baseline.read_data(baseline.build([other]))
    filtered = baseline.without_known([FileResult("a.py", source=b"")], known)
    assert filtered.stale == 0


def test_notebook_findings_are_keyed_by_their_cells_line():
    cells = [{"cell_type": "markdown", "source": ["x"]}, {"cell_type": "code", "source": ["a = 1\n", "b.cuda()\n"]}]
    raw = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    finding = Finding("HPU111", "m", 2, 1, 2, 9, cell=2)
    [(key, _)] = baseline.finding_keys(FileResult("n.ipynb", source=raw, findings=[finding]))
    assert key[2] == "b.cuda()"


def test_paths_are_relative_to_the_baseline_so_any_working_directory_matches(tree, monkeypatch):
    check("--baseline", "base.json", "--write-baseline", ".")
    monkeypatch.chdir(tree.parent)
    for target in (tree.name, str(tree / "train.py")):
        result = check("--baseline", f"{tree.name}/base.json", target)
        assert result.exit_code == 0 and "train.py" not in result.stdout, target


def test_numbers_in_a_message_do_not_make_a_finding_new():
    a = Finding("HPU303", "held: the project reads it (b.py:4)", 1, 1, 1, 5)
    b = Finding("HPU303", "held: the project reads it (b.py:6)", 1, 1, 1, 5)
    source = b"scaler = torch.cuda.amp.GradScaler()\n"
    known = baseline.read_data(baseline.build([FileResult("a.py", source=source, findings=[a])]))
    assert baseline.without_known([FileResult("a.py", source=source, findings=[b])], known).known == 1


def test_an_entry_that_is_not_text_is_one_error(tree):
    (tree / "base.json").write_text(
        '{"tool": "hpu-port", "version": 1, "findings": [{"path": "a", "code": "X", "line": ["x"], "message": "m"}]}'
    )
    result = check("--baseline", "base.json", ".")
    assert result.exit_code == 2 and "entry 1 is not a finding" in result.stderr


def test_rewriting_the_baseline_keeps_what_it_knows_of_files_the_run_did_not_read(tree):
    (tree / "other").mkdir()
    (tree / "other" / "eval.py").write_text(CUDA_CODE)
    check("--baseline", "base.json", "--write-baseline", ".")
    written = json.loads((tree / "base.json").read_text())["findings"]
    # A run over one file, then a file that cannot be parsed: neither drops the other file's entries.
    check("--baseline", "base.json", "--write-baseline", "train.py")
    assert json.loads((tree / "base.json").read_text())["findings"] == written
    (tree / "train.py").write_text("x = torch.zeros(2).cuda(\ndef broken(:\n")
    result = check("--baseline", "base.json", "--write-baseline", ".")
    assert result.exit_code == 2
    assert json.loads((tree / "base.json").read_text())["findings"] == written
    # A file that is gone, or read again without its findings, is no longer listed.
    (tree / "other" / "eval.py").unlink()
    (tree / "train.py").write_text("x = 1\n")
    check("--baseline", "base.json", "--write-baseline", ".")
    assert json.loads((tree / "base.json").read_text())["findings"] == []
