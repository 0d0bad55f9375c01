"""`check --toolkit-log`: the GPU Migration Toolkit's logs matched to the static findings.

The sample logs in tests/fixtures/toolkit/logs follow the toolkit's documented
format: a `[time] path:line` header, the `[context]` source line, and the
`[hpu_match|hpu_modified|hpu_mismatch]` call with what the toolkit did.
"""

import json
import shutil

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from hpu_port.toolkit_log import is_library_path, parse_text, statement_lines, why_missed

from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "toolkit"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(FIXTURES / "project", tmp_path / "project")
    shutil.copytree(FIXTURES / "logs", tmp_path / "logs")
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path


def check(*args):
    return CliRunner().invoke(main, ["check", "--no-cache", *map(str, args)], catch_exceptions=False)


def test_parse_entries_and_count_unknown_lines():
    text = (FIXTURES / "logs" / "gpu_migration_20871.log").read_text()
    calls, unknown = parse_text(text, "a.log")
    assert unknown == 2  # the banner and a stray line
    assert [(c.path, c.line, c.status) for c in calls][:2] == [("train.py", 15, "hpu_match"), ("train.py", 16, "hpu_match")]
    first = calls[0]
    assert first.source == "torch.cuda.set_device(args.local_rank)"
    assert first.api == "torch.cuda.set_device" and first.result == "torch.hpu.set_device(hpu:0)"
    assert parse_text("[t] a.py:3\n    [hpu_mismatch]: torch.cuda.foo()\n")[0][0].result == ""


def test_sites_are_matched_to_findings(project):
    result = check("--format", "json", "--toolkit-log", project / "logs", ".")
    data = json.loads(result.stdout)
    toolkit = data["toolkit_log"]
    assert toolkit["log_files"] == 2 and toolkit["unknown_lines"] == 3
    # Ten sites: a repeated call is one site.
    assert toolkit["sites"] == 10 and toolkit["sites_in_scanned_files"] == 7
    assert toolkit["covered_by_static_findings"] == 4 and toolkit["added_findings"] == 3
    assert [s["path"].rsplit("/", 1)[-1] for s in toolkit["library_sites"]] == ["random.py", "pin_memory.py"]
    assert [s["path"] for s in toolkit["sites_outside_scanned_files"]] == ["/opt/scripts/launch_helper.py"]
    added = {f["line"]: f for f in data["findings"] if f["code"] == "HPU191"}
    assert sorted(added) == [16, 19, 26]
    assert "configuration (`args.backend`)" in added[16]["message"] and "change backend to hccl" in added[16]["message"]
    assert "through a variable" in added[19]["message"] and "hpu_match" in added[19]["message"]
    assert added[26]["message"].count("torch.Tensor.to") == 2  # the call, and what the toolkit made of it
    assert all(f["fixable"] is False and f["severity"] == "blocker" for f in added.values())
    # The site logged at the first line of a multi-line call is covered by the
    # finding on its second line.
    assert not any(f["code"] == "HPU191" and f["line"] in (20, 21) for f in data["findings"])


def test_summary_says_how_many_sites_the_static_port_covers(project):
    result = check("--toolkit-log", project / "logs" / "gpu_migration_20871.log", "--toolkit-log",
                   project / "logs" / "gpu_migration_20872.log", "-v", ".")
    assert "toolkit log: 10 intercepted call sites in 2 log files; 7 in the scanned files, 4 covered by static" in result.stderr
    assert "/opt/scripts/launch_helper.py:12: torch.cuda.synchronize [hpu_mismatch] (outside the scanned files)" in result.stderr
    assert "random.py:40: torch.cuda.manual_seed_all [hpu_match] (in an installed library)" in result.stderr


