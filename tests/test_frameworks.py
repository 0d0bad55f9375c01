"""Files written for another framework are left alone; PyTorch files are ported."""

import pytest

from tests.conftest import port

FOREIGN = {
    "tensorflow": 'import tensorflow as tf\nwith tf.device("/GPU:0"):\n    x = tf.cast(y, tf.float16)\nstrategy = "nccl"\n',
    "jax": 'import jax\ndevice = "cuda"\nx = jax.device_put(y, jax.devices("cuda")[0])\n',
    "torch_xla": (
        "import torch\nimport torch_xla.core.xla_model as xm\n\ndef train(model, loader, opt):\n"
        "    for x in loader:\n        loss = model(x)\n        loss.backward()\n        opt.step()\n        xm.mark_step()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_code_for_another_framework_is_left_alone(name):
    result = port(FOREIGN[name], select=["ALL"], fp16_to_bf16=True)
    assert result.error is None
    assert result.new_source is None
    assert result.findings == []


def test_pytorch_code_that_also_imports_tensorflow_is_ported():
    source = 'import tensorflow as tf\nimport torch\nweights = torch.load(path, map_location="cuda")\n'
    result = port(source)
    assert result.new_source is not None and b'"hpu"' in result.new_source


def test_a_mention_in_a_docstring_is_no_import():
    source = '"""Unlike\nimport tensorflow\n"""\nimport torch\nx = torch.zeros(2, device="cuda")\n'
    assert port(source).new_source is not None


def test_a_conditional_import_of_another_backend_does_not_make_a_file_foreign():
    # The file chooses between XLA and the rest: its CUDA code is shared by
    # the devices it runs on (reported as such), not another framework's.
    source = (
        "import torch\nif is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n"
        'x = torch.zeros(2, device="cuda")\n'
    )
    findings = port(source).findings
    assert [(f.code, f.kept) for f in findings if f.line == 4] == [("HPU110", "shared-code")]
    plain = source.replace("if is_torch_xla_available():\n    import", "import")
    assert port(plain).new_source is None  # a file that imports XLA outright is XLA's
