"""Why a fix is withheld is data: a typed reason, the evidence and the unit, in every report."""

import csv
import io
import json
import textwrap

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from hpu_port.examples import run_example
from hpu_port.results import KEPT_REASONS
from hpu_port.rules import load_rules
from hpu_port.engine import port_source
from tests.conftest import make_ruleset, port

RULES = load_rules()

NVIDIA_BRANCH = """
import torch
import triton


def run(x):
    if torch.cuda.is_available():
        y = triton_kernel(x)
        torch.cuda.synchronize()
        return y.cuda()
    return x
"""


def held(code, **options):
    return [f for f in port(code, **options).findings if f.kept]


def test_fixes_held_by_a_unit_name_the_unit_its_evidence_and_its_line():
    findings = port(NVIDIA_BRANCH).findings
    unit = next(f for f in findings if f.code == "HPU615")
    inside = [f for f in findings if f.line in (8, 9)]
    assert {f.code for f in inside} == {"HPU101", "HPU111"}
    for finding in inside:
        assert finding.kept_record() == {"reason": "nvidia-only", "evidence": "triton_kernel", "unit_line": unit.line}
        assert "(not rewritten: " in finding.message  # the text reads as before


def test_a_held_unit_is_one_item(tmp_path):
    (tmp_path / "run.py").write_text(NVIDIA_BRANCH.lstrip())
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", str(tmp_path / "run.py")])
    report = json.loads(result.stdout)
    by_line = {}
    for finding in report["findings"]:
        by_line.setdefault(finding["line"], set()).add(finding["item"])
    assert by_line[6] == by_line[8] == by_line[9]  # the unit (line 6) and the changes it holds
    assert report["summary"]["need_a_person"]["blockers"] == 2  # `import triton`, and the unit once
    kept = [f["kept"] for f in report["findings"] if "kept" in f]
    assert {"reason": "nvidia-only", "evidence": "triton_kernel", "unit_line": 6} in kept
    assert all("kept" not in f for f in report["findings"] if f["fixable"])


@pytest.mark.parametrize(
    "code, reason, evidence",
    [
        (
            """
            import torch

            with torch.autocast("xla", dtype=torch.float16):
                y = model(x)
            """,
            "other-device",
            "",
        ),
        (
            """
            import torch

            device = "mps" if torch.backends.mps.is_available() else "cpu"
            torch.cuda.synchronize()
            """,
            "shared-code",
            "",
        ),
        (
            """
            import pytest
            import torch


            @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
            def test_capability():
                assert torch.cuda.get_device_capability()[0] >= 8
            """,
            "skip-guard",
            "test_capability",
        ),
        (
            """
            from torch.cuda import synchronize


            def step(torch):
                synchronize()
            """,
            "name-taken",
            "torch.hpu.synchronize",
        ),
    ],
    ids=["other-device", "shared-code", "skip-guard", "name-taken"],
)
def test_each_kind_of_hold_is_typed(code, reason, evidence):
    found = held(code, fp16_to_bf16=True)
    assert found, "nothing was held"
    assert any(f.kept == reason and f.kept_evidence == evidence for f in found), [f.kept_record() for f in found]


def test_machine_reports_carry_the_reason_and_the_text_does_not_change(tmp_path):
    path = tmp_path / "run.py"
    path.write_text(NVIDIA_BRANCH.lstrip())
    runner = CliRunner()

    def report(fmt):
        return runner.invoke(main, ["check", "--no-cache", "--format", fmt, str(path)]).stdout

    sarif = json.loads(report("sarif"))
    properties = [r["properties"] for r in sarif["runs"][0]["results"]]
    assert {"reason": "nvidia-only", "evidence": "triton_kernel", "unit_line": 6} in [p.get("kept") for p in properties]
    rows = list(csv.DictReader(io.StringIO(report("csv"))))
    assert {(r["line"], r["kept"], r["kept_unit_line"]) for r in rows if r["kept"]} >= {("8", "nvidia-only", "6"), ("9", "nvidia-only", "6")}
    markdown = report("markdown")
    unit_rows = [line for line in markdown.splitlines() if line.startswith("| 6 |")]
    assert len(unit_rows) == 1 and "kept: nvidia-only; changes held on lines 6, 8, 9" in unit_rows[0]
    assert not any(line.startswith(("| 8 |", "| 9 |")) for line in markdown.splitlines())
    assert "kept" not in report("text").replace("kept for NVIDIA", "")


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_every_withheld_fix_has_a_known_reason(rule):
    """Over every rule example: a finding says `not rewritten` exactly when it
    carries a reason, and the reason is one the reports document."""
    for example in rule.examples:
        result = run_example(rule, RULES, example)
        for finding in result.findings:
            says_held = "(not rewritten: " in finding.message
            assert says_held == bool(finding.kept), (rule.code, finding.message, finding.kept)
            if finding.kept:
                assert finding.kept in KEPT_REASONS, finding.kept


