"""Optimization advice on a realistic training script, and silence on its optimised version."""

import ast
import json
import shutil

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import REPO

ADVICE = REPO / "tests" / "fixtures" / "advice"
ADVICE_CODES = {
    "HPU701", "HPU702", "HPU703", "HPU705", "HPU706", "HPU707", "HPU708", "HPU709", "HPU710", "HPU711", "HPU712",
    "HPU715", "HPU716", "HPU718",
}
# Lazy mode: the script must run with PT_HPU_LAZY_MODE=1 (not advice).
LAZY_ENTRY_POINT = "HPU205"


@pytest.fixture
def scripts(tmp_path):
    for script in ADVICE.glob("*.py"):
        shutil.copy(script, tmp_path / script.name)
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def check(path, *options):
    result = invoke("check", path, "--format", "json", *options)
    return json.loads(result.stdout)["findings"]


def at(findings, code, path):
    """The source lines a code was reported on."""
    lines = path.read_text().splitlines()
    return [lines[f["line"] - 1].strip() for f in findings if f["code"] == code]


def test_check_gives_every_piece_of_advice_on_the_unoptimised_script(scripts):
    script = scripts / "train_unoptimised.py"
    findings = check(script)
    assert {f["code"] for f in findings} == ADVICE_CODES | {LAZY_ENTRY_POINT}
    assert all(f["category"] == "advice" for f in findings if f["code"] != LAZY_ENTRY_POINT)
    assert at(findings, LAZY_ENTRY_POINT, script) == at(findings, "HPU718", script) == ['if __name__ == "__main__":']
    assert at(findings, "HPU705", script) == ["progress.set_postfix(loss=loss.item())"]
    assert at(findings, "HPU706", script) == ["progress.set_postfix(loss=loss.item())", 'print(f"epoch {epoch} loss {loss}")']
    assert at(findings, "HPU707", script) == ["loss = criterion(logits[keep], labels[keep])"] * 2
    assert at(findings, "HPU708", script) == ["for tokens, mask, labels in progress:"]
    assert at(findings, "HPU711", script) == ['group["lr"] = group["initial_lr"] * factors[i]']
    assert at(findings, "HPU712", script) == ["model.unembed.weight = model.embed.weight"]
    # Once per epoch, after the step loop: not a per-step cost.
    assert not any("torch.save" in line for code in ADVICE_CODES for line in at(findings, code, script))


def test_the_optimised_script_gets_no_advice(scripts):
    assert check(scripts / "train_optimised.py") == []


def test_rewrite_leaves_advice_alone_unless_it_is_selected(scripts):
    script = scripts / "train_unoptimised.py"
    before = script.read_text()
    plain = invoke("rewrite", script)
    assert plain.exit_code == 0 and script.read_text() == before
    assert "HPU7" not in plain.stdout + plain.stderr

    chosen = invoke("rewrite", script, "--extend-select", "HPU701,HPU703,HPU709,HPU710", "--unsafe-fixes")
    assert chosen.exit_code == 0, chosen.stderr
    after = script.read_text()
    ast.parse(after)
    assert "optimizer = FusedAdamW(model.parameters(), lr=args.lr, weight_decay=0.01, eps=1e-8)" in after
    assert "y = FusedSDPA.apply(q, k, v, mask)" in after
    assert "num_workers=4, pin_memory=True, pin_memory_device=\"hpu\")" in after
    assert "model = DDP(model, gradient_as_bucket_view=True)" in after
    again = invoke("rewrite", script, "--extend-select", "HPU701,HPU703,HPU709,HPU710", "--unsafe-fixes", "--check")
    assert again.exit_code == 0 and script.read_text() == after


def test_check_counts_an_advice_fix_only_where_rewrite_would_apply_it(scripts):
    # `rewrite` fixes only the advice named in --select/--extend-select: with
    # the default selection `check` must not call those findings fixable.
    script = scripts / "train_unoptimised.py"
    fixed = {"HPU701", "HPU703", "HPU709", "HPU710"}
    default = check(script, "--unsafe-fixes")
    assert fixed <= {f["code"] for f in default}
    assert not any(f["fixable"] for f in default if f["category"] == "advice")
    named = check(script, "--unsafe-fixes", "--extend-select", ",".join(sorted(fixed)))
    assert {f["code"] for f in named if f["fixable"]} >= fixed


def test_advice_is_listed_as_check_only():
    listing = invoke("rules", "--format", "tsv").stdout.splitlines()
    states = {line.split("\t")[0]: line.split("\t")[4] for line in listing}
    assert {states[code] for code in ADVICE_CODES} == {"check"}
    assert states["HPU704"] == "off" and states["HPU110"] == "on"


def test_requirements_that_would_replace_the_gaudi_builds_are_reported_with_file_and_line(tmp_path):
    (tmp_path / "requirements.txt").write_text(
        "torch==2.1.0  # pinned for CUDA 12\nnumpy\n-r requirements-dev.txt\ntorchvision<0.17  # hpu-port: ignore\nPyTorch_Lightning<2.3\ntorchvision>=0.16\n"
    )
    (tmp_path / "requirements-dev.txt").write_text("pytest\ntorchaudio==2.1.0\ntorch\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "m"\ndependencies = [\n    "torch==2.1.0",\n    "numpy",\n]\n'
        '[project.optional-dependencies]\nvision = ["torchvision<0.17"]\n\n[tool.poetry.dependencies]\nlightning = "==2.2"\n'
    )
    (tmp_path / "setup.py").write_text('from setuptools import setup\n\nsetup(name="m", install_requires=["torch==2.1.0", "tqdm"])\n')
    found = sorted((f["path"].rsplit("/", 1)[-1], f["line"], f["column"]) for f in check(tmp_path) if f["code"] == "HPU713")
    assert found == [
        ("pyproject.toml", 4, 6),
        ("pyproject.toml", 8, 12),
        ("pyproject.toml", 11, 1),
        ("requirements-dev.txt", 2, 1),
        ("requirements.txt", 1, 1),
        ("requirements.txt", 5, 1),
        ("setup.py", 3, 35),
    ]
    # rewrite never changes requirements files, and reports HPU713 (advice) only when selected.
    plain = invoke("rewrite", "--check", tmp_path)
    assert "requirements" not in plain.stdout and "HPU713" not in plain.stderr and plain.exit_code == 0


def test_a_project_that_leaves_torch_to_the_gaudi_stack_is_not_reported(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy>=1.26\ntransformers==4.44.0\ntorchmetrics\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "m"\ndependencies = ["optimum-habana"]\n')
    assert check(tmp_path) == []


def test_advice_informs_check_without_failing_it_unless_selected(scripts):
    optimised_port = scripts / "train_optimised.py"
    unoptimised = scripts / "train_unoptimised.py"
    assert invoke("check", optimised_port).exit_code == 0
    informed = invoke("check", unoptimised, "--ignore", LAZY_ENTRY_POINT)
    assert informed.exit_code == 0 and "HPU705" in informed.stdout
    assert invoke("check", unoptimised, "--ignore", LAZY_ENTRY_POINT, "--extend-select", "HPU705").exit_code == 1
    assert invoke("check", unoptimised, "--select", "HPU7").exit_code == 1
    assert invoke("check", unoptimised, "--ignore", f"HPU7,{LAZY_ENTRY_POINT}").stdout == ""
