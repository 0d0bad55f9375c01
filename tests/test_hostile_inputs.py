"""Hostile inputs: every file within the size limit is ported, or refused with
one line that names it and its problem, in bounded time and memory.

Each input is made here (none is stored), with a CUDA touchpoint where its
format has room for one: deep nesting of every kind, long lines, many
comments, many continued lines, alias-heavy YAML, a notebook with a huge
output. Each goes through the real command line in a process of its own,
killed past a budget of time and of address space; its peak memory is read
when it ends. Before these bounds held, some took minutes or gigabytes (a
Python file of 10,000 nested brackets, 10,000 nested JSON arrays, YAML with
thousands of comments, a Dockerfile of continued lines).
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpu_port.engine import port_bytes
from tests.conftest import REPO, make_ruleset

resource = pytest.importorskip("resource")  # POSIX: limits and peak memory of a process

BUDGET_SECONDS = 60
# Past this the process is stopped (a machine's safety, not the bound tested).
ADDRESS_SPACE = 4 * 2**30
# The bound tested: the largest input here needs well under half of it.
PEAK_MEMORY = 2**30
MB = 2**20

PORTED = "ported"
# A refused file's one line: "<path>: error: " and then what it starts with.
PYTHON_LIMIT = "nested too deeply for the Python parser"
LIBCST_LIMIT = "nested too deeply for libcst, the parser hpu-port uses: an expression"
TOO_DEEP = "nested too deeply (more than 128 levels)"  # JSON and YAML
PARENTHESES = f"{PYTHON_LIMIT}: too many nested parentheses at line 3"
INDENTATION = f"{PYTHON_LIMIT}: too many levels of indentation at line 103"

CUDA_PY = 'import torch\nx = torch.zeros(2, device="cuda")\n'
CUDA_SH = "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0\n"
CUDA_IMAGE = "FROM nvidia/cuda:12.1-runtime\n"
CUDA_YAML = "env:\n  CUDA_VISIBLE_DEVICES: '0'\n"
CUDA_TOML = '[project]\nname = "x"\ndependencies = ["nvidia-cudnn-cu12"]\n[tool.x]\n'
CUDA_TOML_CONFIG = '[comm]\ndist_backend = "nccl"\n'  # a job config
CMAKE = "# hpu-port: ignore[HPU101]\nfind_package(CUDA)\n"
CUDA_SOURCE = "// hpu-port: ignore[HPU101]\ncudaMalloc(&p, 4);\n"
CI_STEP = "jobs:\n  a:\n    steps:\n      - run: "
CUDA_JSON = '{"train_micro_batch_size_per_gpu": 4, "comm_backend_name": "nccl", '  # a DeepSpeed config


def nested(opening: str, inner: str, closing: str, depth: int) -> str:
    return opening * depth + inner + closing * depth


def staircase(line: str, depth: int, last: str) -> str:
    """``line`` indented one more space each time, ``depth`` times, then ``last``."""
    return "".join(" " * n + line.format(n=n) + "\n" for n in range(depth)) + " " * depth + last + "\n"


def notebook(*cells: dict) -> str:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def code_cell(source: str, outputs: tuple = ()) -> dict:
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": list(outputs), "source": source}


def billion_laughs(levels: int) -> str:
    """Each alias list names the one before it nine times: expanded, 9**levels items."""
    lines = ["a0: &a0 [cuda, cuda, cuda, cuda, cuda, cuda, cuda, cuda, cuda]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, levels)]
    return CUDA_YAML + "\n".join(lines) + "\n"


# name -> (what the file holds, PORTED or how its refusal starts). Each takes
# a second or two: run every time.
FAST = {
    # Python: past the standard parser's limits, or too deep for libcst.
    "brackets.py": (CUDA_PY + "y = " + nested("(", "1", ")", 10_000) + "\n", PARENTHESES),
    "mixed_brackets.py": (CUDA_PY + "y = " + nested("[{(", "1", ")}]", 3_000) + "\n", PARENTHESES),
    "nested_ifs.py": (CUDA_PY + staircase("if x:", 150, "pass"), INDENTATION),
    "nested_defs.py": (CUDA_PY + staircase("def f{n}():", 1_000, "pass"), INDENTATION),
    # Python 3.9 stops at the first error, and leaves the brackets to hpu-port's own count.
    "syntax_error_and_brackets.py": (CUDA_PY + 'print "x"\ny = ' + nested("(", "1", ")", 10_000) + "\n", PYTHON_LIMIT),
    "chained_calls.py": (CUDA_PY + "y = x" + ".cuda()" * 5_000 + "\n", LIBCST_LIMIT),
    "chained_operators.py": (CUDA_PY + "y = " + " + ".join(["a"] * 20_000) + "\n", LIBCST_LIMIT),
    "unary_operators.py": (CUDA_PY + "y = " + "-" * 20_000 + "1\n", PYTHON_LIMIT),
    "nested_lambdas.py": (CUDA_PY + "y = " + "lambda: " * 5_000 + "1\n", PYTHON_LIMIT),
    "many_deep_expressions.py": (
        CUDA_PY + ("y = " + " + ".join(["a"] * 1_500) + "\n") * 10,
        "too many deeply nested expressions for libcst, the parser hpu-port uses, to read in reasonable time",
    ),
    "continued_operators.py": (CUDA_PY + "y = 1 \\\n" + "  + 1 \\\n" * 5_000 + "  + 1\n", LIBCST_LIMIT),
    # Python within every limit.
    "nested_ifs_99.py": (CUDA_PY + staircase("if x:", 99, "y = x.cuda()"), PORTED),
    "brackets_150.py": (CUDA_PY + "y = " + nested("(", "x.cuda()", ")", 150) + "\n", PORTED),
    "calls_on_one_line.py": (CUDA_PY + "; ".join(["x.cuda()"] * 2_000) + "\n", PORTED),
    "continued_arguments.py": (CUDA_PY + "y = f(x, \\\n" + "  x, \\\n" * 5_000 + "  x)\n", PORTED),
    # YAML
    "flow_mappings.yaml": (CUDA_YAML + "x: " + nested("{a: ", "1", "}", 5_000) + "\n", f"cannot parse as YAML: line 3: {TOO_DEEP}"),
    "flow_sequences.yaml": (CUDA_YAML + "x: " + nested("[", "", "]", 10_000) + "\n", f"cannot parse as YAML: line 3: {TOO_DEEP}"),
    "block_mappings.yaml": (CUDA_YAML + staircase("a:", 1_000, "b: 1"), f"cannot parse as YAML: line 130: {TOO_DEEP}"),
    "block_sequences.yaml": (CUDA_YAML + "x:\n" + "- " * 5_000 + "1\n", f"cannot parse as YAML: line 4: {TOO_DEEP}"),
    "aliases.yaml": (billion_laughs(30), PORTED),
    "commented_keys.yaml": ("image: nvidia/cuda:12.1-runtime\n" + "".join(f"k{n}: v  # cuda\n" for n in range(8_000)), PORTED),
    # JSON
    "arrays.json": (CUDA_JSON + '"x": ' + nested("[", "", "]", 10_000) + "}\n", f"cannot parse as JSON: line 1: {TOO_DEEP}"),
    "objects.json": (CUDA_JSON + '"x": ' + nested('{"a": ', "1", "}", 10_000) + "}\n", f"cannot parse as JSON: line 1: {TOO_DEEP}"),
    # TOML configs
    "nested_arrays.toml": (CUDA_TOML_CONFIG + "y = " + nested("[", "", "]", 10_000) + "\n", f"cannot parse as TOML: line 3: {TOO_DEEP}"),
    "nested_tables.toml": (CUDA_TOML_CONFIG + "y = " + nested("{a = ", "1", "}", 10_000) + "\n", f"cannot parse as TOML: line 3: {TOO_DEEP}"),
    "escaped_quotes.toml": (CUDA_TOML_CONFIG + 'x = "' + '\\"' * 100_000 + '"\n', PORTED),
    "open_multiline.toml": (CUDA_TOML_CONFIG + 'x = """' + '\\"""' * 50_000 + '"""\n', PORTED),
    # Makefiles
    "blanks/Makefile": ("train:\n\tnvidia-smi\nX = a" + " " * 200_000 + "b\n", PORTED),
    # Shell
    "substitutions.sh": (CUDA_SH + "x=" + nested("$(echo ", "1", ")", 3_000) + "\n", PORTED),
    "quoted_substitutions.sh": (CUDA_SH + "x=" + nested('"$(echo ', "1", ')"', 2_000) + "\n", PORTED),
    "command_chain.sh": (CUDA_SH + " && ".join(["nvidia-smi"] * 3_000) + "\n", PORTED),
    "arithmetic.sh": (CUDA_SH + "x=" + nested("$(( ", "1", " ))", 3_000) + "\n", PORTED),
    # Dockerfiles
    "continued.Dockerfile": (CUDA_IMAGE + "RUN a \\\n" * 2_700 + "  && nvidia-smi\n", PORTED),
    "command_chain.Dockerfile": (CUDA_IMAGE + "RUN true \\\n" + "  && nvidia-smi \\\n" * 1_400 + "  && true\n", PORTED),
    "escaped_quotes.Dockerfile": ("# hpu-port: ignore[HPU101]\n" + CUDA_IMAGE + "RUN echo " + '\\"' * 100_000 + "\n", PORTED),
    "quoted_flag.Dockerfile": (CUDA_IMAGE + "RUN --mount=" + '"' * 60 + "\nRUN nvidia-smi\n", PORTED),
    # CMake and CUDA sources: brackets and comments left open (their comments
    # are read for the suppression comment on the first line).
    "open_brackets/CMakeLists.txt": (CMAKE + "#[[\n" * 20_000, PORTED),
    "open_arguments/CMakeLists.txt": (CMAKE + "set(X [[\n" * 20_000, PORTED),
    "open_comments.cu": (CUDA_SOURCE + "/*\n" * 20_000, PORTED),
    "open_raw_strings.cu": (CUDA_SOURCE + 'R"(\n' * 20_000, PORTED),
    # Notebooks
    "huge_output.ipynb": (
        notebook(
            code_cell("print(1)", ({"output_type": "stream", "name": "stdout", "text": "y" * (3 * MB)},)),
            code_cell(CUDA_PY),
        ),
        PORTED,
    ),
}

