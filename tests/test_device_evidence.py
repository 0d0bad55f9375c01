"""One table says which code is NVIDIA's and which devices there are: every rule reads it, a project adds to it."""

import ast
import textwrap
import tomllib
from dataclasses import fields

import pytest

from hpu_port import cache, frameworks
from hpu_port.config import ConfigError, settings_for
from hpu_port.device import evidence
from hpu_port.device.evidence import Evidence, EvidenceError, bundled, parse
from hpu_port.model import Options
from hpu_port.rules import RuleFileError, load_rules, rule_files
from hpu_port.settings import RuleSet
from tests.conftest import REPO, port

GUARDED = """
import torch
import {library}

if torch.cuda.is_available():
    model = {library}.compile(model)
"""


def guard_kept(code: str, **options) -> bool:
    """Whether HPU101 leaves the CUDA check of ``code`` as it is (and says why)."""
    result = port(textwrap.dedent(code), select=["HPU101"], **options)
    [finding] = [f for f in result.findings if f.code == "HPU101"]
    kept = result.new_source is None
    assert kept == ("not rewritten" in finding.message)
    return kept


# -- what the table knows -------------------------------------------------------


@pytest.mark.parametrize("library", ["torch_tensorrt", "tensorrt"])
def test_a_check_guarding_tensorrt_stays_whichever_package_the_code_uses(library):
    # Renamed, `torch.hpu.is_available()` would send Gaudi into Torch-TensorRT.
    assert guard_kept(GUARDED.format(library=library))


@pytest.mark.parametrize("library", [
    "torch_tensorrt", "amp_C", "cudf", "cuml", "cugraph", "deep_ep", "fla", "helion", "mamba_ssm", "causal_conv1d",
    "megablocks", "liger_kernel", "exllamav2", "torch.distributed._symmetric_memory", "basicsr.ops.fused_act",
])
def test_every_nvidia_only_library_keeps_the_check_that_guards_it(library):
    assert guard_kept(GUARDED.format(library=library))


def test_a_check_guarding_ordinary_code_is_still_ported():
    assert not guard_kept(GUARDED.format(library="numpy"))


def test_the_libraries_that_report_rules_call_nvidia_only_are_in_the_table(all_rules):
    """HPU506 and HPU611 tell users a library only runs on NVIDIA GPUs: the
    rules that decide what to port know it too."""
    for rule in all_rules:
        if rule.code in ("HPU506", "HPU611"):
            for name in rule.params["names"]:
                module = name.removesuffix(".*")
                assert bundled().nvidia_only_library(module), f"{rule.code} reports {name}, unknown to rules/_device.toml"


def test_a_function_that_imports_a_new_nvidia_only_library_is_held():
    result = port(
        """
        import torch


        def mixer(x):
            from mamba_ssm import Mamba
            return Mamba(16).to("cuda")(x)
        """,
        select=["HPU110", "HPU615"],
    )
    assert result.new_source is None
    [unit] = [f for f in result.findings if f.code == "HPU615"]
    assert "`mamba_ssm`, which only runs on NVIDIA GPUs" in unit.message


def test_code_for_another_framework_is_held_by_its_name():
    result = port(
        """
        import torch


        def load_flax_weights(model, path):
            model.to("cuda")
        """,
        select=["HPU110", "HPU615"],
    )
    assert result.new_source is None
    assert any(f.code == "HPU615" and "`flax`" in f.message for f in result.findings)


def test_the_frameworks_that_make_a_file_foreign_are_the_tables():
    assert frameworks.foreign_framework(b"import mxnet\n") == "mxnet"
    assert frameworks.foreign_framework(b"import torch\nimport torch_xla\n") == "torch_xla"
    # Jittor's `Var.half()` is not a torch tensor's: its files are left alone.
    assert frameworks.foreign_framework(b"import jittor as jt\n") == "jittor"
    more = bundled().extended(parse({"frameworks": {"foreign": ["tinygrad"]}}, "pyproject.toml"))
    assert frameworks.foreign_framework(b"import tinygrad\n") is None
    assert frameworks.foreign_framework(b"import tinygrad\n", more) == "tinygrad"


