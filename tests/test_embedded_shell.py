"""Shell inside other files: notebook `!` lines and cells, CI scripts, Dockerfile here-documents; and shell gaps."""

import json

import pytest

from hpu_port.engine import port_bytes
from hpu_port.formats import parse
from hpu_port.model import Options
from hpu_port.rules import load_rules
from hpu_port.settings import RuleSet

RULES = load_rules()


def ruleset(**options):
    chosen = [r for r in RULES if r.default]
    return RuleSet(chosen, Options(**{"unsafe_fixes": True, "fp16_to_bf16": True, **options}))


def notebook(*sources, indent=1):
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s} for s in sources]
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(data, indent=indent, ensure_ascii=False) + "\n").encode()


def codes_at(result):
    return sorted((f.cell, f.line, f.column, f.code) for f in result.findings)


def test_notebook_shell_lines_are_ported_in_place_and_a_second_run_changes_nothing():
    source = notebook(
        ["import os\n", "!nvidia-smi\n", "for i in range(2):\n", "    !nvidia-smi\n", "gpus = !nvidia-smi -L"],
        ["%%bash\n", "nvidia-smi\n", "echo done\n"],
    )
    result = port_bytes("nb.ipynb", source, ruleset(), True)
    assert codes_at(result) == [(1, 2, 2, "HPU805"), (1, 4, 6, "HPU805"), (1, 5, 9, "HPU805"), (2, 2, 1, "HPU805")]
    # Only the changed source lines differ; `gpus = !nvidia-smi -L` reads the output and is kept.
    expected = source.replace(b'"!nvidia-smi\\n"', b'"!hl-smi\\n"').replace(b'"    !nvidia-smi\\n"', b'"    !hl-smi\\n"')
    expected = expected.replace(b'"nvidia-smi\\n",\n    "echo done', b'"hl-smi\\n",\n    "echo done')
    assert result.new_source == expected
    assert port_bytes("nb.ipynb", result.new_source, ruleset(), True).new_source is None


def test_notebook_env_magics_are_assignments_or_reads():
    source = notebook(["%env CUDA_VISIBLE_DEVICES=0,1\n", "%set_env NCCL_DEBUG INFO\n", "x = 1"])
    result = port_bytes("nb.ipynb", source, ruleset(), True)
    assert codes_at(result) == [(1, 1, 6, "HPU801"), (1, 2, 10, "HPU802")]
    assert b'"%env HABANA_VISIBLE_MODULES=0,1\\n"' in result.new_source
    read = port_bytes("nb.ipynb", notebook(["%env CUDA_VISIBLE_DEVICES\n", "!CUDA_VISIBLE_DEVICES=0 python t.py"]), ruleset(), True)
    assert [f.code for f in read.findings] == ["HPU811", "HPU801"]
    assert read.new_source is None  # the notebook reads the variable: the assignment is not renamed


def test_python_cell_magics_are_ported_and_other_cell_magics_are_reported():
    source = notebook(
        ["%%time\n", "import torch\n", "torch.cuda.synchronize()"],
        ["%%writefile run.sh\n", "nvidia-smi\n"],
        ["%%html\n", "<b>plain</b>\n"],
        ["%timeit torch.cuda.synchronize()"],
    )
    result = port_bytes("nb.ipynb", source, ruleset(), True)
    by_code = [(f.cell, f.line, f.code) for f in result.findings if f.code != "HPU001"]
    assert (1, 3, "HPU101") in by_code
    assert [(c, line) for c, line, code in by_code if code == "HPU870"] == [(4, 1)]
    assert (2, 2, "HPU805") in by_code  # the script a `%%writefile run.sh` cell writes
    assert b'"torch.hpu.synchronize()"' in result.new_source and b'"%%time\\n"' in result.new_source


def test_suppression_comment_on_a_shell_line():
    source = notebook(["!nvidia-smi  # hpu-port: ignore[HPU805]\n", "!nvidia-smi"])
    result = port_bytes("nb.ipynb", source, ruleset(), True)
    assert codes_at(result) == [(1, 2, 2, "HPU805")]


GITHUB = """\
jobs:
  test:
    runs-on: [self-hosted]
    steps:
      - run: nvidia-smi
      - name: train
        run: |
          export CUDA_VISIBLE_DEVICES=0,1   # two cards
          deepspeed run_clm.py --output_dir ${{ env.OUT }} \\
            --fp16 --deepspeed ds.json
      - run: >
          nvidia-smi
          && echo folded
      - shell: pwsh
        run: nvidia-smi
"""


