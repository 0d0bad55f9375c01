"""Property tests: random valid programs, alone and mixed with CUDA code."""

import ast
import warnings

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hpu_port.engine import port_source
from tests.conftest import make_ruleset, python_programs

RULES = make_ruleset(["ALL"], unsafe_fixes=True, fp16_to_bf16=True)

CUDA_LINES = [
    "import torch",
    "import torch.cuda as tc",
    "from torch.cuda import synchronize as sync",
    "torch.cuda.synchronize()",
    "tc.manual_seed_all(0)",
    "sync()",
    'x = torch.zeros(3, device="cuda")',
    'y = x.to(f"cuda:{rank}")',
    "model = model.cuda()",
    "loss.backward()",
    "optimizer.step()",
    "scheduler.step()",
    'dist.init_process_group("nccl")',
    "scaler = torch.cuda.amp.GradScaler()",
    "with torch.cuda.amp.autocast():\n    out = model(x)",
    "torch.cuda.empty_cache()",
    "h = x.half()",
    "if torch.cuda.is_available(): loss.backward(); optimizer.step()",
    "for batch in loader:\n    loss = model(batch)\n    loss.backward()\n    optimizer.step()",
]


def parses(code: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(code)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@SETTINGS
@given(python_programs())
def test_random_programs_never_crash_and_stay_valid(program):
    source = program.encode()
    assume(parses(source))
    result = port_source("random.py", source, RULES)
    output = result.new_source if result.new_source is not None else source
    assert parses(output)
    if result.new_source is None:
        assert result.findings == [] or result.error is None
    again = port_source("random.py", output, RULES)
    assert again.new_source is None


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@SETTINGS
@given(python_programs(), st.lists(st.sampled_from(CUDA_LINES), min_size=1, max_size=8))
def test_random_programs_with_cuda_code(program, lines):
    source = (program.rstrip("\n") + "\n" + "\n".join(lines) + "\n").encode()
    assume(parses(source))
    result = port_source("mixed.py", source, RULES)
    assert result.error is None, result.error
    output = result.new_source if result.new_source is not None else source
    assert parses(output)
    assert port_source("mixed.py", output, RULES).new_source is None


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@SETTINGS
@given(python_programs())
def test_programs_without_trigger_text_come_back_byte_identical(program):
    source = program.encode()
    assume(RULES.for_source(source) is None)
    result = port_source("plain.py", source, RULES)
    assert result.new_source is None and result.findings == [] and result.error is None
