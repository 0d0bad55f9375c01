"""Code for another device inside a file that is otherwise ported: held, reported once."""

import textwrap

from hpu_port.visitors.other_backend import name_words
from tests.conftest import port

SELECT = ("HPU615", "HPU101", "HPU102", "HPU103", "HPU110", "HPU703")


def rewritten(code: str, select=SELECT, **options) -> tuple[str, list]:
    result = port(textwrap.dedent(code), select=select, **options)
    return (result.new_source or result.source).decode(), result.findings


def test_the_words_of_a_name():
    assert name_words("XLAFlashAttnProcessor2_0") == ["xla", "flash", "attn", "processor", "2", "0"]
    assert name_words("AttnProcessorNPU") == ["attn", "processor", "npu"]
    assert name_words("is_torch_npu_available") == ["is", "torch", "npu", "available"]


def test_an_export_formats_arm_is_held_and_the_other_arm_ported():
    code, findings = rewritten(
        """
        import torch.nn.functional as F

        def attention(self, q, k, v):
            if self.format == "coreml" and hasattr(F, "scaled_dot_product_attention"):
                return F.scaled_dot_product_attention(q, k, v)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """,
        unsafe_fixes=True,
    )
    assert "return F.scaled_dot_product_attention(q, k, v)\n" in code
    assert "return FusedSDPA.apply(q, k, v, None, 0.0, True)" in code
    [unit] = [f for f in findings if f.code == "HPU615"]
    assert unit.line == 4 and "the branch of `self.format == \"coreml\"" in unit.message and "(changes reported instead: 1)" in unit.message


def test_another_devices_arm_and_the_else_of_a_test_ruling_it_out():
    code, _ = rewritten(
        """
        import torch

        def empty_cache(device):
            if device.type in ("mps", "xpu"):
                torch.cuda.synchronize()
            elif device.type == "cuda":
                torch.cuda.synchronize()
            if not is_torch_npu_available():
                x = torch.zeros(1, device="cuda")
            else:
                torch.cuda.synchronize()
            if torch.backends.mps.is_available():
                torch.cuda.synchronize()
        """
    )
    # The file chooses among devices: nothing in it is converted (HPU620,
    # not selected here, would add the HPU's arm beside CUDA's).
    assert code.count("torch.cuda.synchronize()") == 4
    assert 'x = torch.zeros(1, device="cuda")' in code


def test_branches_for_the_cpu_or_for_several_devices_are_shared_code_not_another_devices():
    code, findings = rewritten(
        """
        import torch

        def move(x, device):
            if device.type == "cpu":
                torch.cuda.synchronize()
            if device.type in ("mps", "cpu"):
                torch.cuda.synchronize()
            if device.type == "mps" or use_cuda:
                torch.cuda.synchronize()
        """
    )
    # The file chooses among devices (it tests for "mps"): kept as shared code, not as MPS's unit.
    assert code.count("torch.cuda.synchronize()") == 3
    assert not [f for f in findings if f.code == "HPU615"]
    assert {f.kept for f in findings if f.code == "HPU101"} == {"shared-code"}


def test_classes_and_functions_named_for_another_device():
    code, _ = rewritten(
        """
        import torch

        class AttnProcessorNPU:
            def __call__(self, hidden_states):
                return hidden_states.to("cuda")

        def _xla_device():
            return torch.device("cuda")

        def device():
            return torch.device("cuda")
        """
    )
    assert code.count('"cuda"') == 2 and 'return torch.device("hpu")' in code


def test_a_function_calling_a_library_the_module_imports_optionally():
    code, findings = rewritten(
        """
        import torch

        if CUDA_PYTHON_AVAILABLE:
            from cuda.bindings import runtime as cudart

        def capture_status():
            stream = torch.cuda.current_stream()
            return cudart.cudaStreamGetCaptureInfo(stream.cuda_stream)

        def sync():
            torch.cuda.current_stream().synchronize()
        """
    )
    assert "stream = torch.cuda.current_stream()" in code
    assert "torch.hpu.current_stream().synchronize()" in code
    [unit] = [f for f in findings if f.code == "HPU615"]
    assert "`capture_status`" in unit.message and "cuda.bindings.runtime" in unit.message


