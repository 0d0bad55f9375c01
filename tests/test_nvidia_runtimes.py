"""A file written around an NVIDIA runtime (TensorRT, PyCUDA, RAPIDS), imported
at its top, only runs on NVIDIA: it is kept whole and reported once, shell
lines of a notebook included; a training script that imports apex, or a
runtime imported optionally, is ported as usual."""

import json
import textwrap

from hpu_port.engine import port_notebook
from tests.conftest import make_ruleset, port


def test_a_tensorrt_script_is_kept_whole():
    result = port("""
        import tensorrt as trt
        import torch

        inputs = torch.zeros(1, 3, 640, 640, device="cuda:0")
        engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(data)
    """)
    assert result.new_source is None
    [unit] = [f for f in result.findings if f.code == "HPU615"]
    assert "`tensorrt`" in unit.message and "NVIDIA runtime" in unit.message


def test_a_submodule_of_a_runtime_counts():
    result = port("""
        import pycuda.driver as cuda_driver
        import torch

        x = torch.zeros(3).cuda()
    """)
    assert result.new_source is None


def test_an_optional_runtime_import_leaves_the_script_ported():
    result = port("""
        import torch
        try:
            import tensorrt as trt
        except ImportError:
            trt = None

        x = torch.zeros(3).cuda()
    """)
    assert result.new_source is not None and b'.to("hpu")' in result.new_source


def test_apex_at_the_top_of_a_training_script_is_not_a_runtime():
    result = port("""
        from apex import amp
        import torch

        model = torch.nn.Linear(2, 2).cuda()
    """)
    assert result.new_source is not None and b'.to("hpu")' in result.new_source


def _notebook(*cells: str) -> bytes:
    code = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": textwrap.dedent(text).lstrip("\n").splitlines(keepends=True)} for text in cells]
    return json.dumps({"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()


def test_a_tensorrt_notebook_keeps_its_shell_lines_too():
    raw = _notebook("!nvidia-smi\n", "import tensorrt as trt\nimport torch\n", 'x = torch.zeros(3, device="cuda:0")\n')
    result = port_notebook("trt.ipynb", raw, make_ruleset())
    assert result.error is None and result.new_source is None


def test_a_notebook_without_a_runtime_still_ports_its_shell_lines():
    raw = _notebook("!nvidia-smi\n", "import torch\n", 'x = torch.zeros(3, device="cuda:0")\n')
    result = port_notebook("train.ipynb", raw, make_ruleset())
    assert result.new_source is not None and b"hl-smi" in result.new_source


def test_check_and_rewrite_agree_on_a_kept_notebooks_shell_lines():
    raw = _notebook("!nvidia-smi\n", "import tensorrt as trt\nimport torch\n", 'x = torch.zeros(3, device="cuda:0")\n')
    checked = port_notebook("trt.ipynb", raw, make_ruleset(), apply=False)
    assert not [f for f in checked.findings if f.fixable]
