"""Deeply nested code ports: files go through a thread with a deep stack and a
raised recursion limit, and going deeper still ends in an error, not a crash."""

import signal
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from hpu_port import deep_stack
from hpu_port.cli import main
from tests.conftest import native_recursion_is_capped


def depth_of(n: int) -> int:
    return 0 if n == 0 else 1 + depth_of(n - 1)


def test_a_call_gets_more_depth_than_a_thread_has_and_leaves_the_settings_as_they_were():
    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    depth = 4 * limit
    with pytest.raises(RecursionError):
        depth_of(depth)
    assert deep_stack.call(depth_of, depth) == depth
    assert (sys.getrecursionlimit(), threading.stack_size()) == (limit, stack)


def test_exceptions_come_back_and_calls_nest():
    def fail():
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        deep_stack.call(fail)
    assert deep_stack.call(deep_stack.call, depth_of, 5) == 5
    assert deep_stack.call(threading.current_thread) is not threading.current_thread()


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="no POSIX signal masks on this system")
def test_interrupts_are_left_to_the_main_thread():
    # The main thread defers SIGINT and SIGTERM while it writes a file; the
    # deep-stack thread must not take them meanwhile.
    blocked = deep_stack.call(signal.pthread_sigmask, signal.SIG_BLOCK, [])
    assert {signal.SIGINT, signal.SIGTERM} <= blocked
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_where_no_large_stack_can_be_had_the_caller_runs_the_function(monkeypatch):
    monkeypatch.setattr(deep_stack, "STACK_SIZES", (1,))  # no system accepts this size
    monkeypatch.setattr(deep_stack, "_worker", None)
    monkeypatch.setattr(deep_stack, "_unavailable", False)
    assert deep_stack.call(threading.current_thread) is threading.current_thread()
    assert deep_stack.call(depth_of, 10) == 10


# Endless recursion, through native calls (map) that use the most stack per
# frame: the recursion limit must stop it before the stack runs out.
ENDLESS = """
import sys
from hpu_port import deep_stack

def down(n):
    return list(map(down, [n + 1]))

try:
    deep_stack.call(down, 0)
except RecursionError:
    print("stopped")
"""


def test_endless_recursion_is_an_error_not_a_crash():
    done = subprocess.run([sys.executable, "-c", ENDLESS], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (0, "stopped\n"), done.stderr


def concatenated_strings(count: int) -> str:
    parts = "".join(f'    "part {n} "\n' for n in range(count))
    return f"TEXT = {{\n  'key': (\n{parts}  ),\n}}\n"


DEEP_FILES = {
    "concatenated-strings": concatenated_strings(2500) + "import torch\ntorch.cuda.synchronize()\n",
    "chain-of-operators": "import torch\ntotal = " + " + ".join(f"x{n}" for n in range(1500)) + "\ntorch.cuda.synchronize()\n",
}


@pytest.mark.parametrize("name", sorted(DEEP_FILES))
def test_deeply_nested_code_ports(tmp_path, name):
    path = tmp_path / "deep.py"
    path.write_text(DEEP_FILES[name])
    result = CliRunner().invoke(main, ["rewrite", str(path)], catch_exceptions=False)
    if native_recursion_is_capped():  # this Python cannot go that deep
        assert result.exit_code == 2
        assert f"{path}: error: too deeply nested to process" in result.stderr
        assert path.read_text() == DEEP_FILES[name]
    else:
        assert result.exit_code == 0, result.stderr
        assert path.read_text().endswith("torch.hpu.synchronize()\n")


def test_valid_python_libcst_cannot_read_is_named_with_libcsts_reason(tmp_path):
    path = tmp_path / "many.py"  # libcst reads at most 3000 concatenated strings
    path.write_text("import torch\ntorch.cuda.synchronize()\n" + concatenated_strings(3100))
    compile(path.read_text(), str(path), "exec")  # Python reads it
    result = CliRunner().invoke(main, ["rewrite", str(path)], catch_exceptions=False)
    assert result.exit_code == 2
    [line] = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert line.startswith(f"{path}: error: valid Python that libcst, the parser hpu-port uses, cannot read: line ")
    assert "expected one of STRING" in line
