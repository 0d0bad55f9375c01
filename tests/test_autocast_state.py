"""HPU305: autocast state calls that name no device are CUDA's, beyond the rule's examples."""

import pytest

from tests.conftest import ported

PORTED = [
    pytest.param(
        "import torch as T\nok = T.is_autocast_enabled()\n",
        'import torch as T\nok = T.is_autocast_enabled("hpu")\n',
        id="module-alias",
    ),
    pytest.param(
        "from torch import get_autocast_gpu_dtype\ndtype = get_autocast_gpu_dtype()\n",
        'import torch\n\ndtype = torch.get_autocast_dtype("hpu")\n',
        id="imported-name",
    ),
    pytest.param(
        "import torch\ntorch.set_autocast_gpu_dtype(dtype=torch.bfloat16)\n",
        'import torch\ntorch.set_autocast_dtype("hpu", dtype=torch.bfloat16)\n',
        id="setter-keyword",
    ),
    # A literal "cuda" is CUDA's own query (HPU110 ports it), not code that
    # picks its device: the dtype beside it is still CUDA's.
    pytest.param(
        "import torch\n\n\ndef f():\n    if torch.is_autocast_enabled('cuda'):\n        return torch.get_autocast_gpu_dtype()\n",
        "import torch\n\n\ndef f():\n    if torch.is_autocast_enabled('cuda'):\n        return torch.get_autocast_dtype(\"hpu\")\n",
        id="beside-a-literal-device",
    ),
]


@pytest.mark.parametrize("before, after", PORTED)
def test_ported(before, after):
    assert ported(before, select=["HPU305"]) == after


LEFT_ALONE = [
    pytest.param("import torch\nok = torch.is_autocast_enabled(x.device.type)\n", id="device-by-position"),
    pytest.param("import torch\ntorch.set_autocast_enabled(device_type, True)\n", id="two-argument-setter"),
    pytest.param("import torch\nok = torch.is_autocast_enabled(*args)\n", id="star-arguments"),
    pytest.param("def is_autocast_enabled():\n    return False\n\nok = is_autocast_enabled()\n", id="own-function"),
    # Module level: the code asks with a device it picks, the rest is its fallback.
    pytest.param(
        "import torch\ntry:\n    DTYPE = torch.get_autocast_dtype(DEVICE)\nexcept AttributeError:\n"
        "    DTYPE = torch.get_autocast_gpu_dtype()\n",
        id="fallback-at-module-level",
    ),
]


@pytest.mark.parametrize("code", LEFT_ALONE)
def test_left_alone(code):
    assert ported(code, select=["HPU305"]) == code


def test_fallback_is_judged_per_function():
    code = (
        "import torch\n\n\ndef generic(device_type):\n    return torch.is_autocast_enabled(device_type)\n\n\n"
        "def legacy():\n    return torch.is_autocast_enabled()\n"
    )
    assert ported(code, select=["HPU305"]).endswith('return torch.is_autocast_enabled("hpu")\n')


def test_second_run_changes_nothing():
    once = ported("import torch\ntorch.set_autocast_enabled(False)\nok = torch.is_autocast_enabled()\n", select=["HPU305"])
    assert ported(once, select=["HPU305"]) == once
