"""Reports a migration is planned with: blockers apart from advice, root causes
counted once, the per-directory rollup, and ruff's CLI conventions for output."""

import json
import re

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from hpu_port.options import REPORT_FORMATS
from hpu_port.planning import file_items, make_plan, numbered_findings, summary_line
from hpu_port.report import RENDERERS, finding_line, one_line, renderer
from hpu_port.results import FileResult, Finding

TRAIN = '''import torch
import triton
import triton.language as tl

x = torch.zeros(2, device="cuda").double()
for step in range(10):
    loss = x.sum()
    loss.backward()
    print(loss.item())
'''
HEAVY = '''import torch
from torch.utils.cpp_extension import load

kernel = load(name="k", sources=["k.cu"])
y = torch.zeros(2, dtype=torch.float64)
import flash_attn
scripted = torch.jit.script(model)
'''


@pytest.fixture
def monorepo(tmp_path):
    (tmp_path / "light").mkdir()
    (tmp_path / "light" / "train.py").write_text(TRAIN)
    (tmp_path / "heavy").mkdir()
    (tmp_path / "heavy" / "ops.py").write_text(HEAVY)
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def finding(code, line, end_line=None, category="unsupported", fixable=False, column=1):
    return Finding(code, f"{code} message", line, column, end_line or line, column + 3, category=category, fixable=fixable)


def test_findings_starting_on_one_line_are_one_root_cause():
    items = file_items("a.py", [
        finding("HPU611", 2, column=8), finding("HPU611", 2, column=8),  # `import triton.language`
        finding("HPU602", 3),
        finding("HPU110", 3, category="device", fixable=True),  # fixed by rewrite: another item
        finding("HPU708", 5, end_line=9, category="advice"),  # a whole loop...
        finding("HPU705", 8, category="advice"), finding("HPU706", 8, category="advice"),  # ...does not swallow these
    ])
    assert [(item.line, item.codes) for item in items] == [
        (2, ("HPU611",)), (3, ("HPU110",)), (3, ("HPU602",)), (5, ("HPU708",)), (8, ("HPU705", "HPU706")),
    ]
    assert [item.needs_person for item in items] == [True, False, True, True, True]
    assert [item.advice for item in items] == [False, False, False, True, True]


def test_cells_of_a_notebook_are_apart():
    first = Finding("HPU602", "m", 1, 1, 1, 4, category="unsupported", cell=1)
    second = Finding("HPU602", "m", 1, 1, 1, 4, category="unsupported", cell=2)
    assert len(file_items("n.ipynb", [first, second])) == 2


def test_directories_are_sorted_by_manual_effort(monorepo):
    data = json.loads(invoke("check", "--format", "json", "--no-cache", monorepo).stdout)
    directories = [d["path"] for d in data["directories"]]
    assert directories == [str(monorepo / "heavy"), str(monorepo / "light")]
    heavy, light = data["directories"]
    assert heavy["effort_points"] > light["effort_points"] > 0
    # The summary is the sum of the directories, blockers apart from advice.
    for key in ("findings", "items", "need_a_person", "fixed_by_rewrite"):
        for kind in ("blockers", "advice"):
            assert data["summary"][key][kind] == heavy[key][kind] + light[key][kind]
    assert data["summary"]["findings"]["advice"] == sum(f["severity"] == "advice" for f in data["findings"])
    assert data["summary"]["findings"]["blockers"] == sum(f["severity"] == "blocker" for f in data["findings"])
    # `import triton.language as tl` gives two findings and one root cause.
    triton = [f for f in data["findings"] if f["code"] == "HPU611" and f["line"] == 3]
    assert len(triton) == 2 and len({f["item"] for f in triton}) == 1
    assert data["summary"]["items"]["blockers"] < data["summary"]["findings"]["blockers"]


def test_markdown_rollup_comes_before_the_per_file_detail(monorepo):
    text = invoke("check", "--format", "markdown", "--no-cache", monorepo).stdout
    rollup = text[text.index("## By directory"):text.index("## By category")]
    assert rollup.index("heavy") < rollup.index("light")
    assert text.index("## By directory") < text.index(f"### `{monorepo / 'heavy' / 'ops.py'}`")
    advice = text[text.index("## Advice"):text.index("## Changes")]
    assert "HPU705" in advice and "HPU611" not in advice