def test_github_actions_run_blocks_are_shell_with_exact_spans():
    result = port_bytes(".github/workflows/ci.yml", GITHUB.encode(), ruleset(), True)
    found = [(f.line, f.column, f.code, f.applied) for f in result.findings]
    assert found == [
        (5, 14, "HPU805", True),
        (8, 18, "HPU801", True),
        (10, 13, "HPU807", True),
        (11, 14, "HPU805", False),  # a folded scalar: reported at its start, never edited
        (15, 14, "HPU870", False),  # a PowerShell step is not read
    ]
    expected = GITHUB.replace("run: nvidia-smi\n      - name", "run: hl-smi\n      - name")
    expected = expected.replace("export CUDA_VISIBLE_DEVICES", "export HABANA_VISIBLE_MODULES").replace("--fp16", "--bf16")
    assert result.new_source.decode() == expected
    assert port_bytes(".github/workflows/ci.yml", result.new_source, ruleset(), True).new_source is None


def test_gitlab_scripts_and_an_unparseable_script():
    source = b"stages: [test]\ntest:\n  script:\n    - nvidia-smi\n    - 'if then fi cuda'\n"
    result = port_bytes(".gitlab-ci.yml", source, ruleset(), True)
    assert [(f.line, f.code) for f in result.findings] == [(4, "HPU805"), (5, "HPU870")]
    assert result.new_source == source.replace(b"- nvidia-smi", b"- hl-smi")
    # A `script:` key outside a CI file is not a script.
    assert port_bytes("config.yaml", b"script:\n  - nvidia-smi\n", ruleset(), True).findings == []


DOCKERFILE = """\
FROM ubuntu:22.04
RUN --mount=type=cache,target=/root/.cache nvidia-smi
RUN <<EOF
set -e
nvidia-smi
EOF
RUN python3 <<EOF
nvidia_smi = "not a command"
EOF
RUN ["bash", "-c", "nvidia-smi && echo \\"ok\\""]
RUN ["nvidia-smi"]
"""


def test_dockerfile_heredocs_run_flags_and_exec_forms():
    result = port_bytes("Dockerfile", DOCKERFILE.encode(), ruleset(), True)
    found = [(f.line, f.code, f.applied) for f in result.findings]
    assert found == [(2, "HPU805", True), (5, "HPU805", True), (10, "HPU805", False), (11, "HPU805", False)]
    assert result.new_source.decode() == DOCKERFILE.replace("cache nvidia-smi", "cache hl-smi").replace("set -e\nnvidia-smi", "set -e\nhl-smi")


def test_dockerfile_escape_directive_and_other_shells_are_not_read_as_bash():
    windows = b"# escape=`\nFROM mcr.microsoft.com/windows/servercore\nRUN nvidia-smi.exe `\n    -L\n"
    assert [f.code for f in port_bytes("Dockerfile", windows, ruleset(), True).findings] == ["HPU870"]
    pwsh = b'FROM x\nSHELL ["powershell", "-Command"]\nRUN nvidia-smi\n'
    assert [f.code for f in port_bytes("Dockerfile", pwsh, ruleset(), True).findings] == ["HPU870"]
    document = parse("dockerfile", "# escape=`\nFROM x\nENV A=1 `\n    CUDA_HOME=/usr/local/cuda\n")
    assert [a.name.value for a in document.assignments()] == ["A", "CUDA_HOME"]


def test_env_prefix_arrays_and_reads():
    source = b"""env -u X CUDA_VISIBLE_DEVICES=0 python t.py
ARGS=(--output_dir out --fp16)
python run.py "${ARGS[@]}"
N=$(echo ${NVIDIA_VISIBLE_DEVICES:-all} | wc -l)
"""
    result = port_bytes("run.sh", source, ruleset(), True)
    assert [(f.line, f.code) for f in result.findings] == [(1, "HPU801"), (2, "HPU807"), (4, "HPU811")]
    assert result.new_source == source.replace(b"CUDA_VISIBLE_DEVICES=0", b"HABANA_VISIBLE_MODULES=0").replace(b"--fp16", b"--bf16")


def test_dockerfile_run_continuations_are_read_as_docker_hands_them_to_the_shell():
    source = "FROM x\nRUN pip install \\\n    # a comment line, dropped by Docker\n    timm \\  \n  && nvidia-smi\n"
    result = port_bytes("Dockerfile", source.encode(), ruleset(), True)
    assert [(f.line, f.code, f.applied) for f in result.findings] == [(5, "HPU805", True)]
    assert result.new_source.decode() == source.replace("&& nvidia-smi", "&& hl-smi")