def test_flags_named_for_a_device_or_format():
    code, _ = rewritten(
        """
        import torch

        def load(w, onnx, coreml, pt):
            if pt:
                torch.cuda.synchronize()
            elif onnx:
                torch.cuda.synchronize()
            elif self.use_xla:
                torch.cuda.synchronize()
            if is_tpu or coreml:
                torch.cuda.synchronize()
        """
    )
    assert code.count("torch.cuda.synchronize()") == 3 and code.count("torch.hpu.synchronize()") == 1


def test_a_library_with_a_fallback_or_called_in_one_branch_is_used_not_built_on():
    code, findings = rewritten(
        """
        import torch

        try:
            from transformer_engine.pytorch.optimizers import multi_tensor_applier
            from transformer_engine.pytorch.module.base import get_dummy_wgrad
            HAVE_TE = True
        except ImportError:
            multi_tensor_applier = local_multi_tensor_applier
            HAVE_TE = False

        def norm(grads):
            multi_tensor_applier(grads)
            return torch.zeros(1, device="cuda")

        def backward(shape):
            if HAVE_TE:
                return get_dummy_wgrad(shape)
            return torch.zeros(shape, device="cuda")
        """
    )
    assert '"cuda"' not in code
    assert not [f for f in findings if f.code == "HPU615"]


def test_a_function_using_cuda_internals_is_held_whole():
    code, findings = rewritten(
        """
        import torch
        from torch import _C
        from torch.cuda import _lazy_call

        def _set_cuda_rng_state(new_state, device=-1):
            if device == -1:
                device = torch.device("cuda")

            def cb():
                idx = torch.cuda.current_device()
                torch.cuda.default_generators[idx].set_state(new_state)

            _lazy_call(cb)

        def seed(value):
            torch.cuda.manual_seed(value)
            return torch.device("cuda")
        """,
        select=SELECT + ("HPU104",),
    )
    assert 'device = torch.device("cuda")' in code and "idx = torch.cuda.current_device()" in code
    assert 'torch.hpu.manual_seed(value)\n    return torch.device("hpu")' in code
    [unit] = [f for f in findings if f.code == "HPU615"]
    assert "`_set_cuda_rng_state`" in unit.message and "CUDA's own implementation internals" in unit.message


def test_a_function_using_methods_only_cuda_graphs_have_is_held():
    code, findings = rewritten(
        """
        import torch

        def capture(state, step):
            graph = torch.cuda.CUDAGraph()
            graph.register_generator_state(state)
            torch.cuda.synchronize()
            with torch.cuda.graph(graph):
                step()

        class Tracker:
            def __init__(self, graphable):
                if graphable:
                    assert hasattr(torch.Generator, "graphsafe_set_state")
                    torch.cuda.synchronize()
        """,
        select=SELECT + ("HPU105",),
    )
    assert code.count("torch.cuda.synchronize()") == 2 and "torch.cuda.CUDAGraph()" in code
    assert {f.message.split(" is not ported")[0] for f in findings if f.code == "HPU615"} == {"`capture`", "`__init__`"}


def test_the_body_of_a_guard_kept_for_nvidia_only_code_is_held():
    code, findings = rewritten(
        """
        import torch

        def setup(seed):
            if torch.cuda.is_available():
                torch.cuda.manual_seed(seed)
                major, _ = torch.cuda.get_device_capability()
            if not torch.cuda.is_available():
                torch.cuda.get_device_capability()
            torch.cuda.manual_seed(seed)
        """,
        select=SELECT + ("HPU104",),
    )
    # The kept guard's body stays whole; code after it is ported.
    assert code.count("torch.cuda.manual_seed(seed)") == 1 and code.rstrip().endswith("torch.hpu.manual_seed(seed)")
    [unit] = [f for f in findings if f.code == "HPU615"]
    assert unit.message.startswith("the branch of `torch.cuda.is_available()`")


def test_methods_of_a_class_defined_in_a_function_are_units_of_their_own():
    code, findings = rewritten(
        """
        import torch

        def initialize_tracker():
            class Tracker:
                def __init__(self, graphable):
                    if graphable:
                        assert hasattr(torch.cuda.CUDAGraph, "register_generator_state")
                        torch.cuda.synchronize()

                def add(self, seed):
                    torch.cuda.synchronize()

            return Tracker(False)
        """
    )
    assert code.count("torch.cuda.synchronize()") == 1 and "torch.hpu.synchronize()" in code
    assert {f.message.split(" is not ported")[0] for f in findings if f.code == "HPU615"} == {"`__init__`"}