def test_toolkit_findings_follow_selection_and_suppressions(project):
    ignored = json.loads(check("--format", "json", "--ignore", "HPU191", "--toolkit-log", project / "logs", ".").stdout)
    assert not any(f["code"] == "HPU191" for f in ignored["findings"])
    assert ignored["toolkit_log"]["added_findings"] == 0
    train = project / "project" / "train.py"
    train.write_text(train.read_text().replace("    model.to(device)\n", "    model.to(device)  # hpu-port: ignore[HPU191]\n"))
    data = json.loads(check("--format", "json", "--toolkit-log", project / "logs", ".").stdout)
    assert sorted(f["line"] for f in data["findings"] if f["code"] == "HPU191") == [16, 26]


def test_a_missing_log_is_an_error_and_the_run_goes_on(project):
    result = check("--toolkit-log", project / "nowhere.log", ".")
    assert result.exit_code == 2
    assert f"{project / 'nowhere.log'}: no such file or directory" in result.stderr
    assert "train.py:15:5: HPU101" in result.stdout


def test_markdown_has_a_toolkit_section(project):
    text = check("--format", "markdown", "--toolkit-log", project / "logs", ".").stdout
    section = text[text.index("## GPU Migration Toolkit log"):]
    assert "10 intercepted call sites in 2 log files" in section and "launch_helper.py:12" in section


def test_statement_lines():
    source = "x = 1\nbuffer = torch.empty(\n    16, device='cuda'\n)\nfor a in b:\n    c(a)\n"
    assert statement_lines(source, 3) == (2, 4)
    assert statement_lines(source, 5) == (5, 5)  # a loop's header, not its body
    assert statement_lines(source, 6) == (6, 6)
    assert statement_lines("def (:\n", 1) == (1, 1)


def test_library_paths():
    assert is_library_path("/usr/local/lib/python3.10/dist-packages/torch/random.py")
    assert is_library_path("/home/u/.venv/lib/python3.11/site-packages/apex/amp/scaler.py")
    assert not is_library_path("/home/u/project/train.py")


def test_why_missed():
    def call(source, text, result=""):
        return parse_text(f"[t] a.py:1\n    [context]: {source}\n    [hpu_match]: {text} --> {result or 'x'}\n")[0][0]

    assert "configuration (`cfg.device`)" in why_missed(call("x.to(cfg.device)", "torch.Tensor.to(args=(device(type='cuda'),))"))
    assert "through a variable" in why_missed(call("x.to(dev)", "torch.Tensor.to(args=(device(type='cuda'),))"))
    assert "alias" in why_missed(call("sync()", "torch.cuda.synchronize()"))


def test_html_shows_the_toolkit_numbers(project):
    data = json.loads(check("--format", "json", "--toolkit-log", project / "logs", ".").stdout)["toolkit_log"]
    page = check("--format", "html", "--toolkit-log", project / "logs", ".").stdout
    for key in ("sites", "sites_in_scanned_files", "covered_by_static_findings"):
        assert f'<span data-toolkit="{key}">{data[key]}</span>' in page


def test_a_log_older_than_the_source_is_matched_by_its_source_lines(project):
    train = project / "project" / "train.py"
    original = train.read_text()
    train.write_text('"""Edited since the run."""\n\n' + original.replace("    model.to(device)\n", "    model.to(device=device)\n"))
    data = json.loads(check("--format", "json", "--toolkit-log", project / "logs", ".").stdout)
    added = sorted(f["line"] for f in data["findings"] if f["code"] == "HPU191")
    assert added == [16 + 2, 26 + 2]  # moved with their code; the edited line is not matched
    toolkit = data["toolkit_log"]
    assert [(s["path"], s["line"]) for s in toolkit["sites_whose_source_changed"]] == [("train.py", 19)]
    assert toolkit["covered_by_static_findings"] == 4


def test_unpacked_arguments_are_named():
    calls, _ = parse_text("[t] a.py:1\n    [context]:     DataLoader(ds, **loader_kwargs)\n"
                          "    [hpu_match]: torch.utils.data.DataLoader.__init__(pin_memory=True) --> change pin_memory_device to hpu\n")
    assert "`**loader_kwargs`" in why_missed(calls[0])
