"""Extend, don't convert: code that chooses among devices gains an HPU arm and keeps every other byte."""

import difflib
import os
import shutil
import subprocess
import sys
import textwrap

from click.testing import CliRunner

from hpu_port.cli import main
from hpu_port.engine import port_source
from tests.conftest import REPO, make_ruleset, port, ported

PACKAGE = REPO / "tests" / "fixtures" / "multi_device"

# Stand-ins for what a machine without Gaudi's software and without any
# accelerator offers: torch on the CPU, no `torch.hpu`, no habana_frameworks.
STUBS = {
    "torch/__init__.py": """
        class _Off:
            def is_available(self):
                return False

            def device_count(self):
                return 0

        class device:
            def __init__(self, kind, index=None):
                self.type = kind

        cuda = _Off()
        npu = xpu = _Off()

        class backends:
            mps = _Off()
    """,
    "transformers/__init__.py": "",
    "transformers/utils.py": """
        def is_torch_npu_available():
            return False

        def is_torch_xpu_available():
            return False
    """,
    "habana_frameworks/__init__.py": "raise ImportError('no Gaudi software on this machine')",
}


def _rewrite(tree, *options):
    return CliRunner().invoke(main, ["rewrite", "--no-cache", *options, str(tree)], catch_exceptions=False)


def _copy(tmp_path):
    tree = tmp_path / "project"
    shutil.copytree(PACKAGE, tree)
    return tree


def test_every_line_of_every_arm_stays_and_an_hpu_arm_is_added(tmp_path):
    tree = _copy(tmp_path)
    before = (tree / "trainer" / "devices.py").read_text()
    assert _rewrite(tree).exit_code in (0, 1)
    after = (tree / "trainer" / "devices.py").read_text()
    removed = [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line.startswith("- ")]
    # Only the conditional expression's line changes, and its CUDA arm is still there.
    assert removed == ['-     return "nccl" if torch.cuda.is_available() else ("hccl" if is_torch_npu_available() else "gloo")']
    assert 'return "nccl" if torch.cuda.is_available() else "hccl" if hasattr(torch, "hpu") and torch.hpu.is_available() else' in after
    assert after.count("elif hasattr(torch, \"hpu\") and torch.hpu.is_available():") == 2
    assert 'elif device.type == "hpu":\n        torch.hpu.synchronize()' in after
    assert "torch.cuda.device_count()" in after and 'torch.device("cuda")' in after