def test_a_test_written_over_several_lines_is_named_on_one():
    _, findings = rewritten(
        """
        import torch

        def init(self):
            if (
                self.format == "onnx"
                and torch.cuda.is_available()
            ):
                torch.cuda.synchronize()
        """
    )
    [unit] = [f for f in findings if f.code == "HPU615"]
    assert "\n" not in unit.message and '`(self.format == "onnx" and torch.cuda.is_available())`' in unit.message


def test_a_kept_guard_testing_is_not_none_holds_its_body():
    code, _ = rewritten(
        """
        import torch

        def step(self, x):
            if self.graphs is not None and torch.cuda.is_available():
                major, _ = torch.cuda.get_device_capability()
                torch.cuda.synchronize()
        """
    )
    assert "torch.cuda.synchronize()" in code


def test_an_optimizer_step_in_a_held_function_gets_no_mark_step():
    # Steps are judged once the whole module is read; the unit still holds them.
    code, findings = rewritten(
        """
        import torch

        def train_step_apex(model, optimizer, loss):
            loss.backward()
            optimizer.step()

        def train_step(model, optimizer, loss):
            loss.backward()
            optimizer.step()
        """,
        select=("HPU615", "HPU201"),
    )
    assert code.count("htcore.mark_step()") == 2  # both in train_step
    assert code.index("htcore.mark_step()") > code.index("def train_step(")
    [unit] = [f for f in findings if f.code == "HPU615"]
    assert "`train_step_apex`" in unit.message and "(changes reported instead: 2)" in unit.message


def test_a_cuda_choice_is_held_only_beside_an_hpu_one():
    code, _ = rewritten(
        """
        import torch

        def detect():
            if has_habana():
                return "hpu"
            if torch.cuda.is_available():
                return "cuda"
            return "cpu"

        def get_device():
            if torch.cuda.is_available():
                return "cuda"
            return "cpu"
        """
    )
    detect, get_device = code.split("def get_device")
    assert "torch.cuda.is_available()" in detect and 'return "cuda"' in detect
    assert "torch.hpu.is_available()" in get_device


def test_a_table_is_per_device_only_when_its_keys_name_devices():
    code, findings = rewritten(
        """
        import torch

        SYNC = {"cuda": torch.cuda.synchronize, "cpu": None, "default": None}
        HOOKS = {"cuda": torch.cuda.synchronize, "after_step": None}
        """
    )
    assert 'SYNC = {"cuda": torch.cuda.synchronize,' in code
    assert 'HOOKS = {"cuda": torch.hpu.synchronize,' in code
    assert [f.line for f in findings if f.code == "HPU615"] == [3]


def test_a_statement_with_a_cuda_only_query_is_held_whole_and_its_neighbours_ported():
    code, _ = rewritten(
        """
        import torch

        supported = torch.cuda.is_bf16_supported() and torch.cuda.get_device_capability()[0] >= 8
        count = torch.cuda.device_count()
        """
    )
    assert "supported = torch.cuda.is_bf16_supported() and" in code
    assert "count = torch.hpu.device_count()" in code


INT4_PACKING = '''
import torch


def pack_int4(values, tiles):
    grouped = values.reshape(-1, 2)
    return torch.ops.aten._convert_weight_to_int4pack(grouped, tiles)


class Quantizer:
    def create_quantized_state_dict(self, use_cuda=True):
        if use_cuda:
            device = "cuda"
        else:
            device = "cpu"
        packed = {}
        for name, values in self.tensors.items():
            packed[name] = pack_int4(values.to(device), 8)
        return packed
'''


def test_tinygemm_int4_packing_is_cuda_code_for_check_and_rewrite_alike(tmp_path):
    from click.testing import CliRunner

    from hpu_port.cli import main

    (tmp_path / "quantize.py").write_text(INT4_PACKING.lstrip())
    # The text report parses only the units a rule could act on: the helper
    # that packs must be read too, or `check` would offer a fix `rewrite` holds.
    checked = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    device = [line for line in checked.splitlines() if "HPU110" in line]
    assert device and not any("[*]" in line for line in device), checked
    assert "HPU615" in checked
    CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
    assert '"cuda"' in (tmp_path / "quantize.py").read_text()