def test_every_kind_of_reason_is_documented():
    from tests.conftest import REPO

    page = (REPO / "docs" / "report-formats.md").read_text()
    for reason in KEPT_REASONS:
        assert f"| `{reason}` |" in page, reason


def test_a_kernel_module_is_reported_once_however_many_lines_use_triton():
    code = """
        import triton
        import triton.language as tl


        @triton.jit
        def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
    """
    findings = port(code).findings
    assert [f.code for f in findings] == ["HPU615"]
    assert "findings inside it said here only" in findings[0].message


@pytest.mark.parametrize(
    "decorator, where",
    [("numba.jit(nopython=True)", "numba compiles for the CPU"), ("numba.cuda.jit", "only run on NVIDIA GPUs")],
)
def test_a_kernel_module_says_where_its_compiler_puts_the_kernels(decorator, where):
    """numba's plain jit builds host code: calling it NVIDIA-only would send
    the reader after CUDA the module does not have."""
    code = f"""
import numba
import torch


@{decorator}
def circle_nms(dets, thresh):
    return dets


def move(boxes):
    return torch.from_numpy(circle_nms(boxes, 0.5)).cuda()
"""
    unit = next(f for f in port(code).findings if f.code == "HPU615")
    assert where in unit.message


def test_a_not_on_another_operand_of_a_kept_check_does_not_free_its_body():
    """`if not args.disable_cuda and torch.cuda.is_available():` kept for the
    cuDNN version it reads keeps its device too: a converted body under a
    CUDA check would send NVIDIA machines to "hpu" and Gaudi to the CPU."""
    code = textwrap.dedent("""
        import torch


        def main(args):
            if not args.disable_cuda and torch.cuda.is_available():
                args.device = torch.device("cuda")
                print(torch.backends.cudnn.version())
            else:
                args.device = torch.device("cpu")
    """).lstrip()
    result = port_source("run.py", code.encode(), make_ruleset(), True)
    assert result.new_source is None or b'torch.device("hpu")' not in result.new_source
    assert any(f.code == "HPU110" and f.kept == "nvidia-only" for f in result.findings)


def test_setting_a_cudnn_switch_keeps_no_check_for_nvidia():
    """`cudnn.benchmark = True` does nothing on Gaudi: the check and its device are ported together."""
    code = textwrap.dedent("""
        import torch
        import torch.backends.cudnn as cudnn


        def main(args):
            if not args.disable_cuda and torch.cuda.is_available():
                args.device = torch.device("cuda")
                cudnn.deterministic = True
                cudnn.benchmark = True
            else:
                args.device = torch.device("cpu")
    """).lstrip()
    output = port_source("run.py", code.encode(), make_ruleset(), True).new_source.decode()
    assert "torch.hpu.is_available()" in output and 'torch.device("hpu")' in output
    assert "cudnn.benchmark = True" in output


def test_a_check_that_guards_only_what_does_nothing_on_gaudi_stays_as_it_is():
    code = "import torch\n\n\ndef clear():\n    if torch.cuda.is_available():\n        torch.cuda.empty_cache()\n"
    result = port_source("pool.py", code.encode(), make_ruleset(), True)
    assert result.new_source is None or b"torch.hpu.is_available" not in result.new_source
