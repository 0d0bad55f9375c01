"""The CLI contract: commands, options, stdout/stderr split and exit codes 0/1/2."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import rename_rule_toml

CUDA_CODE = 'import torch\n\nx = torch.zeros(2, device="cuda")\ntorch.cuda.synchronize()\n'
CLEAN_CODE = "import torch\n\nx = torch.zeros(2)\n"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(CUDA_CODE)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN_CODE)
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "skip.py").write_text(CUDA_CODE)
    return tmp_path


def invoke(runner, *args):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_rewrite_writes_files_and_exits_0(runner, tree):
    result = invoke(runner, "rewrite", tree)
    assert result.exit_code == 0
    text = (tree / "pkg" / "train.py").read_text()
    assert 'device="hpu"' in text and "torch.hpu.synchronize()" in text
    assert (tree / "pkg" / "clean.py").read_text() == CLEAN_CODE
    assert (tree / "pkg" / "__pycache__" / "skip.py").read_text() == CUDA_CODE
    assert result.stdout == ""
    assert "2 files scanned, 1 rewritten, 0 failed" in result.stderr
    # A second run has nothing to do.
    again = invoke(runner, "rewrite", "--check", tree)
    assert again.exit_code == 0 and again.stdout == ""


def test_dry_run_prints_a_unified_diff_and_writes_nothing(runner, tree):
    result = invoke(runner, "rewrite", "--dry-run", tree)
    assert result.exit_code == 1
    path = tree / "pkg" / "train.py"
    assert path.read_text() == CUDA_CODE
    lines = result.stdout.splitlines()
    assert lines[0] == f"--- {path}" and lines[1] == f"+++ {path}"
    assert lines[2].startswith("@@ ")
    assert '-x = torch.zeros(2, device="cuda")' in lines
    assert '+x = torch.zeros(2, device="hpu")' in lines
    assert "\x1b[" not in result.stdout  # plain when piped
    assert "1 would be rewritten" in result.stderr


def test_dry_run_diff_applies_to_the_original(runner, tree):
    from tests.difftools import apply_unified_diff

    path = tree / "pkg" / "train.py"
    result = invoke(runner, "rewrite", "--dry-run", path)
    patched = apply_unified_diff(result.stdout, {str(path): CUDA_CODE})[str(path)]
    invoke(runner, "rewrite", path)
    assert patched == path.read_text()


def test_check_flag_lists_files(runner, tree):
    result = invoke(runner, "rewrite", "--check", tree)
    assert result.exit_code == 1
    assert result.stdout == f"{tree / 'pkg' / 'train.py'}\n"


def test_nothing_to_do_exits_0(runner, tree):
    result = invoke(runner, "rewrite", "--dry-run", tree / "pkg" / "clean.py")
    assert result.exit_code == 0 and result.stdout == ""


def test_syntax_error_exits_2_and_other_files_are_processed(runner, tree):
    broken = tree / "pkg" / "broken.py"
    broken.write_text('print "python 2"\ndevice = "cuda"\n')
    result = invoke(runner, "rewrite", tree)
    assert result.exit_code == 2
    assert broken.read_text() == 'print "python 2"\ndevice = "cuda"\n'
    assert "torch.hpu.synchronize()" in (tree / "pkg" / "train.py").read_text()
    [error] = [line for line in result.stderr.splitlines() if "error" in line]
    assert error.startswith(f"{broken}: error: syntax error at line 1")


def test_missing_path_exits_2(runner, tree):
    result = invoke(runner, "rewrite", "--dry-run", tree / "nope.py", tree / "pkg" / "train.py")
    assert result.exit_code == 2
    assert f"{tree / 'nope.py'}: error: no such file or directory" in result.stderr
    assert "+++" in result.stdout  # the good file was still processed


def test_check_reports_findings_sorted(runner, tree):
    result = invoke(runner, "check", tree)
    assert result.exit_code == 1
    path = tree / "pkg" / "train.py"
    assert result.stdout.splitlines() == [
        f"{path}:1:1: HPU001 [*] add `import habana_frameworks.torch.core as htcore`: it registers the HPU device (`torch.hpu`, `\"hpu\"`) with torch",
        f'{path}:3:27: HPU110 [*] "cuda" names a CUDA device; use "hpu"',
        f"{path}:4:1: HPU101 [*] `torch.cuda.synchronize` is a CUDA device API; use `torch.hpu.synchronize`",
    ]
    assert path.read_text() == CUDA_CODE
    assert "3 findings: 3 blockers (3 fixable by rewrite; 0 root causes need a person), 0 advice" in result.stderr


def test_check_clean_exits_0(runner, tree):
    result = invoke(runner, "check", tree / "pkg" / "clean.py")
    assert result.exit_code == 0 and result.stdout == ""


def test_check_json_and_output_file(runner, tree):
    out = tree / "report.json"
    result = invoke(runner, "check", "--format", "json", "--output", out, tree)
    assert result.exit_code == 1 and result.stdout == ""
    data = json.loads(out.read_text())
    assert data["tool"] == "hpu-port"
    assert [f["code"] for f in data["findings"]] == ["HPU001", "HPU110", "HPU101"]
    assert set(data["findings"][1]) >= {"path", "line", "column", "end_line", "end_column", "code", "message", "category", "fix"}


def test_check_csv(runner, tree):
    result = invoke(runner, "check", "--format", "csv", tree)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("path,line,column")
    assert len(lines) == 4


def test_select_and_ignore(runner, tree):
    only_strings = invoke(runner, "check", "--select", "HPU110", tree)
    assert [line.split(": ")[1].split()[0] for line in only_strings.stdout.splitlines()] == ["HPU110"]
    ignored = invoke(runner, "check", "--ignore", "HPU110,HPU001", tree)
    assert "HPU110" not in ignored.stdout and "HPU101" in ignored.stdout


def test_unknown_select_code_exits_2(runner, tree):
    result = invoke(runner, "check", "--select", "HPU777", tree)
    assert result.exit_code == 2
    assert "unknown rule code or prefix 'HPU777'" in result.stderr


def test_bad_rule_file_exits_2_before_touching_files(runner, tree):
    bad = tree / "bad.toml"
    bad.write_text('code = "HPU990"\nkind = "rename"\nbogus = 1\n')
    result = invoke(runner, "rewrite", "--rules", bad, tree)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"hpu-port: error: {bad}: rule HPU990: unknown key 'bogus'"
    assert (tree / "pkg" / "train.py").read_text() == CUDA_CODE


def test_user_rule_file_is_applied(runner, tree):
    rule = tree / "mine.toml"
    rule.write_text(rename_rule_toml(name="mylib-helper"))
    (tree / "pkg" / "helper.py").write_text("import mylib\nmylib.cuda_helper()\n")
    result = invoke(runner, "rewrite", "--rules", rule, tree / "pkg" / "helper.py")
    assert result.exit_code == 0
    assert (tree / "pkg" / "helper.py").read_text() == "import mylib\nmylib.hpu_helper()\n"
    listed = invoke(runner, "rules", "--format", "tsv", "--rules", rule)
    assert any(line.startswith("HPU901\tmylib-helper\trename\tsafe\ton") for line in listed.stdout.splitlines())


def test_rules_lists_every_rule(runner, all_rules):
    result = invoke(runner, "rules", "--format", "tsv")
    assert result.exit_code == 0
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [r.code for r in all_rules]


def test_rules_table_filter_and_json(runner, all_rules):
    table = invoke(runner, "rules").stdout.splitlines()
    assert table[0].split() == ["code", "name", "category", "fix", "default", "summary"]
    summary_at = table[0].index("summary")
    assert all(line[summary_at - 2:summary_at] == "  " for line in table[1:])  # aligned columns
    assert [line.split()[0] for line in table[1:]] == [r.code for r in all_rules]
    nccl = invoke(runner, "rules", "nccl").stdout.splitlines()[1:]
    assert nccl and all("nccl" in line.lower() for line in nccl)
    assert [line.split()[0] for line in invoke(runner, "rules", "hpu40").stdout.splitlines()[1:]][:2] == ["HPU401", "HPU402"]
    rows = json.loads(invoke(runner, "rules", "--format", "json", "advice").stdout)
    assert rows and all("advice" in (row["category"] + row["kind"] + row["summary"].lower()) for row in rows)
    assert set(rows[0]) == {"code", "name", "kind", "category", "fix", "default", "summary"}
    none = invoke(runner, "rules", "no-such-rule-anywhere")
    assert none.exit_code == 0 and "no rule matches" in none.stderr


def test_explain(runner):
    result = invoke(runner, "explain", "HPU110")
    assert result.exit_code == 0
    assert result.stdout.startswith("# HPU110: cuda-device-string")
    for section in ("## What it does", "## Why", "## Example", "Use instead:", "## Fix safety"):
        assert section in result.stdout
    by_name = invoke(runner, "explain", "cuda-device-string")
    assert by_name.stdout == result.stdout


def test_explain_unknown_code_exits_2(runner):
    result = invoke(runner, "explain", "HPU999")
    assert result.exit_code == 2 and "unknown rule 'HPU999'" in result.stderr


def test_usage_error_exits_2(runner):
    assert invoke(runner, "rewrite", "--mode", "turbo", ".").exit_code == 2
    assert invoke(runner, "frobnicate").exit_code == 2


def test_no_paths_means_the_current_directory(runner, tree, monkeypatch):
    monkeypatch.chdir(tree)
    checked = invoke(runner, "check")
    assert checked.exit_code == 1 and "pkg/train.py:3:27: HPU110" in checked.stdout
    assert "2 files scanned" in checked.stderr
    rewritten = invoke(runner, "rewrite")
    assert rewritten.exit_code == 0 and 'device="hpu"' in (tree / "pkg" / "train.py").read_text()


def test_a_path_with_nothing_to_examine_warns(runner, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("cuda\n")
    for command in ("rewrite", "check"):
        result = invoke(runner, command, tmp_path / "docs")
        assert result.exit_code == 0 and result.stdout == ""
        assert f"warning: {tmp_path / 'docs'}: nothing examined: no file there that hpu-port ports" in result.stderr


def test_a_path_whose_files_are_all_excluded_warns(runner, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port]\nexclude = ["legacy"]\n')
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(CUDA_CODE)
    result = invoke(runner, "check", tmp_path / "legacy")
    assert result.exit_code == 0
    assert "nothing examined: every file there is excluded by the configuration" in result.stderr
    quiet = invoke(runner, "check", "-q", tmp_path / "legacy")
    assert "warning" not in quiet.stderr


def test_mode_option_is_accepted(runner, tree):
    result = invoke(runner, "rewrite", "--mode", "eager", "--dry-run", tree / "pkg" / "train.py")
    assert result.exit_code == 1


def test_version(runner):
    from hpu_port import __version__

    assert invoke(runner, "--version").stdout.strip().endswith(__version__)


def test_diff_is_coloured_on_a_terminal(runner, tree, monkeypatch):
    from hpu_port import terminal

    monkeypatch.setattr(terminal, "stdout_colored", lambda no_color: not no_color)
    coloured = invoke(runner, "rewrite", "--dry-run", tree / "pkg" / "train.py")
    assert "\x1b[" in coloured.stdout
    plain = invoke(runner, "rewrite", "--dry-run", "--no-color", tree / "pkg" / "train.py")
    assert "\x1b[" not in plain.stdout


def test_no_color_environment_variable(monkeypatch):
    from hpu_port import terminal

    monkeypatch.setattr(terminal.sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal.stdout_colored(False) is False
    monkeypatch.delenv("NO_COLOR")
    assert terminal.stdout_colored(False) is True
    assert terminal.stdout_colored(True) is False


def test_generated_files_are_skipped_unless_asked(runner, tmp_path):
    generated = tmp_path / "model_pb2.py"
    generated.write_text("# @" + "generated by protoc\ndevice = 'cuda'\n")
    assert invoke(runner, "rewrite", "--check", generated).stdout == ""
    assert invoke(runner, "rewrite", "--check", "--include-generated", generated).stdout == f"{generated}\n"


def test_gitignored_files_are_skipped_when_walking(runner, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n*_old.py\n!keep_old.py\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".gitignore").write_text("/local.py\n")
    for name in ("a.py", "generated/b.py", "c_old.py", "keep_old.py", "pkg/local.py", "pkg/d.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('device = "cuda"\n')
    result = invoke(runner, "rewrite", "--check", tmp_path)
    listed = sorted(Path(line).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines())
    assert listed == ["a.py", "keep_old.py", "pkg/d.py"]
    # A file named explicitly is ported even if .gitignore hides it.
    assert invoke(runner, "rewrite", "--check", tmp_path / "c_old.py").stdout.strip() == str(tmp_path / "c_old.py")


def test_in_a_git_work_tree_the_walk_takes_what_git_lists(runner, tmp_path):
    import subprocess

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("build/\n*.log.py\n")
    for name in ("train.py", "build/tracked.py", "build/scratch.py", "run.log.py", "new/untracked.py",
                 "venv/lib/site/pkg/m.py"):  # an environment without a .gitignore of its own
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('device = "cuda"\n')
    git("add", "train.py", ".gitignore")
    git("add", "-f", "build/tracked.py")  # tracked although ignored: the project's file
    result = invoke(runner, "rewrite", "--check", tmp_path)
    listed = sorted(Path(line).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines())
    assert listed == ["build/tracked.py", "new/untracked.py", "train.py"]
    # From a folder inside the work tree, git answers for that folder.
    inside = invoke(runner, "rewrite", "--check", tmp_path / "build")
    assert [Path(line).name for line in inside.stdout.splitlines()] == ["tracked.py"]


def test_quiet_prints_only_errors_and_verbose_names_files(runner, tree):
    (tree / "pkg" / "broken.py").write_text('x = "cuda\n')
    quiet = invoke(runner, "rewrite", "--dry-run", "--quiet", tree)
    assert quiet.stdout.startswith("---")  # the diff is the output, not chatter
    assert [line for line in quiet.stderr.splitlines()] == [f"{tree / 'pkg' / 'broken.py'}: error: " + quiet.stderr.split(": error: ", 1)[1].strip()]
    verbose = invoke(runner, "check", "--verbose", tree)
    named = [line.split("] ", 1) for line in verbose.stderr.splitlines() if line.startswith("[")]
    assert sorted(count for count, _ in named) == ["[1/3", "[2/3", "[3/3"]
    assert {str(tree / "pkg" / "broken.py"), str(tree / "pkg" / "train.py")} <= {path for _, path in named}


def test_findings_are_coloured_on_a_terminal(runner, tree, monkeypatch):
    from hpu_port import terminal

    monkeypatch.setattr(terminal, "stdout_colored", lambda no_color: not no_color)
    coloured = invoke(runner, "check", tree / "pkg" / "train.py")
    assert "\x1b[" in coloured.stdout and "HPU110" in coloured.stdout
    assert "\x1b[" not in invoke(runner, "check", "--no-color", tree / "pkg" / "train.py").stdout


def test_force_color_colours_output_that_is_not_a_terminal(monkeypatch):
    from hpu_port import terminal

    monkeypatch.setattr(terminal.sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert terminal.stdout_colored(False) is False
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert terminal.stdout_colored(False) is True
    assert terminal.stdout_colored(True) is False  # --no-color wins
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal.stdout_colored(False) is False


def test_diff_is_dry_run_and_the_output_format_comes_from_the_environment(runner, tree, monkeypatch):
    target = tree / "pkg" / "train.py"
    assert invoke(runner, "rewrite", "--diff", target).stdout == invoke(runner, "rewrite", "--dry-run", target).stdout
    monkeypatch.setenv("HPU_PORT_OUTPUT_FORMAT", "json")
    import json

    assert json.loads(invoke(runner, "check", target).stdout)["tool"] == "hpu-port"


REVIEWED = """import torch
import apex