def test_the_rewritten_package_imports_and_runs_its_cpu_path_without_gaudi(tmp_path):
    tree = _copy(tmp_path)
    _rewrite(tree)
    stubs = tmp_path / "stubs"
    for name, text in STUBS.items():
        (stubs / name).parent.mkdir(parents=True, exist_ok=True)
        (stubs / name).write_text(textwrap.dedent(text))
    program = textwrap.dedent("""
        from trainer import devices, loop

        class Model:
            def to(self, device):
                return self

            def __call__(self, batch):
                return self

            def sum(self):
                return self

            def backward(self):
                pass

        class Batch:
            def to(self, device):
                return Model()

        class Optimizer:
            def step(self):
                pass

            def zero_grad(self):
                pass

        assert devices.device_count() == 0
        assert devices.pick_device().type == "cpu"
        assert devices.backend() == "gloo"
        assert loop.fit(Model(), [Batch()], Optimizer()).type == "cpu"
        print("cpu path ran")
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stubs), str(tree)])}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cpu path ran" in done.stdout
    assert "htcore = None" in (tree / "trainer" / "loop.py").read_text()


def test_a_second_run_changes_nothing_and_output_dir_writes_the_same_bytes(tmp_path, monkeypatch):
    tree = _copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(main, ["rewrite", "--no-cache", "--output-dir", "out", "project"], catch_exceptions=False)
    _rewrite(tree)
    for path in tree.rglob("*.py"):
        assert (tmp_path / "out" / "project" / path.relative_to(tree)).read_bytes() == path.read_bytes(), path
    first = {p: p.read_bytes() for p in tree.rglob("*.py")}
    _rewrite(tree)
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == first


def test_a_script_keeps_the_plain_import_and_single_device_code_is_ported():
    result = port("""
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    """)
    output = result.new_source.decode()
    assert "try:" not in output and "import habana_frameworks.torch.core as htcore" in output
    assert 'device = "hpu" if torch.hpu.is_available() else "cpu"' in output


def test_the_arms_of_a_chain_that_is_extended_are_not_reported_one_by_one():
    result = port("""
        import torch

        if torch.backends.mps.is_available():
            device = torch.device("mps")
        elif torch.cuda.is_available():
            device = torch.device("cuda")
            torch.cuda.empty_cache()
    """)
    assert [f.code for f in result.findings if f.line > 2] == ["HPU620"]


def test_every_report_says_which_action_was_taken(tmp_path):
    tree = _copy(tmp_path)
    (tree / "held.py").write_text(
        "import torch\nimport triton\n\n\ndef run(x):\n    if torch.cuda.is_available():\n"
        "        return triton_kernel(x).cuda()\n    return x\n"
    )
    runner = CliRunner()

    def report(*options, stream="stdout"):
        return getattr(runner.invoke(main, ["check", "--no-cache", *options, str(tree)]), stream)

    import json

    findings = json.loads(report("--format", "json"))["findings"]
    taken = {(f["path"].rsplit("/", 1)[-1], f["code"], f["action"]) for f in findings}
    assert ("devices.py", "HPU620", "extend") in taken
    assert ("loop.py", "HPU201", "port") in taken
    assert ("held.py", "HPU111", "keep") in taken
    assert ("held.py", "HPU615", "report") in taken
    statistics = report("--statistics", stream="stderr")
    counts = {f["action"]: 0 for f in findings}
    for f in findings:
        counts[f["action"]] += 1
    assert (
        f"actions: {counts.get('port', 0)} ported, {counts['extend']} extended, {counts['keep']} kept, "
        f"{counts['report']} reported for a person"
    ) in statistics
    rows = json.loads(report("--statistics", "--format", "json"))
    assert sum(row["actions"]["extend"] for row in rows) == counts["extend"] == 4
    assert f"{counts['extend']} extended" in report("--format", "markdown")
    sarif = json.loads(report("--format", "sarif"))
    assert {r["properties"]["action"] for r in sarif["runs"][0]["results"]} == set(counts)


def test_shared_code_of_a_project_that_serves_several_devices_is_kept(tmp_path):
    tree = _copy(tmp_path)
    shared = "import torch\n\n\ndef place(batch):\n    return batch.to(\"cuda\")\n"
    (tree / "trainer" / "shared.py").write_text(shared)
    script = "import torch\n\nbatch = torch.ones(2).to(\"cuda\")\n"
    (tree / "train.py").write_text(script)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", str(tree)])
    import json

    findings = json.loads(result.stdout)["findings"]
    kept = [f for f in findings if f["path"].endswith("shared.py") and f["code"] == "HPU110"]
    assert kept and kept[0]["action"] == "keep" and kept[0]["kept"]["reason"] == "shared-code"
    assert "serves several devices" in kept[0]["message"]
    _rewrite(tree)
    assert (tree / "trainer" / "shared.py").read_text() == shared  # NVIDIA users run what they ran
    assert '.to("hpu")' in (tree / "train.py").read_text()  # a script of its own is ported


def test_a_script_that_serves_several_devices_still_gets_the_lazy_mode_setting(tmp_path):
    # diffusers' training scripts test for MPS beside CUDA: their shared code
    # stays, but PT_HPU_LAZY_MODE, which only Gaudi's bridge reads, is set.
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse\n\nimport torch\n\n\ndef main(args):\n"
        "    if torch.backends.mps.is_available():\n        args.native_amp = False\n"
        "    loss = model(batch.to(\"cuda\"))\n    loss.backward()\n\n\n"
        "if __name__ == \"__main__\":\n    main(argparse.ArgumentParser().parse_args())\n"
    )
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", "--unsafe-fixes", str(script)])
    assert result.exit_code in (0, 1), result.stderr
    text = script.read_text()
    assert 'os.environ.setdefault("PT_HPU_LAZY_MODE", "1")' in text
    assert 'batch.to("cuda")' in text  # the shared code itself stays


def test_the_json_report_gives_the_regions_kept_or_extended(tmp_path):
    import json

    tree = _copy(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", str(tree)])
    regions = json.loads(result.stdout)["regions"]
    devices = [(r["action"], r["line"], r["end_line"]) for r in regions if r["path"].endswith("devices.py")]
    # The chains of device_count (from its CUDA arm on) and synchronize, extended.
    assert ("extend", 8, 11) in devices and ("extend", 30, 33) in devices


def test_the_marked_arm_is_found_beside_classes_with_bases():
    """A class's own parentheses are no expression's: finding the HPU arm's
    value must pass over them (a file failed with a TypeError once)."""
    import libcst as cst

    from hpu_port.visitors.extend_dispatch import _MarkFinder, _marked

    module = cst.parse_module('class Trainer(Base):\n    pass\n\n\nx = 1\n')
    marked = _marked(cst.parse_expression('"hpu"'))
    module = module.with_changes(body=[*module.body, cst.SimpleStatementLine([cst.Expr(marked)])])
    finder = _MarkFinder()
    module.visit(finder)
    assert finder.found is not None and finder.found.value == '"hpu"'


def test_a_gaudi_only_fork_can_port_the_shared_code_too(tmp_path):
    tree = _copy(tmp_path)
    shared = "import torch\n\n\ndef place(batch):\n    return batch.to(\"cuda\")\n"
    (tree / "trainer" / "shared.py").write_text(shared)
    _rewrite(tree, "--port-shared-code")
    assert '.to("hpu")' in (tree / "trainer" / "shared.py").read_text()
    configured = tmp_path / "configured"
    shutil.copytree(PACKAGE, configured)
    (configured / "trainer" / "shared.py").write_text(shared)
    (configured / "pyproject.toml").write_text("[tool.hpu-port]\nport-shared-code = true\n")
    _rewrite(configured)
    assert '.to("hpu")' in (configured / "trainer" / "shared.py").read_text()


def test_code_that_is_right_as_it_is_lies_in_a_region_of_the_report(tmp_path):
    """Nothing is said of another device's arm, or of a list that names the
    HPU already; the report's regions still cover those lines, and a kept
    function's decorators."""
    import json

    (tmp_path / "run.py").write_text(
        "import torch\n\n\ndef count():\n    if is_hpu_available():\n        return torch.hpu.device_count()\n"
        "    else:\n        return torch.cuda.device_count()\n\n\nDEVICES = (\"xpu\", \"cuda\", \"hpu\")\n\n\n"
        "@cuda_python_required\ndef graph():\n    import tensorrt\n    return tensorrt.Builder()\n"
    )
    report = json.loads(CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", str(tmp_path / "run.py")]).stdout)
    covered = {line for r in report["regions"] for line in range(r["line"], r["end_line"] + 1)}
    said = {line for f in report["findings"] for line in range(f["line"], f["end_line"] + 1)}
    assert {8, 11, 14} <= covered | said


def test_a_device_picked_by_ifs_that_override_each_other_gains_an_hpu_if():
    """alpaca-lora's generate.py: CUDA or the CPU, then MPS in a `try`; NVIDIA
    and Mac users keep their device, Gaudi gets its own."""
    source = textwrap.dedent('''
        import torch

        if torch.cuda.is_available():
            device = "cuda"
        else:
            device = "cpu"

        try:
            if torch.backends.mps.is_available():
                device = "mps"
        except:  # noqa: E722
            pass
    ''').lstrip()
    result = port(source)
    output = result.new_source.decode()
    removed = [line for line in difflib.ndiff(source.splitlines(), output.splitlines()) if line.startswith("- ")]
    assert removed == []
    assert 'if hasattr(torch, "hpu") and torch.hpu.is_available():\n    device = "hpu"\n' in output
    assert output.index('device = "hpu"') < output.index('device = "mps"')


def test_a_table_and_a_match_over_devices_gain_an_hpu_entry_once_and_say_nothing_after():
    source = textwrap.dedent('''
        import torch

        BACKENDS = {
            "cuda": "nccl",
            "npu": "hccl",
        }


        def count(device_type):
            match device_type:
                case "cuda":
                    return torch.cuda.device_count()
                case "xpu":
                    return torch.xpu.device_count()
    ''').lstrip()
    first = port(source)
    output = first.new_source.decode()
    assert '    "cuda": "nccl",\n    "hpu": "hccl",\n    "npu": "hccl",\n' in output
    assert 'case "hpu":\n            return torch.hpu.device_count()\n        case "xpu":' in output
    second = port(output)
    assert second.new_source is None or second.new_source.decode() == output
    assert not [f for f in second.findings if f.code in ("HPU190", "HPU615", "HPU620")]


def _write_project(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())


ENUM_PROJECT = {
    "trainer/__init__.py": "",
    "trainer/devices.py": """
        import enum
        import importlib.util


        class DeviceType(str, enum.Enum):
            CUDA = "cuda"
            NPU = "npu"
            {hpu}CPU = "cpu"


        def is_npu_available():
            return importlib.util.find_spec("torch_npu") is not None


        def is_hpu_available():
            return importlib.util.find_spec("habana_frameworks") is not None
    """,
    "trainer/dist.py": """
        import torch

        from .devices import DeviceType, is_npu_available

        BACKENDS = {DeviceType.CUDA: "nccl", DeviceType.NPU: "hccl", DeviceType.CPU: "gloo"}


        def device_count():
            if is_npu_available():
                return torch.npu.device_count()
            elif torch.cuda.is_available():
                return torch.cuda.device_count()
            return 0
    """,
}


def test_an_enum_keyed_table_gains_the_member_the_project_enum_has_and_arms_use_its_probe(tmp_path):
    files = {**ENUM_PROJECT, "trainer/devices.py": ENUM_PROJECT["trainer/devices.py"].replace("{hpu}", 'HPU = "hpu"\n            ')}
    _write_project(tmp_path, files)
    assert _rewrite(tmp_path).exit_code in (0, 1)
    after = (tmp_path / "trainer" / "dist.py").read_text()
    assert 'BACKENDS = {DeviceType.CUDA: "nccl", DeviceType.HPU: "hccl", DeviceType.NPU: "hccl", DeviceType.CPU: "gloo"}' in after
    # The project's own probe, imported the way the module imports its siblings.
    assert "from .devices import is_hpu_available\n" in after
    assert "    elif is_hpu_available():\n        return torch.hpu.device_count()\n" in after
    assert "torch.cuda.device_count()" in after
    assert _rewrite(tmp_path).output.count("would be rewritten") == 0
    assert (tmp_path / "trainer" / "dist.py").read_text() == after


def test_an_enum_without_an_hpu_member_leaves_its_table_alone_and_says_so(tmp_path):
    files = {**ENUM_PROJECT, "trainer/devices.py": ENUM_PROJECT["trainer/devices.py"].replace("{hpu}", "")}
    _write_project(tmp_path, files)
    before = (tmp_path / "trainer" / "dist.py").read_text()
    result = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU620", str(tmp_path)], catch_exceptions=False)
    assert "`DeviceType` has no `HPU` member: add it, then the `DeviceType.HPU` entry" in result.output
    _rewrite(tmp_path)
    after = (tmp_path / "trainer" / "dist.py").read_text()
    table = before.splitlines()[4]
    assert table.startswith("BACKENDS = ") and table in after.splitlines()


def test_where_an_added_arm_makes_the_gaudi_import_optional_every_use_of_it_is_too():
    source = textwrap.dedent('''
        import torch

        device = "cpu"
        if torch.cuda.is_available():
            device = "cuda"
        elif torch.backends.mps.is_available():
            device = "mps"
        for x in data:
            loss = model(x.to(device))
            loss.backward()
            optimizer.step()
    ''').lstrip()
    output = port_source("train.py", source.encode(), make_ruleset(), True).new_source.decode()
    assert 'elif hasattr(torch, "hpu") and torch.hpu.is_available():\n    device = "hpu"\n' in output
    assert "except ImportError:" in output
    # Without Gaudi's software `htcore` is None: a bare `htcore.mark_step()` would fail there.
    assert output.count("if htcore is not None:\n        htcore.mark_step()") == 2
    assert output.count("htcore.mark_step()") == 2


def test_a_script_that_chooses_among_devices_keeps_what_all_devices_share():
    source = textwrap.dedent('''
        import torch

        device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
        device_type = "cuda" if "cuda" in device else "cpu"
        if torch.cuda.is_available():
            torch.cuda.manual_seed(42)
        print(torch.cuda.max_memory_allocated())
    ''').lstrip()
    result = port_source("train.py", source.encode(), make_ruleset(), True)
    output = result.new_source.decode()
    removed = [line for line in difflib.ndiff(source.splitlines(), output.splitlines()) if line.startswith("- ")]
    assert len(removed) == 1 and '"hpu" if hasattr(torch, "hpu") and torch.hpu.is_available()' in output
    for line in source.splitlines()[3:]:
        assert line in output.splitlines()  # NVIDIA's code, and what every device runs, byte for byte
    shared = [f for f in result.findings if f.kept == "shared-code" and not f.applied]
    assert any("max_memory_allocated" in f.message for f in shared)


def test_the_tests_of_a_project_that_serves_several_devices_stay_as_they_are(tmp_path):
    _write_project(tmp_path, {
        "lib/__init__.py": "",
        "lib/devices.py": """
            import torch


            def device():
                if torch.cuda.is_available():
                    return "cuda"
                elif torch.backends.mps.is_available():
                    return "mps"
                return "cpu"
        """,
        "tests/test_model.py": """
            import torch
            from lib.devices import device


            def test_seed():
                torch.cuda.manual_seed(0)
                assert device() in ("cuda", "mps", "cpu")
        """,
    })
    before = (tmp_path / "tests" / "test_model.py").read_bytes()
    _rewrite(tmp_path)
    assert (tmp_path / "tests" / "test_model.py").read_bytes() == before
    assert 'return "hpu"' in (tmp_path / "lib" / "devices.py").read_text()


def test_an_added_hpu_arm_initialises_the_gaudi_backend_whatever_the_caller_passes():
    source = textwrap.dedent('''
        import torch
        import torch.distributed as dist


        def init(backend="nccl"):
            if torch.npu.is_available():
                dist.init_process_group(backend='hccl')
            elif torch.cuda.is_available():
                torch.cuda.set_device(0)
                dist.init_process_group(backend=backend)
    ''').lstrip()
    output = port(source).new_source.decode()
    assert "    elif hasattr(torch, \"hpu\") and torch.hpu.is_available():\n        torch.hpu.set_device(0)\n        dist.init_process_group(backend=\"hccl\")\n" in output
    assert "import habana_frameworks.torch.distributed.hccl" in output
    assert "        dist.init_process_group(backend=backend)\n" in output  # CUDA's arm


def test_a_probe_shown_in_a_comment_or_docstring_does_not_make_a_file_serve_several_devices():
    source = textwrap.dedent('''
        """Example: `if torch.npu.is_available(): ...` picks Ascend."""
        import torch

        # like `if is_torch_xla_available(): import torch_xla`
        torch.cuda.synchronize()
    ''').lstrip()
    output = port_source("train.py", source.encode(), make_ruleset(), True).new_source.decode()
    assert "torch.hpu.synchronize()" in output
    probing = source.replace("torch.cuda.synchronize()", 'if torch.npu.is_available(): pass\ntorch.cuda.synchronize()')
    result = port_source("train.py", probing.encode(), make_ruleset(), True)
    assert b"torch.cuda.synchronize()" in (result.new_source or probing.encode())  # shared by NVIDIA and Ascend: kept
    assert any(f.kept == "shared-code" and "synchronize" in f.message for f in result.findings)


# A package's face detector that accepts the devices it serves (Wav2Lip's layout).
DETECTOR = '''
import torch


class FaceDetector:
    def __init__(self, device):
        if "cpu" not in device and "cuda" not in device:
            raise ValueError(device)
        if device not in ("cpu", "cuda"):
            raise ValueError(device)
        self.device = device
'''


def test_a_package_module_that_accepts_the_cpu_and_cuda_accepts_the_hpu_too(tmp_path):
    package = tmp_path / "face_detection"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text(DETECTOR.lstrip("\n"))
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    # NVIDIA users still pass "cuda": each test gains the HPU beside it.
    assert '+        if "cpu" not in device and "cuda" not in device and "hpu" not in device:' in diff
    assert '+        if device not in ("cpu", "cuda", "hpu"):' in diff


def test_a_script_that_accepts_the_cpu_and_cuda_is_ported_to_the_hpu(tmp_path):
    (tmp_path / "detect.py").write_text(DETECTOR.lstrip("\n"))
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    assert '+        if "cpu" not in device and "hpu" not in device:' in diff
    assert '+        if device not in ("cpu", "hpu"):' in diff


MEASURED_IN_ONE_METHOD_PRINTED_IN_ANOTHER = """
import torch


class MemoryTrace:
    def __exit__(self, *exc):
        if torch.xpu.is_available():
            self.peak = torch.xpu.max_memory_allocated()
        elif torch.cuda.is_available():
            self.peak = torch.cuda.memory_stats()["active_bytes.all.peak"]

    def print_stats(self):
        device = None
        if torch.xpu.is_available():
            device = "XPU"
        elif torch.cuda.is_available():
            device = "CUDA"
        if device:
            print(f"Peak {device} memory was {self.peak}")
"""


def test_an_arm_that_reads_what_an_arm_without_a_twin_sets_is_held():
    """`__exit__`'s CUDA arm reads a memory key Gaudi's stats lack, so it gets
    no HPU twin; an HPU arm in `print_stats` would then print `self.peak`,
    which nothing set on Gaudi. Both are reported, neither is rewritten."""
    result = port(MEASURED_IN_ONE_METHOD_PRINTED_IN_ANOTHER)
    assert result.new_source is None
    printing = next(f for f in result.findings if f.line == 15 and f.code == "HPU620")
    assert printing.kept == "by-hand" and "`self.peak`" in printing.message


def test_an_arm_whose_attributes_are_set_elsewhere_too_is_extended():
    """With `self.peak` set in `__init__`, Gaudi prints a value either way:
    the HPU arm is added."""
    code = MEASURED_IN_ONE_METHOD_PRINTED_IN_ANOTHER.replace(
        "class MemoryTrace:\n", "class MemoryTrace:\n    def __init__(self):\n        self.peak = 0\n\n"
    )
    printing = ported(code).split("def print_stats")[1]
    assert 'elif torch.cuda.is_available():\n            device = "CUDA"\n        elif hasattr(torch, "hpu")' in printing