def test_a_file_using_only_a_frameworks_device_free_names_is_not_foreign():
    settings = b"import tensorflow as tf\nhp = tf.contrib.training.HParams(dist_backend='nccl')\ntf.logging.info(hp)\n"
    assert frameworks.foreign_framework(settings) is None
    assert frameworks.foreign_framework(b"from tensorflow.contrib.training import HParams\nhp = HParams()\n") is None
    # Any other use, or an import with nothing used, keeps the file the framework's.
    assert frameworks.foreign_framework(settings + b"x = tf.constant(1)\n") == "tensorflow"
    assert frameworks.foreign_framework(b"from tensorflow.contrib.training import HParams, HParamDef\n") == "tensorflow"
    assert frameworks.foreign_framework(b"import tensorflow as tf\n") == "tensorflow"
    assert frameworks.foreign_framework(settings + b"from tensorflow import (keras)\n") == "tensorflow"
    assert frameworks.foreign_framework(b"import tensorflow.contrib\nhp = tensorflow.contrib.training.HParams()\n") is None


# -- a project's additions ---------------------------------------------------------


MADE_UP = GUARDED.format(library="warp_kernels")
ADDITION = {"nvidia-only": {"libraries": ["warp_kernels"]}}


def test_a_project_addition_makes_a_library_nvidia_only():
    assert not guard_kept(MADE_UP)
    assert guard_kept(MADE_UP, device=parse(ADDITION, "pyproject.toml", "tool.hpu-port.device."))


def test_additions_come_from_the_pyproject_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hpu-port.device.nvidia-only]\nlibraries = ["warp_kernels"]\n'
        '[tool.hpu-port.device.devices.kept-checks]\ncuda = ["my.Cuda.is_available"]\n'
    )
    additions = settings_for(tmp_path / "train.py").device
    assert additions.libraries == ("warp_kernels",)
    merged = evidence.with_additions(additions)
    assert merged.libraries[-1] == "warp_kernels" and "triton" in merged.libraries
    assert evidence.by_name(merged.kept_checks, "cuda") == ("*.CUDAAccelerator.is_available", "my.Cuda.is_available")
    assert guard_kept(MADE_UP, device=additions)


def test_an_extending_configuration_adds_to_the_inherited_additions(tmp_path):
    (tmp_path / "base.toml").write_text('[tool.hpu-port.device.nvidia-only]\nlibraries = ["warp_kernels"]\n')
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hpu-port]\nextend = "base.toml"\n[tool.hpu-port.device.nvidia-only]\nlibraries = ["my_kernels"]\n'
    )
    assert settings_for(tmp_path / "train.py").device.libraries == ("warp_kernels", "my_kernels")


def test_the_additions_are_part_of_what_the_cache_keys_on(all_rules):
    plain = RuleSet(all_rules, Options())
    added = RuleSet(all_rules, Options(device=parse(ADDITION, "pyproject.toml")))
    assert cache.fingerprint(plain) != cache.fingerprint(added)
    # The same additions, however they were read, are the same key.
    again = RuleSet(all_rules, Options(device=parse(ADDITION, "elsewhere.toml")))
    assert cache.fingerprint(added) == cache.fingerprint(again)


def test_every_loaded_rule_records_the_bundled_table(all_rules):
    # The result cache keys on rules' raw parameters: an edited table is a new entry.
    assert {rule.raw_params["device-evidence"] for rule in all_rules} == {bundled().digest()}


# -- problems: one line each, naming the file and the key ----------------------------


@pytest.mark.parametrize("table,problem", [
    ('[nvidia-only]\nlibraries = "triton"\n', "[nvidia-only] 'libraries' must be a list of strings"),
    ('[nvidia-only]\nlibraires = ["triton"]\n', "[nvidia-only] unknown key 'libraires'"),
    ('[nvidia_only]\nlibraries = ["triton"]\n', "unknown section [nvidia_only]"),
    ('[devices]\nkept-checks = ["x"]\n', "[devices] 'kept-checks' must be a table of lists"),
    ('[devices.taken-by]\nhccl = "torch_npu"\n', "[devices] 'taken-by' ('hccl') must be a list of strings"),
    ('[[nvidia-only.exception]]\nname = "a"\n', "[nvidia-only] 'exception' must be an array of tables"),
    ('[nvidia-only\n', "invalid TOML"),
])
def test_a_malformed_table_is_a_one_line_error(tmp_path, table, problem):
    path = tmp_path / "_device.toml"
    path.write_text(table)
    with pytest.raises(EvidenceError) as raised:
        evidence.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message


