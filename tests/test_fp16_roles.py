"""float16 has roles: `--fp16-to-bf16` converts the precision code computes
in and keeps float16 where it is a format (NumPy, checkpoints a tool writes,
values a test checks), and gives a model one precision."""

import textwrap

from hpu_port.engine import port_source
from tests.conftest import make_ruleset, port


def converted(code, path="snippet.py"):
    source = textwrap.dedent(code).lstrip("\n").encode()
    result = port_source(path, source, make_ruleset(fp16_to_bf16=True), True)
    assert result.error is None, result.error
    return (result.new_source or result.source).decode(), result.findings


CONVERSION = """
import torch

def shrink(path, out):
    state = torch.load(path)
    state = {k: v.to(torch.float16) for k, v in state.items()}
    torch.save(state, out)
"""


def test_a_function_that_loads_and_saves_weights_keeps_their_float16():
    output, findings = converted(CONVERSION)
    assert "torch.float16" in output and "bfloat16" not in output
    assert any(f.kept == "dtype-role" for f in findings)


def test_a_function_that_also_trains_converts_its_float16():
    code = CONVERSION.replace("    torch.save(state, out)", "    loss.backward()\n    torch.save(state, out)")
    output, _ = converted(code)
    assert "torch.bfloat16" in output and "torch.float16" not in output


def test_a_conversion_script_keeps_float16_by_its_name():
    code = """
    import torch

    model = build().half()
    """
    assert ".half()" in converted(code, "tools/convert_to_hf.py")[0]
    assert ".to(torch.bfloat16)" in converted(code, "tools/train.py")[0]


def test_a_test_that_asserts_keeps_what_it_passes_and_what_it_checks():
    code = """
    import torch

    def test_dtype():
        x = torch.randn(4, dtype=torch.float16)
        assert model(x).dtype == torch.float16
    """
    output, _ = converted(code)
    assert output.count("torch.float16") == 2


def test_a_helper_of_a_test_that_asserts_nothing_is_converted():
    code = """
    import torch

    def make_inputs():
        return torch.randn(4, dtype=torch.float16)
    """
    assert "torch.bfloat16" in converted(code)[0]


def test_a_tensor_handed_to_numpy_keeps_half():
    output, findings = converted("""
    import torch

    features = model(images).half().cpu().numpy()
    weights = model.half()
    """)
    assert "model(images).half().cpu().numpy()" in output
    assert "weights = model.to(torch.bfloat16)" in output
    assert any("NumPy" in f.message for f in findings if f.kept)


def test_a_model_whose_part_keeps_float16_keeps_it_in_every_part():
    output, findings = converted("""
    import torch

    def prepare(model, batch):
        model.encoder.half()
        if batch.dtype == torch.float16:
            model.decoder.half()
        other.half()
    """)
    assert "model.encoder.half()" in output and "model.decoder.half()" in output
    assert "other.to(torch.bfloat16)" in output
    assert any("another part of `model`" in f.message for f in findings)


def test_parts_of_self_are_one_model_in_a_class():
    output, _ = converted("""
    import torch

    class Net:
        def to_half(self):
            self.blocks.half()

        def restore(self, x):
            if x.dtype == torch.float16:
                self.head.half()
    """)
    assert "self.blocks.half()" in output


def test_a_model_converted_whole_is_converted():
    output, _ = converted("""
    import torch

    model.encoder.half()
    model.decoder.half()
    """)
    assert output.count("to(torch.bfloat16)") == 2


def test_without_the_option_nothing_changes_and_each_use_is_reported():
    result = port(CONVERSION)
    assert result.new_source is None or b"float16" in result.new_source
    assert any(f.code == "HPU310" for f in result.findings)


def test_the_default_of_a_conversion_function_keeps_float16():
    # A library's `convert_weights_to_fp16(model)` promises float16 to every
    # caller; the casts in a converter's body are the precision the model
    # computes in; a training function beside it computes in bfloat16.
    output, findings = converted("""
        import torch

        def convert_weights_to_lp(model, dtype=torch.float16):
            for p in model.parameters():
                p.data = p.data.to(dtype)

        def convert_weights(model):
            for p in model.parameters():
                p.data = p.data.half()

        def train(model, x):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x)
            loss.backward()
    """)
    assert "def convert_weights_to_lp(model, dtype=torch.float16):" in output
    assert "p.data = p.data.to(torch.bfloat16)" in output
    assert 'torch.autocast(device_type="hpu", dtype=torch.bfloat16)' in output
    assert any(f.kept == "dtype-role" and f.line == 3 for f in findings)


def test_a_checkpoint_saved_from_a_training_loop_keeps_its_float16_and_the_model_converts():
    output, findings = converted("""
        import torch

        def train(model, ema, loader, optimizer, path):
            model.half().float()  # round the weights as the checkpoint stores them
            for batch in loader:
                loss = model(batch.half())
                loss.backward()
                optimizer.step()
            ckpt = {"model": model.half(), "ema": ema.half(), "epoch": 3}
            torch.save(ckpt, path)
    """)
    assert "model.half().float()" in output
    assert 'ckpt = {"model": model.half(), "ema": ema.half(), "epoch": 3}' in output
    assert "loss = model(batch.to(torch.bfloat16))" in output
    assert sum(f.kept == "dtype-role" for f in findings) == 3


def test_code_that_makes_a_value_float16_converts_with_the_model():
    output, _ = converted("""
        import torch

        class Backend:
            def __init__(self, model, fp16):
                self.model = model.half() if fp16 else model.float()
                self.fp16 = fp16

            def forward(self, im):
                if self.fp16 and im.dtype != torch.float16:
                    im = im.half()
                else:
                    im = im.float()
                return self.model(im)

            def check(self, x):
                if x.dtype == torch.float16:
                    return x.half()
                return x
    """)
    assert "self.model = model.to(torch.bfloat16) if fp16 else model.float()" in output
    assert "im = im.to(torch.bfloat16)" in output
    # The arm for values that are float16 already is theirs.
    assert "return x.half()" in output


def test_a_deepspeed_config_written_in_python_trains_in_bf16_with_the_script():
    """`samples.half()` beside a dict that asks DeepSpeed for fp16: with the
    option both move to bf16, whatever order and layout the members have."""
    code = (
        "config = {'train_micro_batch_size_per_gpu': 8, 'fp16': {'loss_scale': 0, 'enabled': True, 'initial_scale_power': 16}, 'zero_optimization': {'stage': 2}}\n"
        'c2 = {"optimizer": {}, "fp16": {"enabled": args.fp16, "loss_scale": 0,}}\n'
    )
    converted = port(code, fp16_to_bf16=True).new_source.decode()
    assert converted == (
        "config = {'train_micro_batch_size_per_gpu': 8, 'bf16': {'enabled': True}, 'zero_optimization': {'stage': 2}}\n"
        'c2 = {"optimizer": {}, "bf16": {"enabled": args.fp16,}}\n'
    )
    assert port(code).new_source is None
