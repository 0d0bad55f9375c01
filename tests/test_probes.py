"""Direct probes of other accelerators, found from plain byte searches near
the text every probe holds: the same answer as the full pattern over the
whole code."""

import pytest

from hpu_port.device.probes import _bytes_probes_of, _without_prose, probed_in

DEVICES = ("mps", "npu", "tpu", "xla", "xpu")

CASES = [
    ("if is_torch_npu_available():\n    x = 1\n", True),
    ("ok = torch.xpu.is_available()\n", True),
    ("if device.type == 'mps':\n    pass\n", True),
    ("if 'npu' == device.type:\n    pass\n", True),
    ("if \"xpu\" in str(device):\n    pass\n", True),
    ("if kind == DeviceType.XLA:\n    pass\n", True),
    ("if kind == DeviceType.XLA():\n    pass\n", False),
    ("# if is_torch_npu_available():\nx = 1\n", False),
    ('def f():\n    """Use torch.xpu.is_available() to check."""\n    return output.shape\n', False),
    ("output = manipulate(inputs)\nif is_torch_cuda_available():\n    pass\n", False),
    ("x = 'cpu'\n" + "y = 1\n" * 200 + "if device.type == 'npu':\n    pass\n", True),
]


def _edge_case() -> str:
    """`== Kinds.NPU_V2` (no enum member NPU) with a window from `"npu` ending just after `NPU`."""
    head = 'name = "npu"\n'
    pad = "#" * 200 + "\n"
    line = "if kind == Kinds.NPU_V2:\n    pass\n"
    code = head + pad + line
    cut = code.index("NPU_V2") + 3 - (code.index('"npu') + 4)
    return head + "#" * (200 - (cut - 256)) + "\n" + line if cut != 256 else code


CASES.append((_edge_case(), False))


@pytest.mark.parametrize(("code", "expected"), CASES)
def test_probes_are_found_as_the_full_pattern_finds_them(code, expected):
    source = code.encode()
    pattern = _bytes_probes_of(tuple(sorted(DEVICES)))
    assert (pattern.search(_without_prose(source)) is not None) == expected
    assert probed_in(source, DEVICES) == expected