def test_a_malformed_bundled_table_stops_the_rule_loader(tmp_path, monkeypatch):
    broken = tmp_path / "_device.toml"
    broken.write_text('[devices]\nother = [1, 2]\n')
    monkeypatch.setattr(evidence, "bundled_file", lambda: broken)
    evidence.bundled.cache_clear()
    try:
        with pytest.raises(RuleFileError, match=r"_device.toml: \[devices\] 'other' must be a list of strings"):
            load_rules()
    finally:
        evidence.bundled.cache_clear()


def test_a_malformed_addition_is_a_one_line_configuration_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port.device.nvidia-only]\nlibrarys = ["x"]\n')
    with pytest.raises(ConfigError) as raised:
        settings_for(tmp_path / "train.py")
    [problem] = raised.value.problems
    assert problem.startswith(str(tmp_path / "pyproject.toml"))
    assert "[tool.hpu-port.device.nvidia-only] unknown key 'librarys'" in problem


# -- one copy ---------------------------------------------------------------------------


MOVED_KEYS = {
    "guards", "nvidia-only", "kept-checks", "accelerator-queries", "taken-by", "class-bases", "kernel-decorators",
    "libraries", "definition-names", "internal-names", "internal-attributes", "statement-names", "branch-names",
    "path-names",
}
MOVED_CONSTANTS = {
    "_CUDA_SWITCH_WORDS", "OTHER_DEVICE", "PLAIN_DEVICES", "_DEVICES_OF_THE_PORT", "_FLAG_WORDS", "FOREIGN", "ALWAYS_FOREIGN",
}


def test_the_rules_loader_skips_the_table():
    assert not any(path.name.startswith("_") for path in rule_files([REPO / "rules"]))


def test_no_rule_file_keeps_its_own_copy_of_the_evidence():
    for path in rule_files([REPO / "rules"]):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert not MOVED_KEYS & set(data), f"{path.name} keeps {sorted(MOVED_KEYS & set(data))}: they are rules/_device.toml's"
        for key, value in data.items():
            assert not _copies_entries(value), f"{path.name}: {key!r} repeats entries of rules/_device.toml"


def test_no_module_keeps_its_own_copy_of_the_evidence():
    for path in sorted((REPO / "hpu_port").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)}
        assert not MOVED_CONSTANTS & assigned, f"{path.name} defines {sorted(MOVED_CONSTANTS & assigned)}"
        for node in ast.walk(tree):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                assert not _copies_entries(strings if len(strings) == len(node.elts) else []), (
                    f"{path.relative_to(REPO)}:{node.lineno} repeats entries of rules/_device.toml")


def _entries() -> set:
    found = set()
    for item in fields(Evidence):
        for value in getattr(bundled(), item.name):
            shape = item.metadata["shape"]
            found.update(value[1] if shape == evidence.BY_NAME else value if shape == evidence.EXCEPTIONS else [value])
    return found


ENTRIES = _entries()


def _copies_entries(value) -> bool:
    """A list of three or more strings, all of them the table's: a copy of part of it."""
    return isinstance(value, list) and len(value) >= 3 and all(isinstance(v, str) and v in ENTRIES for v in value)


def test_a_project_addition_reaches_a_run(tmp_path):
    from click.testing import CliRunner

    from hpu_port.cli import main

    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port.device.nvidia-only]\nlibraries = ["warp_kernels"]\n')
    (tmp_path / "train.py").write_text(textwrap.dedent(MADE_UP).lstrip())
    result = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", "--select", "HPU101", str(tmp_path)])
    assert "torch.hpu.is_available" not in result.stdout


def test_the_config_command_shows_the_additions_as_they_read(tmp_path):
    from hpu_port.config import render_settings

    (tmp_path / "pyproject.toml").write_text(
        '[tool.hpu-port.device.nvidia-only]\nlibraries = ["warp_kernels"]\n'
        '[[tool.hpu-port.device.nvidia-only.exception]]\nname = "a.B"\nunless = "a.C"\n'
        '[tool.hpu-port.device.devices.taken-by]\nhccl = ["my_npu"]\n'
    )
    settings = settings_for(tmp_path / "train.py")
    shown = render_settings(settings)
    assert "[tool.hpu-port.device.nvidia-only]\nlibraries = [\"warp_kernels\"]\n" in shown
    read_back = tomllib.loads(shown)["tool"]["hpu-port"]["device"]
    assert parse(read_back, "shown") == settings.device