def test_text_marks_advice_and_the_exit_code_ignores_it(tmp_path):
    (tmp_path / "loop.py").write_text("import torch\nfor step in range(3):\n    loss = model(x).sum()\n    loss.backward()\n    print(loss.item())\n")
    result = invoke("check", "--no-cache", "--ignore", "HPU0,HPU2,HPU708", tmp_path)
    lines = result.stdout.splitlines()
    assert lines and all(" (advice) " in line for line in lines)
    assert result.exit_code == 0  # advice nobody selected by code is information
    assert invoke("check", "--no-cache", "--select", "HPU705", tmp_path).exit_code == 1


def test_text_output_is_one_line_per_finding():
    long_call = "torch.zeros(\n    " + "a, " * 40 + 'device="cuda")'
    message = f"`{long_call}` is long"
    line = finding_line("a.py", Finding("HPU110", message, 1, 1, 3, 2))
    assert "\n" not in line and line.endswith("…` is long")
    assert one_line("a\r\nb\nc") == "a\\nb\\nc"
    assert one_line("`short\ncode`") == "`short\\ncode`"


def test_exit_zero(monorepo):
    assert invoke("check", "--no-cache", monorepo).exit_code == 1
    assert invoke("check", "--no-cache", "--exit-zero", monorepo).exit_code == 0
    assert invoke("rewrite", "--check", "--no-cache", "--exit-zero", monorepo).exit_code == 0
    (monorepo / "bad.py").write_text("x = torch.cuda.current_device(\n")
    assert invoke("check", "--no-cache", "--exit-zero", monorepo).exit_code == 2  # errors still count


def test_statistics_counts_per_rule_with_names(monorepo):
    result = invoke("check", "--no-cache", "--statistics", monorepo)
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    by_code = {row[1]: row for row in rows}
    assert by_code["HPU611"][0] == "4" and by_code["HPU611"][2].strip() == "cuda-only-libraries"
    assert by_code["HPU110"][2] == "[*] cuda-device-string"
    assert by_code["HPU705"][2].endswith("(advice)")
    counts = [int(row[0]) for row in rows]
    assert counts == sorted(counts, reverse=True)
    data = json.loads(invoke("check", "--no-cache", "--statistics", "--format", "json", monorepo).stdout)
    full = json.loads(invoke("check", "--no-cache", "--format", "json", monorepo).stdout)
    assert sum(row["count"] for row in data) == len(full["findings"])
    assert invoke("check", "--statistics", "--format", "sarif", monorepo).exit_code == 2


GITHUB = re.compile(r"^::(error|warning|notice) title=hpu-port (HPU\d+) \(([\w-]+)\),file=([^,]+),line=(\d+),col=(\d+),endLine=\d+,endColumn=\d+::(.+)$")


def test_github_annotations(monorepo, monkeypatch):
    monkeypatch.chdir(monorepo)
    result = invoke("check", "--no-cache", "--output-format", "github", ".")
    lines = result.stdout.splitlines()
    assert lines and all(GITHUB.match(line) for line in lines), lines
    levels = {GITHUB.match(line).group(2): GITHUB.match(line).group(1) for line in lines}
    assert levels["HPU611"] == "error" and levels["HPU110"] == "warning" and levels["HPU705"] == "notice"
    assert any(GITHUB.match(line).group(4) == "heavy/ops.py" for line in lines)


