"""CUDA checks that stay CUDA checks: what the code behind them does is
another library's, NVIDIA's, or set only by another kept check; and checks
in modules whose Gaudi import is optional ask for `torch.hpu` first."""

import textwrap

from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import port, ported

LOGGER = """
import torch
from mmcv.runner.hooks import TextLoggerHook


class CustomizedTextLoggerHook(TextLoggerHook):
    def _log_info(self, log_dict, runner):
        if torch.cuda.is_available():
            log_str = f'memory: {log_dict["memory"]}, '
        return log_str

    def log(self, runner):
        log_dict = {}
        if torch.cuda.is_available():
            log_dict['memory'] = self._get_max_memory(runner)
        return log_dict
"""


def test_a_guard_over_a_method_inherited_from_another_library_is_kept():
    result = port(LOGGER)
    held = [f for f in result.findings if f.code == "HPU101" and f.kept]
    assert any("inherited from `TextLoggerHook`" in f.message for f in held)
    assert "torch.hpu" not in (result.new_source or result.source).decode()


def test_a_guard_that_reads_a_key_only_a_kept_guard_sets_is_kept_too():
    held = [f for f in port(LOGGER).findings if f.code == "HPU101" and f.kept]
    assert any("reads `['memory']`" in f.message for f in held)


def test_a_project_base_class_may_define_the_method_so_the_guard_is_ported():
    output = ported(LOGGER.replace("from mmcv.runner.hooks import TextLoggerHook", "from .hooks import TextLoggerHook"))
    assert output.count("torch.hpu.is_available()") == 2


def test_an_assertion_that_cuda_is_required_stays():
    code = """
    import torch

    def build(has_apex):
        assert has_apex and torch.cuda.is_available(), 'APEX and CUDA required for fused optimizers'
        return 1
    """
    result = port(code)
    assert result.new_source is None
    assert any(f.kept == "nvidia-only" for f in result.findings if f.code == "HPU101")


def test_a_probe_in_a_module_whose_gaudi_import_is_optional_asks_for_torch_hpu_first(tmp_path):
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(textwrap.dedent("""
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        ok = not torch.cuda.is_available()
        message = f"CUDA found: {torch.cuda.is_available()}"
    """).lstrip())
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = (package / "helpers.py").read_text()
    assert 'device = "hpu" if hasattr(torch, "hpu") and torch.hpu.is_available() else "cpu"' in text
    assert 'ok = not (hasattr(torch, "hpu") and torch.hpu.is_available())' in text
    # Inside an f-string's braces, in the other quotes (Python before 3.12 ends it at its own).
    assert "message = f\"CUDA found: {(hasattr(torch, 'hpu') and torch.hpu.is_available())}\"" in text
    # A script keeps the plain probe: it imports Gaudi's modules unconditionally.
    assert ported('import torch\nok = torch.cuda.is_available()\n').count("hasattr") == 0


def test_a_device_string_whose_cuda_test_cannot_be_ported_stays_with_it():
    # `torch` reaches the module through a `*` import: the port cannot tell the
    # test is torch's and leaves it, so its arm must stay "cuda" too.
    code = 'from .blocks import *\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    result = port(code)
    assert (result.new_source or result.source).decode() == code
    assert any(f.code == "HPU110" and "not known to be torch's" in f.message for f in result.findings)
    # Where the module imports torch itself (also under an `if`), both change together.
    assert 'torch.device("hpu" if torch.hpu.is_available() else "cpu")' in ported("import torch\n" + code.split("\n", 2)[2])
    guarded = "from .blocks import *\n\nif HAVE_TORCH:\n    import torch\n" + code.split("\n", 2)[2]
    assert 'torch.device("hpu" if torch.hpu.is_available() else "cpu")' in ported(guarded)


def test_importing_a_submodule_under_another_name_does_not_bind_torch():
    code = 'from .blocks import *\nimport torch.nn as nn\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
    assert ported(code) == code
