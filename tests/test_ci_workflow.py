"""The GitHub Actions workflow in the guide works as printed: its steps, run in
order on a ported project with a baseline, pass; a new CUDA line fails them."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"


def guide_workflow() -> dict:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("### A CI gate in GitHub Actions", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    return yaml.safe_load(block)


def hpu_port_steps(workflow: dict) -> list[str]:
    """The `run:` lines that call hpu-port (the install step is the reader's own)."""
    [job] = workflow["jobs"].values()
    return [step["run"] for step in job["steps"] if "run" in step and step["run"].startswith("hpu-port ")]


def run_step(command: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "hpu_port", *shlex.split(command)[1:], "--no-cache"]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def ported_project(tmp_path):
    shutil.copy(ROOT / "docs" / "examples" / "train_cuda.py", tmp_path / "train.py")
    subprocess.run([sys.executable, "-m", "hpu_port", "rewrite", "--no-cache", "."], cwd=tmp_path, check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "hpu_port", "check", "--no-cache", "--baseline", ".hpu-port-baseline.json",
                    "--write-baseline", "."], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path


def test_the_workflow_is_a_github_actions_job_with_the_gate_steps():
    workflow = guide_workflow()
    [job] = workflow["jobs"].values()
    assert any(step.get("uses", "").startswith("actions/checkout@") for step in job["steps"])
    steps = hpu_port_steps(workflow)
    assert [s.split()[1] for s in steps] == ["rewrite", "check"]
    assert "--baseline" in steps[-1]


def test_the_steps_pass_on_a_ported_tree_with_its_baseline(ported_project):
    for command in hpu_port_steps(guide_workflow()):
        result = run_step(command, ported_project)
        assert result.returncode == 0, (command, result.stdout, result.stderr)


def test_the_steps_fail_on_new_cuda_code_and_annotate_it(ported_project):
    with (ported_project / "train.py").open("a") as handle:
        handle.write('\nextra = torch.ones(1).cuda()\n')
    rewrite_check, gate = (run_step(c, ported_project) for c in hpu_port_steps(guide_workflow()))
    assert rewrite_check.returncode == 1 and "train.py" in rewrite_check.stdout
    assert gate.returncode == 1
    annotations = [line for line in gate.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == 1 and "train.py" in annotations[0]
