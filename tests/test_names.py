"""Qualified names through every import form, and shadowing."""

import libcst as cst
import pytest

from hpu_port.names import LOCAL, ScopeIndex
from tests.conftest import ported

IMPORT_FORMS = [
    pytest.param("import torch\ntorch.cuda.synchronize()\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\ntorch.hpu.synchronize()\n", id="import-torch"),
    pytest.param("import torch as T\nT.cuda.synchronize()\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch as T\nT.hpu.synchronize()\n", id="import-as"),
    pytest.param("import torch.cuda as tc\ntc.synchronize()\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\ntorch.hpu.synchronize()\n", id="import-submodule-as"),
    pytest.param("import torch.cuda\ntorch.cuda.synchronize()\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch.cuda\ntorch.hpu.synchronize()\n", id="import-submodule"),
    pytest.param("from torch import cuda\ncuda.synchronize()\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\ntorch.hpu.synchronize()\n", id="from-import-module"),
    pytest.param("from torch.cuda import synchronize as sync\nsync()\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\ntorch.hpu.synchronize()\n", id="from-import-as"),
    pytest.param(
        "import torch\n\ndef f():\n    import torch.cuda as tc\n    tc.synchronize()\n",
        "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\ndef f():\n    torch.hpu.synchronize()\n",
        id="function-local-import",
    ),
    pytest.param(
        "import torch\n\nclass Trainer:\n    def sync(self):\n        torch.cuda.synchronize()\n",
        "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\nclass Trainer:\n    def sync(self):\n        torch.hpu.synchronize()\n",
        id="method",
    ),
    pytest.param(
        # An optional import stays optional: reported, not turned into a top-level import.
        "try:\n    import torch.cuda as tc\nexcept ImportError:\n    tc = None\ntc.synchronize()\n",
        "try:\n    import torch.cuda as tc\nexcept ImportError:\n    tc = None\ntc.synchronize()\n",
        id="try-except-import",
    ),
    pytest.param(
        "from torch.cuda import synchronize\nhooks = [synchronize]\n",
        "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\nhooks = [torch.hpu.synchronize]\n",
        id="name-as-value",
    ),
    pytest.param(
        "import torch\nfrom torch.cuda import amp, synchronize\nsynchronize()\nx = amp\n",
        "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\nfrom torch.cuda import amp\ntorch.hpu.synchronize()\nx = amp\n",
        id="partial-from-import",
    ),
]


@pytest.mark.parametrize("before, after", IMPORT_FORMS)
def test_import_forms(before, after):
    assert ported(before, select=["HPU001", "HPU101"]) == after
    assert ported(after, select=["HPU001", "HPU101"]) == after


SHADOWED = [
    pytest.param("import torch\ndef f(torch):\n    torch.cuda.synchronize()\n", id="parameter"),
    pytest.param("import torch\ndef f():\n    torch = backend()\n    torch.cuda.synchronize()\n", id="local-assignment"),
    pytest.param("import torch\ndef f():\n    for torch in backends:\n        torch.cuda.synchronize()\n", id="loop-target"),
    pytest.param("import torch\ndef f():\n    with ctx() as torch:\n        torch.cuda.synchronize()\n", id="with-target"),
    pytest.param("from torch.cuda import synchronize\ndef f(synchronize):\n    synchronize()\n", id="shadowed-from-import"),
    pytest.param("cuda = object()\ncuda.synchronize()\n", id="not-imported"),
    pytest.param("from .backend import torch\ntorch.cuda.synchronize()\n", id="relative-import"),
    pytest.param("import torch\nobj.torch.cuda.synchronize()\n", id="attribute-of-something-else"),
]


@pytest.mark.parametrize("code", SHADOWED)
def test_shadowed_or_unrelated_names_are_left_alone(code):
    assert ported(code, select=["HPU101"]) == code


def test_global_declaration_sees_module_import():
    code = "import torch\ndef f():\n    global torch\n    torch.cuda.synchronize()\n"
    assert "torch.hpu.synchronize()" in ported(code, select=["HPU101"])


def test_nested_function_sees_enclosing_import():
    code = "def outer():\n    import torch\n    def inner():\n        torch.cuda.synchronize()\n    return inner\n"
    assert "torch.hpu.synchronize()" in ported(code, select=["HPU101"])


def test_class_scope_does_not_leak_into_methods():
    code = "import torch\nclass A:\n    torch = None\n    def f(self):\n        torch.cuda.synchronize()\n"
    assert "torch.hpu.synchronize()" in ported(code, select=["HPU101"])


def test_module_level_global_declaration_changes_nothing():
    # `global` at module level is legal and a no-op: name lookup must not
    # treat the module as deferring to itself.
    code = "global x\nimport torch\nx = torch.cuda.is_available()\nprint(x)\n"
    assert "x = torch.hpu.is_available()\nprint(x)\n" in ported(code)
    module = ScopeIndex(cst.parse_module("global x, torch\nimport torch\nx = 1\n")).module
    assert module.lookup("x") == LOCAL
    assert module.lookup("torch").target == "torch"
    assert module.lookup("y") is None


def test_global_declaration_in_a_class_body_sees_module_import():
    code = "import torch\nclass A:\n    global torch\n    torch.cuda.synchronize()\n"
    assert "torch.hpu.synchronize()" in ported(code, select=["HPU101"])


def test_global_declaration_skips_a_shadowing_enclosing_function():
    code = "import torch\ndef outer(torch):\n    def inner():\n        global torch\n        torch.cuda.synchronize()\n"
    assert "torch.hpu.synchronize()" in ported(code, select=["HPU101"])


def test_nonlocal_declaration_refers_to_the_enclosing_function():
    shadowed = "import torch\ndef outer(torch):\n    def inner():\n        nonlocal torch\n        torch.cuda.synchronize()\n"
    assert ported(shadowed, select=["HPU101"]) == shadowed
    imported = "def outer():\n    import torch\n    def inner():\n        nonlocal torch\n        torch.cuda.synchronize()\n"
    assert "torch.hpu.synchronize()" in ported(imported, select=["HPU101"])
