"""A test skipped without CUDA keeps its skip condition unless what it tests is ported whole."""

import textwrap

import pytest

from tests.conftest import port


def _rewritten(code: str) -> str:
    result = port(code)
    assert result.error is None
    return (result.new_source or result.source).decode()


@pytest.mark.parametrize(
    "decorator",
    [
        '@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")',
        '@unittest.skipIf(not torch.cuda.is_available(), "no CUDA")',
        '@unittest.skipUnless(torch.cuda.is_available(), "no CUDA")',
    ],
)
def test_the_skip_of_an_nvidia_only_test_stays(decorator):
    code = f"""
        import unittest
        import pytest
        import torch

        {decorator}
        def test_capability():
            x = torch.ones(2, device="cuda")
            assert torch.cuda.get_device_capability()[0] >= 8
    """
    output = _rewritten(code)
    assert "torch.cuda.is_available()" in output
    result = port(code)
    (kept,) = [f for f in result.findings if f.code == "HPU101" and f.line == 5]
    assert not kept.fixable and "it skips `test_capability`" in kept.message
    assert "on Gaudi the test would run and fail" in kept.message


def test_the_skip_of_a_test_class_that_keeps_cuda_stays():
    output = _rewritten("""
        import unittest
        import torch

        @unittest.skipIf(not torch.cuda.is_available(), "no CUDA")
        class TestKernels(unittest.TestCase):
            def test_cuda_only(self):
                import triton
                self.assertEqual(triton.cdiv(4, 2), 2)
    """)
    assert "torch.cuda.is_available()" in output


def test_the_skip_of_a_portable_test_is_ported_with_it():
    output = _rewritten("""
        import pytest
        import torch

        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
        def test_add():
            x = torch.ones(2, device="cuda")
            assert x.sum() == 2

        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA graphs")
        def test_graph():
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                pass
    """)
    assert "torch.cuda" not in output
    assert output.count("not torch.hpu.is_available()") == 2


def test_a_decorator_that_is_no_skip_is_not_a_skip_condition():
    """`torch.cuda.is_available()` as an argument of another decorator is ported as usual."""
    output = _rewritten("""
        import functools
        import torch

        @functools.lru_cache(maxsize=torch.cuda.is_available())
        def helper():
            return torch.cuda.get_device_capability()
    """)
    assert "maxsize=torch.hpu.is_available()" in output