x = torch.zeros(2, device="cuda")
with torch.cuda.graph(g):
    y = x * 2
"""


def test_a_diff_for_review_lists_no_findings_unless_asked(runner, tmp_path):
    path = tmp_path / "train.py"
    path.write_text(REVIEWED)
    plain = invoke(runner, "rewrite", "--diff", path)
    assert '+x = torch.zeros(2, device="hpu")' in plain.stdout
    assert f"{path}:" not in plain.stderr  # no finding lines over the diff
    assert "need a person (root causes): --show-findings lists them" in plain.stderr
    for asked in (["--show-findings"], ["-v"]):
        listed = invoke(runner, "rewrite", "--diff", *asked, path)
        assert listed.stdout == plain.stdout
        assert f"{path}:" in listed.stderr and "lists them" not in listed.stderr
    # Writing (and `check`) still list them.
    assert f"{path}:" in invoke(runner, "check", path).stdout + invoke(runner, "check", path).stderr


def test_show_fixes_names_each_hunks_rules_and_the_diff_still_applies(runner, tmp_path):
    from tests.difftools import apply_unified_diff

    path = tmp_path / "train.py"
    path.write_text(CUDA_CODE)
    labelled = invoke(runner, "rewrite", "--diff", "--show-fixes", path)
    headers = [line for line in labelled.stdout.splitlines() if line.startswith("@@ ")]
    assert headers and all(line.split(" @@ ", 1)[1].startswith("HPU") for line in headers)
    assert any("HPU110" in line for line in headers)
    patched = apply_unified_diff(labelled.stdout, {str(path): CUDA_CODE})[str(path)]
    invoke(runner, "rewrite", path)
    assert patched == path.read_text()


def test_a_utf16_config_is_shown_and_written_in_its_own_encoding(runner, tmp_path):
    import codecs

    path = tmp_path / "ds.json"
    text = '{\n  "distributed_backend": "nccl"\n}\n'
    path.write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    shown = invoke(runner, "rewrite", "--diff", path)
    assert shown.exit_code == 1
    assert '+  "distributed_backend": "hccl"' in shown.stdout.splitlines()
    assert invoke(runner, "rewrite", path).exit_code == 0
    assert path.read_bytes() == codecs.BOM_UTF16_LE + text.replace("nccl", "hccl").encode("utf-16-le")


def test_files_hidden_by_gitignore_outside_git_are_counted(runner, tmp_path):
    (tmp_path / ".gitignore").write_text("*.ipynb\nnotes.txt\n")
    (tmp_path / "demo.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    (tmp_path / "notes.txt").write_text("cuda\n")
    (tmp_path / "train.py").write_text(CUDA_CODE)
    result = invoke(runner, "check", "--no-cache", tmp_path)
    assert "1 file of types hpu-port reads that .gitignore lists" in result.stderr
    named = invoke(runner, "check", "--no-cache", tmp_path / "demo.ipynb")
    assert ".gitignore lists" not in named.stderr and named.exit_code == 0
