"""End to end: the bundled CUDA training script, rewritten through the CLI."""

import py_compile
import shutil

from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import REPO

EXAMPLE = REPO / "docs" / "examples" / "train_cuda.py"
EXPECTED = REPO / "tests" / "fixtures" / "train_cuda.expected.py"


def test_training_script_is_ported(tmp_path):
    script = tmp_path / "train.py"
    shutil.copy(EXAMPLE, script)
    runner = CliRunner()
    result = runner.invoke(main, ["rewrite", str(script)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert script.read_text() == EXPECTED.read_text()
    py_compile.compile(str(script), doraise=True)
    # No CUDA API, device string or .cuda() call is left in code.
    code_lines = [line for line in script.read_text().splitlines() if not line.lstrip().startswith("#")]
    leftovers = [line for line in code_lines if "torch.cuda" in line or '"cuda' in line or ".cuda(" in line]
    assert leftovers == []
    # The second run is a no-op.
    again = runner.invoke(main, ["rewrite", "--check", str(script)], catch_exceptions=False)
    assert again.exit_code == 0 and again.stdout == ""


def test_dry_run_of_the_example_shows_every_edit():
    result = CliRunner().invoke(main, ["rewrite", "--dry-run", str(EXAMPLE)], catch_exceptions=False)
    assert result.exit_code == 1
    added = [l for l in result.stdout.splitlines() if l.startswith("+") and not l.startswith("+++")]
    removed = [l for l in result.stdout.splitlines() if l.startswith("-") and not l.startswith("---")]
    assert "+import habana_frameworks.torch.core as htcore" in added
    assert '+    model = Net().to("hpu")' in added
    assert '+        state = torch.load(args.checkpoint, map_location="hpu:0")' in added
    assert added.count("+        htcore.mark_step()") == 2  # after backward and after the optimizer step
    # every other edit replaces a line; one import and two mark_steps are added
    assert len(added) == len(removed) + 3