# Large inputs: seconds each.
SLOW = {
    "long_string.py": (CUDA_PY + 'y = "' + "c" * MB + '"\n', PORTED),
    "long_list.py": (CUDA_PY + "y = [" + '"cuda", ' * 10_000 + "]\n", PORTED),
    "comments.py": (CUDA_PY + "# a comment about cuda\n" * 150_000, PORTED),
    "ignore_comments.py": (CUDA_PY + "x.cuda()  # hpu-port: ignore[HPU101]\n" * 8_000, PORTED),
    "every_other_line.py": (CUDA_PY + "".join(f"a{n} = 1\nx.cuda()\n" for n in range(5_000)), PORTED),
    "old_mac_line_ends.py": ((CUDA_PY + f"a = x.cuda()  # {'x' * 3_000}\n" * 300).replace("\n", "\r"), PORTED),
    "comment_lines.yaml": (CUDA_YAML + "# a comment about cuda\n" * 150_000, PORTED),
    "long_line.yaml": (CUDA_YAML + "x: " + "cuda " * (MB // 5) + "\n", PORTED),
    "many_keys.yaml": (CUDA_YAML + "".join(f"key{n}: cuda\n" for n in range(50_000)), PORTED),
    "continued_script.yml": (CI_STEP + "|\n" + "          echo cuda \\\n" * 20_000 + "          done\n          nvidia-smi\n", PORTED),
    "open_expressions.yml": (CI_STEP + "nvidia-smi " + "${{ " * 100_000 + "\n", PORTED),
    "long_string.json": (CUDA_JSON + '"x": "' + "c" * (3 * MB) + '"}\n', PORTED),
    "many_keys.toml": (CUDA_TOML_CONFIG + "".join(f'k{n} = "cuda"\n' for n in range(100_000)), PORTED),
    "long_string.toml": (CUDA_TOML_CONFIG + 'x = "' + "c" * (3 * MB) + '"\n', PORTED),
    "many_keys.json": (CUDA_JSON + ", ".join(f'"k{n}": "cuda"' for n in range(100_000)) + "}\n", PORTED),
    "continued.sh": (CUDA_SH + "echo \\\n" + "  a \\\n" * 100_000 + "  b\n", PORTED),
    "comments.sh": (CUDA_SH + "# a comment about cuda\n" * 150_000, PORTED),
    "long_line.sh": (CUDA_SH + "echo " + "cuda " * (MB // 5) + "\n", PORTED),
    "many_commands.sh": (CUDA_SH + "nvidia-smi\n" * 50_000, PORTED),
    "nested_ifs.sh": (CUDA_SH + "if true; then\n" * 3_000 + "nvidia-smi\n" + "fi\n" * 3_000, PORTED),
    "continued_long.Dockerfile": (CUDA_IMAGE + "RUN a \\\n" * 100_000 + "  && nvidia-smi\n", PORTED),
    "comments_in_run.Dockerfile": (CUDA_IMAGE + "RUN a \\\n" + "# a comment\n" * 100_000 + "  && nvidia-smi\n", PORTED),
    "many_runs.Dockerfile": (CUDA_IMAGE + "RUN nvidia-smi\n" * 50_000, PORTED),
    "here_documents.Dockerfile": (CUDA_IMAGE + "RUN <<EOF\nnvidia-smi\nEOF\n" * 20_000, PORTED),
    "long_line.Dockerfile": (CUDA_IMAGE + "RUN echo " + "cuda " * (MB // 5) + "\n", PORTED),
    "long_env.Dockerfile": (CUDA_IMAGE + "ENV X=" + "c" * MB + " CUDA_VISIBLE_DEVICES=0\n", PORTED),
    "comments/CMakeLists.txt": (CMAKE + "# a comment about cuda\n" * 150_000, PORTED),
    "calls_and_comments/CMakeLists.txt": (CMAKE + "find_package(CUDA)\n# a comment\n" * 50_000, PORTED),
    "calls_and_comments.cu": (CUDA_SOURCE + "cudaMalloc(&p, 4); // cudaFree\n" * 50_000, PORTED),
    "escaped_quotes.cu": (CUDA_SOURCE + 'x = "' + '\\"' * 500_000 + "\n", PORTED),
    "requirements.txt": ("torch\n" + "nvidia-cudnn-cu12\n" * 50_000, PORTED),
    "continued/requirements.txt": ("torch \\\n" * 100_000 + "\nnvidia-cudnn-cu12\n", PORTED),
    "nested_arrays/pyproject.toml": (CUDA_TOML + "y = " + nested("[", "", "]", 10_000) + "\n", PORTED),
    "long_string/pyproject.toml": (CUDA_TOML + 'y = "' + "c" * MB + '"\n', PORTED),
    "many_shell_lines.ipynb": (notebook(code_cell("!echo cuda\n" * 20_000 + "!nvidia-smi\n")), PORTED),
}


@dataclass
class Run:
    returncode: int
    output: str
    peak_bytes: int


def run_rewrite(path: Path) -> Run:
    """`hpu-port rewrite path` in a process of its own, within the budgets."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "hpu_port", "rewrite", "--no-cache", "-j", "1", str(path)]
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, cwd=path.parent, env=environment, preexec_fn=_limit_address_space
        )
        killer = threading.Timer(BUDGET_SECONDS, process.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        output.seek(0)
        text = output.read().decode("utf-8", "replace")
    return Run(process.returncode, text, usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024))


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def check(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    run = run_rewrite(path)
    assert run.returncode not in (-9, -15), f"{name}: killed past {BUDGET_SECONDS} s or {ADDRESS_SPACE >> 30} GiB"
    assert run.returncode in (0, 1, 2), f"{name}: exit {run.returncode}\n{run.output[-3000:]}"
    assert "Traceback" not in run.output and "internal error" not in run.output, run.output[-3000:]
    assert run.peak_bytes <= PEAK_MEMORY, f"{name}: {run.peak_bytes / MB:.0f} MiB at the peak"
    errors = [line for line in run.output.splitlines() if line.startswith(f"{path}: error: ")]
    if expected != PORTED:
        assert run.returncode == 2 and len(errors) == 1, run.output[-3000:]
        assert errors[0].startswith(f"{path}: error: {expected}"), errors[0]
        assert path.read_bytes() == data
    else:
        assert not errors, errors
        named = any(line.startswith(f"{path}:") for line in run.output.splitlines())
        assert named or path.read_bytes() != data, f"{name}: neither ported nor named\n{run.output[-3000:]}"


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("name", sorted(FAST))
def test_hostile_input_is_ported_or_refused_in_bounded_time_and_memory(tmp_path, name):
    check(tmp_path, name, *FAST[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_large_hostile_input_is_ported_in_bounded_time_and_memory(tmp_path, name):
    check(tmp_path, name, *SLOW[name])



def test_deep_code_that_check_never_parses_is_no_error_there(tmp_path):
    # The deep expression is in a function no rule acts on: `check` stubs it
    # out before the full parser reads the file; `rewrite` prints the whole
    # file back, so it must parse it all and says why it cannot.
    deep = "def table():\n    return " + " + ".join(["a"] * 3_000) + "\n"
    source = (CUDA_PY + deep).encode()
    checked = port_bytes("deep.py", source, make_ruleset(), apply=False)
    assert checked.error is None
    assert "HPU110" in {f.code for f in checked.findings}  # the `"cuda"` device
    rewritten = port_bytes("deep.py", source, make_ruleset(), apply=True)
    assert rewritten.error is not None and rewritten.error.startswith(LIBCST_LIMIT)