def test_gitlab_code_quality(monorepo, monkeypatch):
    monkeypatch.chdir(monorepo)
    issues = json.loads(invoke("check", "--no-cache", "--output-format", "gitlab", ".").stdout)
    assert issues and all(set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"} for issue in issues)
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    assert {issue["severity"] for issue in issues} <= {"info", "minor", "major"}
    assert all(not issue["location"]["path"].startswith("/") for issue in issues)
    again = json.loads(invoke("check", "--no-cache", "--output-format", "gitlab", ".").stdout)
    assert [i["fingerprint"] for i in again] == [i["fingerprint"] for i in issues]


def test_show_fixes(monorepo):
    checked = invoke("check", "--no-cache", "--show-fixes", monorepo)
    assert "Would fix" in checked.stderr and "1 × HPU110 (cuda-device-string)" in checked.stderr
    rewritten = invoke("rewrite", "--no-cache", "--show-fixes", monorepo)
    assert "Fixed" in rewritten.stderr and f"- {monorepo / 'light' / 'train.py'}:" in rewritten.stderr


def test_every_format_has_a_renderer():
    assert set(REPORT_FORMATS) == set(RENDERERS)
    for output_format in REPORT_FORMATS:
        assert callable(renderer(output_format)), output_format


def test_plan_of_nothing():
    plan = make_plan([FileResult(path="a.py")])
    assert plan.total.files == 1 and plan.items == [] and plan.directories[0][0] == "."


def test_a_kernel_source_is_one_item_however_many_lines_say_cuda():
    lines = [finding("HPU860", line) for line in (3, 10, 40, 41, 90)]
    assert len(file_items("kernels/wkv_cuda.cu", lines)) == 1
    assert len(file_items("kernels/wkv.py", lines)) == 5


def test_lines_that_only_mention_cuda_are_no_blockers_and_no_effort():
    mentions = FileResult(path="a.py", source=b"", findings=[finding("HPU190", 4, category="review"), finding("HPU190", 7, category="review")])
    blockers = FileResult(path="b.py", source=b"", findings=[finding("HPU602", 4)])
    plan = make_plan([mentions, blockers])
    tallies = dict(plan.directories)
    assert tallies["."].manual["blocker"] == 1
    assert tallies["."].manual["review"] == 2  # still listed for a person to look at
    assert plan.total.as_dict()["items"] == {"blockers": 1, "advice": 0, "review": 2}
    assert plan.total.effort_points == 5  # the unsupported feature only
    assert "1 root cause need a person" in summary_line([mentions, blockers], 0)
    assert "2 lines to review" in summary_line([mentions, blockers], 0)


def test_a_per_file_rule_is_one_item_in_each_file():
    def variable(line, path_rule="HPU802"):
        return Finding(path_rule, "NCCL_X tunes NCCL", line, 1, line, 9, category="environment", item_scope="per-file")

    script = [variable(3), variable(4), variable(9), finding("HPU602", 4), variable(12, "HPU812")]
    items = file_items("launch.sh", script)
    assert [(item.line, item.codes) for item in items] == [(3, ("HPU802",)), (4, ("HPU602",)), (12, ("HPU812",))]
    assert len(items[0].findings) == 3


def test_the_same_setting_in_many_configs_is_one_item():
    def switch(path):
        return FileResult(path=path, source=b"", findings=[
            Finding("HPU826", "flash_attention: true turns on a CUDA kernel", 4, 1, 4, 9, category="unsupported",
                    item_scope="per-setting"),
            Finding("HPU602", "something else", 9, 1, 9, 9, category="unsupported"),
        ])

    results = [switch("configs/a.yaml"), switch("configs/b.yaml"), switch("configs/c.yaml")]
    plan = make_plan(results)
    assert plan.total.manual["blocker"] == 1 + 3  # one decision for the switch, one item per other finding
    numbers = {(path, f.code): n for path, f, n in numbered_findings(results)}
    assert numbers[("configs/a.yaml", "HPU826")] == numbers[("configs/c.yaml", "HPU826")]
    assert len(set(numbers.values())) == 4


def test_a_vendored_projects_manual_work_is_one_item():
    from hpu_port.planning import vendored_root

    assert vendored_root("inference/dependencies/AutoGPTQ/auto_gptq/qlinear.py") == "inference/dependencies/AutoGPTQ"
    assert vendored_root("third_party/apex/setup.py") == "third_party/apex"
    assert vendored_root("src/model.py") is None and vendored_root("deps/requirements.txt") is None
    vendored = [FileResult(path=f"deps/AutoGPTQ/kernels/{name}.py", source=b"", findings=[finding("HPU602", 3), finding("HPU611", 8)])
                for name in ("a", "b", "c")]
    own = FileResult(path="train.py", source=b"", findings=[finding("HPU602", 3)])
    assert make_plan([*vendored, own]).total.manual["blocker"] == 2


def test_two_settings_in_one_config_are_two_items_each_shared_with_other_configs():
    def switch(message, line):
        return Finding("HPU826", message, line, 1, line, 9, category="unsupported", item_scope="per-setting")

    both = FileResult(path="configs/a.yaml", source=b"", findings=[switch("flash_attention: true", 3), switch("fused_loss: true", 5)])
    one = FileResult(path="configs/b.yaml", source=b"", findings=[switch("flash_attention: true", 7)])
    assert make_plan([both, one]).total.manual["blocker"] == 2
