"""Whole scripts beyond torch.cuda renames: DDP + AMP, DeepSpeed, Lightning (issue-level checks)."""

import io
import re
import shutil
import tokenize

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
LEFTOVER = re.compile(r"torch\.cuda|[\"']nccl[\"']|\bfloat16\b|\bhalf\b|\bfp16\b|precision=16|\.cuda\(")


def code_lines(text: str) -> dict:
    """Line number -> the code on it, without comments and docstring-like strings."""
    lines: dict = {}
    previous = None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            if token.type == tokenize.NEWLINE:
                previous = None
            continue
        if token.type == tokenize.STRING and previous is None:
            continue  # a bare string statement: documentation
        previous = token
        for number in range(token.start[0], token.end[0] + 1):
            lines[number] = lines.get(number, "") + " " + token.string
    return lines


def port(tmp_path, name, *options):
    script = tmp_path / name
    shutil.copy(FIXTURES / name, script)
    runner = CliRunner()
    result = runner.invoke(main, ["rewrite", "--fp16-to-bf16", *options, str(script)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    compile(script.read_text(), str(script), "exec")
    again = runner.invoke(main, ["rewrite", "--check", "--fp16-to-bf16", *options, str(script)], catch_exceptions=False)
    assert again.exit_code == 0, again.stdout
    check = runner.invoke(main, ["check", "--fp16-to-bf16", *options, str(script)], catch_exceptions=False)
    return script.read_text(), check.stdout


@pytest.mark.parametrize("name", ["ddp_amp_cuda.py", "deepspeed_cuda.py", "lightning_cuda.py"])
def test_nothing_cuda_nccl_or_fp16_is_left_unreported(tmp_path, name):
    text, report = port(tmp_path, name)
    reported_lines = {int(line.split(":")[1]) for line in report.splitlines() if line.startswith(str(tmp_path))}
    silent = [
        f"{number}: {code.strip()}"
        for number, code in code_lines(text).items()
        if LEFTOVER.search(code) and number not in reported_lines
    ]
    assert silent == [], "CUDA, NCCL or fp16 left without a finding"


def test_ddp_amp_script(tmp_path):
    text, report = port(tmp_path, "ddp_amp_cuda.py")
    assert "import habana_frameworks.torch.distributed.hccl" in text
    assert 'dist.init_process_group(backend="hccl")' in text
    assert 'choices=["hccl", "gloo"]' in text
    assert "torch.hpu.set_device(local_rank)" in text
    assert 'torch.device("hpu:0")' in text
    assert "DDP(model)" in text and "dist.barrier()" in text
    assert "scaler = torch.amp.GradScaler(enabled=False)" in text
    assert 'with torch.autocast(device_type="hpu", dtype=torch.bfloat16):' in text
    assert 'model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to("hpu")' in text
    lines = text.splitlines()
    after = lambda needle: lines[next(i for i, l in enumerate(lines) if needle in l) + 1].strip()
    assert after("scaler.scale(loss).backward()") == "htcore.mark_step()"
    assert after("scaler.step(optimizer)") == "htcore.mark_step()"
    assert after("scheduler.step()") != "htcore.mark_step()"
    assert "from torch.cuda.amp import" not in text
    # Remaining risks are reported for a person.
    assert "HPU304" in report  # get_scale() now reads 1.0
    assert "HPU407" in report  # NCCL_DEBUG has no effect


def test_deepspeed_script(tmp_path):
    text, report = port(tmp_path, "deepspeed_cuda.py")
    assert 'deepspeed.init_distributed(dist_backend="hccl")' in text
    assert "model = nn.Linear(128, 128).to(torch.bfloat16)" in text
    assert 'batch = torch.randn(32, 128, device="hpu", dtype=torch.bfloat16)' in text
    lines = [l.strip() for l in text.splitlines()]
    assert lines[lines.index("model_engine.backward(loss)") + 1] == "htcore.mark_step()"
    assert lines[lines.index("model_engine.step()") + 1] == "htcore.mark_step()"
    assert lines[lines.index("lr_scheduler.step()") + 1] != "htcore.mark_step()"


def test_lightning_script(tmp_path):
    text, report = port(tmp_path, "lightning_cuda.py")
    assert 'pl.Trainer(accelerator="hpu", devices=2, strategy="ddp", precision="bf16-mixed", max_epochs=2)' in text
    assert "torch.hpu.memory_allocated()" in text and "torch.hpu.manual_seed_all(0)" in text


def test_without_the_option_fp16_is_reported_not_changed(tmp_path):
    script = tmp_path / "ddp.py"
    shutil.copy(FIXTURES / "ddp_amp_cuda.py", script)
    runner = CliRunner()
    runner.invoke(main, ["rewrite", str(script)], catch_exceptions=False)
    text = script.read_text()
    assert "dtype=torch.float16" in text
    report = runner.invoke(main, ["check", str(script)], catch_exceptions=False).stdout
    [finding] = [line for line in report.splitlines() if "HPU310" in line]
    assert "--fp16-to-bf16" in finding
