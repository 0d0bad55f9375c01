"""SIGINT or SIGTERM in the middle of a run: every file is as it was or fully rewritten."""

import signal
import subprocess
import sys
import time

import pytest

from hpu_port.engine import port_source
from tests.conftest import make_ruleset

FILES = 600


def source(i: int) -> str:
    return f'import torch\n\ndef f{i}(x):\n    torch.cuda.synchronize()\n    return x.to("cuda:{i % 8}")\n'


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_leaves_whole_files(tmp_path, signum):
    ruleset = make_ruleset()
    originals, expected = {}, {}
    for i in range(FILES):
        path = tmp_path / f"m{i:04}.py"
        path.write_text(source(i))
        originals[path] = path.read_bytes()
        expected[path] = port_source(str(path), originals[path], ruleset).new_source
    process = subprocess.Popen(
        [sys.executable, "-m", "hpu_port", "rewrite", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    # Wait until writing has begun, then interrupt in the middle of it.
    while time.monotonic() < deadline and process.poll() is None:
        if any(p.read_bytes() != originals[p] for p in list(originals)[:5]):
            break
        time.sleep(0.01)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode in (0, 130), stderr.decode()
    states = {"unchanged": 0, "rewritten": 0}
    for path, original in originals.items():
        data = path.read_bytes()
        assert data in (original, expected[path]), f"{path.name} is neither original nor fully ported"
        states["unchanged" if data == original else "rewritten"] += 1
    assert states["rewritten"] > 0
    print(f"exit {process.returncode}: {states}")
    leftovers = [p.name for p in tmp_path.iterdir() if p.suffix == ".hpu-port"]
    assert leftovers == []
    if process.returncode == 130:
        assert b"interrupted" in stderr