def test_packages_named_by_install_commands_are_requirements():
    script = parse("shell", "sudo python3 -m pip install -U --index-url https://x/simple -r req.txt bitsandbytes 'torch>=2' .[dev]\n")
    assert [w.value for w in script.requirements()] == ["bitsandbytes", "torch>=2"]
    conda = parse("shell", "conda install -y -c pytorch -n env pytorch-cuda=12.1\n")
    assert [w.value for w in conda.requirements()] == ["pytorch-cuda=12.1"]
    result = port_bytes("nb.ipynb", notebook(["!pip install -q flash-attn\n", "%pip install torch==2.4.0"]), ruleset(), True)
    assert [(f.line, f.code) for f in result.findings] == [(1, "HPU850"), (2, "HPU713")]


def test_a_script_that_looks_for_nvidia_smi_keeps_it():
    source = b"if command -v nvidia-smi >/dev/null; then\n  nvidia-smi\nfi\n"
    result = port_bytes("env.sh", source, ruleset(), True)
    assert [(f.line, f.code, f.applied) for f in result.findings] == [(1, "HPU805", False), (2, "HPU805", False)]
    assert result.new_source is None


def test_writefile_cells_are_ported_as_the_file_they_write():
    source = notebook(
        ["%%writefile train.py\n", "import torch\n", "x = torch.zeros(2).cuda()\n"],
        ["%%writefile run.sh\n", "nvidia-smi"],
        ["%%writefile -a notes.txt\n", "cuda\n"],
    )
    result = port_bytes("nb.ipynb", source, ruleset(), True)
    assert [(f.cell, f.line, f.code) for f in result.findings] == [
        (1, 2, "HPU001"), (1, 3, "HPU111"), (2, 2, "HPU805"), (3, 1, "HPU870")]
    cells = json.loads(result.new_source)["cells"]
    assert "".join(cells[0]["source"]).startswith("%%writefile train.py\nimport habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n")
    assert cells[1]["source"] == ["%%writefile run.sh\n", "hl-smi"]
    broken = port_bytes("nb.ipynb", notebook(["%%writefile t.py\n", "x.cuda(\n"], ["import torch"]), ruleset(), True)
    assert broken.error.startswith("cell 1 (%%writefile t.py): syntax error at line 2")


def test_a_continued_comparison_is_python_not_a_shell_line():
    source = notebook(["import torch\n", "same = (torch.ones(1).cuda()\n", "        != 1)\n", "!nvidia-smi"])
    result = port_bytes("nb.ipynb", source, ruleset(), True)
    assert result.error is None
    assert {f.code for f in result.findings} >= {"HPU111", "HPU805"}


def test_github_actions_default_shell_of_a_job_decides_how_its_steps_are_read():
    source = b"""jobs:
  linux:
    defaults:
      run:
        shell: bash -l {0}
    steps:
      - run: nvidia-smi
  windows:
    defaults:
      run:
        shell: pwsh
    steps:
      - run: nvidia-smi.exe
"""
    result = port_bytes(".github/workflows/ci.yml", source, ruleset(), True)
    assert [(f.line, f.code) for f in result.findings] == [(7, "HPU805"), (13, "HPU870")]


@pytest.mark.parametrize("runner", [
    "[self-hosted, nvidia]",
    "ubuntu-latest-gpu",
    "${{ matrix.runner }}\n    strategy:\n      matrix:\n        device: [cuda, npu]",
    "\n      group: aws-g4dn-metal",  # a runner group of NVIDIA instances
    "ubuntu-latest\n    container:\n      image: pytorch\n      options: --gpus all",
])
def test_a_ci_job_on_nvidia_runners_is_kept_and_reported(runner):
    """Renamed, the job would look for Gaudi on NVIDIA machines: it is
    reported, with the advice to add a Gaudi job beside it."""
    source = f"jobs:\n  test:\n    runs-on: {runner}\n    steps:\n      - run: nvidia-smi\n".encode()
    result = port_bytes(".github/workflows/gpu.yml", source, ruleset(), True)
    assert result.new_source is None
    found = [f for f in result.findings if f.code == "HPU805"]
    assert found and not found[0].fixable and found[0].kept == "other-device" and "Gaudi runner" in found[0].message
