"""Project facts: what a check guards may be NVIDIA-only through another module of the project."""

import os
import textwrap
import threading
from concurrent.futures import ProcessPoolExecutor

import pytest
from click.testing import CliRunner

from hpu_port import project
from hpu_port.cache import Cache
from hpu_port.cli import main
from hpu_port.project import find_facts
from hpu_port.runner import run
from tests.conftest import make_ruleset

LIBRARIES = {"triton", "tensorrt"}

# The layout of StyleGAN-style repositories: ops that build `.cu` sources
# through a helper module of the project, and a pure-PyTorch fallback.
PROJECT = {
    "torch_utils/__init__.py": "",
    "torch_utils/ops/__init__.py": "",
    "torch_utils/custom_ops.py": """
        import torch.utils.cpp_extension

        def get_plugin(module_name, sources, **build_kwargs):
            return torch.utils.cpp_extension.load(name=module_name, sources=sources, **build_kwargs)
    """,
    "torch_utils/ops/upfirdn2d.py": """
        import torch
        from .. import custom_ops

        _plugin = None

        def _init():
            global _plugin
            if _plugin is None:
                _plugin = custom_ops.get_plugin(module_name="upfirdn2d_plugin", sources=["upfirdn2d.cpp", "upfirdn2d.cu"])
            return True

        def upfirdn2d(x, f, impl="cuda"):
            if impl == "cuda" and x.device.type == "cuda" and _init():
                return _plugin.upfirdn2d(x, f)
            return x
    """,
    "train.py": """
        import torch
        from torch_utils.ops import upfirdn2d

        def warm_up():
            if torch.cuda.is_available():
                upfirdn2d._init()

        def step(x, f):
            return upfirdn2d.upfirdn2d(x.to("cuda"), f)
    """,
}


def _write(root, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def _facts(root):
    sources = {str(p): p.read_bytes() for p in root.rglob("*.py")}
    return find_facts(sources, LIBRARIES)


def test_a_function_that_builds_cuda_sources_through_a_helper_is_nvidia_only(tmp_path):
    _write(tmp_path, PROJECT)
    facts = _facts(tmp_path)
    assert "builds `upfirdn2d.cu` through `custom_ops.get_plugin`" in facts.why_nvidia_only(
        "torch_utils.ops.upfirdn2d._init"
    )
    # It chooses CUDA's path only under a condition: it has another one.
    assert facts.why_nvidia_only("torch_utils.ops.upfirdn2d.upfirdn2d") is None
    assert facts.why_nvidia_only("train.warm_up") is None
    assert facts.why_nvidia_only("torch_utils.custom_ops.get_plugin") is None  # builds what it is given
    assert facts.first_party == {"torch_utils", "train"}
    assert facts.module_name(str(tmp_path / "torch_utils" / "ops" / "upfirdn2d.py")) == "torch_utils.ops.upfirdn2d"


@pytest.mark.parametrize(
    "files, qualified, why",
    [
        pytest.param(
            {"kern.py": "import triton\n\ndef launch(x):\n    return triton.cdiv(x, 2)\n",
             "model.py": "from kern import launch\n\ndef forward(x):\n    return launch(x)\n"},
            "model.forward", "calls `kern.launch`", id="through-a-library-user",
        ),
        pytest.param(
            {"ext.py": "from torch.utils.cpp_extension import load\n_C = load('k', ['k.cu'])\n\ndef run(x):\n    return _C.run(x)\n"},
            "ext.run", "builds a CUDA extension (`k.cu`)", id="module-level-extension",
        ),
        pytest.param(
            {"pkg/__init__.py": "", "pkg/a.py": "import torch\n\ndef rng():\n    return torch.cuda._lazy_call(print)\n",
             "pkg/b.py": "from .a import rng\n\nclass Sampler:\n    def seed(self):\n        rng()\n",
             "pkg/c.py": "from pkg.b import Sampler\n\ndef go():\n    Sampler().seed()\n"},
            "pkg.b.Sampler.seed", "calls `a.rng`", id="relative-import-and-method",
        ),
        pytest.param(
            {"setup_ext.py": "from torch.utils.cpp_extension import CUDAExtension\n\ndef ext():\n    return CUDAExtension('x', ['x.cpp'])\n"},
            "setup_ext.ext", "builds a CUDA extension", id="cuda-extension",
        ),
    ],
)
def test_nvidia_only_definitions(tmp_path, files, qualified, why):
    _write(tmp_path, files)
    assert why in (_facts(tmp_path).why_nvidia_only(qualified) or "")


def test_a_cpu_extension_and_a_dispatcher_are_not_nvidia_only(tmp_path):
    _write(tmp_path, {
        "cpu_ext.py": "from torch.utils.cpp_extension import load\n\ndef build():\n    return load('k', ['k.cpp'])\n",
        "kern.py": "import triton\n\ndef launch(x):\n    return triton.cdiv(x, 2)\n",
        "model.py": "import torch\nfrom kern import launch\n\ndef forward(x):\n    if x.is_cuda:\n        return launch(x)\n    return x\n",
    })
    facts = _facts(tmp_path)
    assert facts.why_nvidia_only("cpu_ext.build") is None
    assert facts.why_nvidia_only("model.forward") is None
    assert facts.why_nvidia_only("kern.launch")


def test_guards_in_front_of_nvidia_only_project_code_are_kept(tmp_path):
    _write(tmp_path, PROJECT)
    result = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)])
    diff = result.stdout
    # The device test in front of `_init()` and the check around `_init()` stay CUDA's...
    assert "x.device.type == \"hpu\"" not in diff and "torch.hpu.is_available" not in diff
    # ...and what can run on Gaudi is still ported.
    assert '+    return upfirdn2d.upfirdn2d(x.to("hpu"), f)' in diff
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "the code it guards uses `torch_utils.ops.upfirdn2d._init`" in check
    assert "the code this test guards uses `_init`" in check


def test_a_run_on_one_file_reads_the_project_modules_it_imports(tmp_path):
    # A pre-commit hook names the changed file alone: the guard in front of
    # the project's CUDA-building helper stays, as in a run on the whole tree.
    _write(tmp_path, PROJECT)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    alone = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path / "train.py")]).stdout
    whole = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "the code it guards uses `torch_utils.ops.upfirdn2d._init`" in alone
    assert [line for line in alone.splitlines() if "train.py:" in line] == [line for line in whole.splitlines() if "train.py:" in line]


def test_a_run_on_one_module_of_a_package_that_serves_several_devices_keeps_its_shared_code(tmp_path):
    # Another module of the package probes the MPS: the package serves
    # several devices, whether the hook names that module or not.
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/devices.py": """
            import torch

            def pick():
                if torch.backends.mps.is_available():
                    return "mps"
                return "cpu"
        """,
        "pkg/dist.py": """
            import torch.distributed as dist

            def setup():
                dist.init_process_group("nccl")
        """,
    })
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    alone = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path / "pkg" / "dist.py")]).stdout
    whole = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "serves several devices" in alone
    assert [line for line in alone.splitlines() if "dist.py:" in line] == [line for line in whole.splitlines() if "dist.py:" in line]


def test_the_modules_a_file_imports_are_found_through_relative_imports_and_packages(tmp_path):
    from hpu_port.imported_modules import imported_project_files

    _write(tmp_path, PROJECT)
    train = tmp_path / "train.py"
    found = imported_project_files({str(train): train.read_bytes()}, str(tmp_path))
    names = sorted(os.path.relpath(path, tmp_path) for path in found)
    assert names == [
        os.path.join("torch_utils", "__init__.py"),
        os.path.join("torch_utils", "custom_ops.py"),
        os.path.join("torch_utils", "ops", "__init__.py"),
        os.path.join("torch_utils", "ops", "upfirdn2d.py"),
    ]


def test_workers_started_before_the_facts_were_found_port_with_them(tmp_path, monkeypatch):
    """A large cold run starts its workers while the facts are found; each
    batch brings them, and the workers' results are those of one process."""
    from hpu_port import parallel

    _write(tmp_path, PROJECT)
    alone = run([str(tmp_path)], make_ruleset(), apply=True, jobs=1)
    started = []
    original = parallel.Pool.__init__
    monkeypatch.setattr(parallel.Pool, "__init__", lambda self, *a: started.append(a) or original(self, *a))
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "SCREEN_IN_POOL_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_FILES", 1)
    monkeypatch.setattr(parallel, "LEADING_BATCH_FILES", 1)
    # The workers are given their files first, then the facts are found.
    submitted, submitted_before_finding = [], []
    original_submit = ProcessPoolExecutor.submit
    monkeypatch.setattr(ProcessPoolExecutor, "submit", lambda self, fn, *a: submitted.append(fn) or original_submit(self, fn, *a))
    original_find = project.find_facts
    monkeypatch.setattr(project, "find_facts", lambda *a: submitted_before_finding.append(submitted.count(parallel._port_batch)) or original_find(*a))
    # A new rule set: facts found for the run above must not ride along with it.
    pooled = run([str(tmp_path)], make_ruleset(), apply=True, jobs=2)
    assert started
    assert submitted_before_finding == [len(PROJECT)]
    outcome = lambda summary: [(r.path, r.findings, r.new_source) for r in summary.results]
    assert outcome(pooled) == outcome(alone)
    messages = [f.message for r in pooled.results for f in r.findings]
    assert any("the code it guards uses `torch_utils.ops.upfirdn2d._init`" in m for m in messages)


def test_workers_waiting_for_facts_that_are_never_found_do_not_hang_the_run(tmp_path, monkeypatch):
    from hpu_port import parallel

    _write(tmp_path, PROJECT)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "SCREEN_IN_POOL_BYTES", 0)

    def broken(*args):
        raise OSError("no facts today")

    monkeypatch.setattr(project, "find_facts", broken)
    outcome = []

    def attempt():
        try:
            run([str(tmp_path)], make_ruleset(), apply=True, jobs=2)
        except OSError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the run hung on workers waiting for the facts"
    assert outcome == ["no facts today"]


def test_a_new_module_of_the_project_changes_the_cached_answer(tmp_path):
    """The facts are part of what a cached result depends on."""
    project = tmp_path / "proj"
    _write(project, {"train.py": "import torch\nfrom mylib import knn\n\ndef run(x):\n    return knn(x, gpu=torch.cuda.is_available())\n"})
    cache = Cache(tmp_path / "cache")
    before = run([str(project)], make_ruleset(), apply=False, cache=cache)
    assert any("handed to `gpu=`" in f.message for f in before.results[0].findings)
    _write(project, {"mylib.py": "def knn(x, gpu):\n    return x\n"})
    after = run([str(project)], make_ruleset(), apply=False, cache=Cache(tmp_path / "cache"))
    (train,) = [r for r in after.results if r.path.endswith("train.py")]
    assert not train.from_cache
    assert not any("handed to `gpu=`" in f.message for f in train.findings)
    assert any(f.code == "HPU101" and f.fixable for f in train.findings)


def test_the_per_file_core_reads_no_disk(tmp_path, monkeypatch):
    """What is beside a file changes nothing unless the runner found it."""
    from hpu_port.engine import port_bytes

    (tmp_path / "mylib.py").write_text("def knn(x, gpu):\n    return x\n")
    source = b"import torch\nfrom mylib import knn\n\ndef run(x):\n    return knn(x, gpu=torch.cuda.is_available())\n"
    path = str(tmp_path / "train.py")

    def no_disk(*args, **kwargs):
        raise AssertionError("the per-file core looked at the disk")

    for name in ("isfile", "isdir", "exists"):
        monkeypatch.setattr(os.path, name, no_disk)
    monkeypatch.setattr(os, "listdir", no_disk)
    result = port_bytes(path, source, make_ruleset(), False)
    assert result.error is None
    assert any("handed to `gpu=`" in f.message for f in result.findings)


def test_a_package_serves_several_devices_when_one_of_its_modules_probes_another_accelerator(tmp_path):
    files = {
        "multi/__init__.py": b"",
        "multi/devices.py": b"import torch\nuse = torch.xpu.is_available()\n",
        "multi/sub/__init__.py": b"",
        "multi/sub/ops.py": b"x = 1\n",
        "single/__init__.py": b"",
        "single/ops.py": b"import torch\nuse = torch.cuda.is_available()\n",
        "script.py": b"import torch\nuse = torch.backends.mps.is_available()\n",
    }
    facts = _facts_of(tmp_path, files, ["xpu", "mps"])
    assert facts.shared_among_devices(str(tmp_path / "multi" / "sub" / "ops.py"))
    assert not facts.shared_among_devices(str(tmp_path / "single" / "ops.py"))
    assert not facts.shared_among_devices(str(tmp_path / "script.py"))  # a script is not shared
    assert facts.digest() != find_facts({str(tmp_path / n): d for n, d in files.items()}, LIBRARIES).digest()


def test_a_folder_imported_by_dotted_name_serves_several_devices_as_a_package_does(tmp_path):
    files = {
        "tools/server/model_manager.py": b"import torch\nif torch.backends.mps.is_available():\n    device = 'mps'\n",
        "tools/server/views.py": b"from tools.server.model_utils import encode\nfrom tools.server.api_utils import parse\n",
        "tools/server/model_utils.py": b"import torch\n",
        "tools/server/api_utils.py": b"x = 1\n",
        "scripts/infer_mps.py": b"import torch\nuse = torch.backends.mps.is_available()\n",
        "scripts/train.py": b"import torch\nx = torch.zeros(1).cuda()\n",
    }
    facts = _facts_of(tmp_path, files, ["xpu", "mps"])
    assert facts.shared_among_devices(str(tmp_path / "tools" / "server" / "model_utils.py"))
    assert facts.shared_among_devices(str(tmp_path / "tools" / "server" / "api_utils.py"))
    # Scripts side by side that never import each other are separate programs.
    assert not facts.shared_among_devices(str(tmp_path / "scripts" / "train.py"))


# A trainer class of the project whose `backward` scales the loss and runs the
# backward pass itself (guided-diffusion's MixedPrecisionTrainer), and a loop
# of another module that calls it in place of `loss.backward()`.
TRAINER = {
    "diffusion/__init__.py": "",
    "diffusion/fp16_util.py": """
        import torch


        class MixedPrecisionTrainer:
            def backward(self, loss):
                if self.use_fp16:
                    (loss * 2 ** self.lg_loss_scale).backward()
                else:
                    loss.backward()
    """,
    "diffusion/train_util.py": """
        import torch
        from accelerate import Accelerator

        from .fp16_util import MixedPrecisionTrainer


        class TrainLoop:
            def __init__(self, model):
                self.model = model.cuda()
                self.mp_trainer = MixedPrecisionTrainer(model)
                self.accelerator = Accelerator()

            def run_step(self, batch):
                self.mp_trainer.backward(self.model(batch).mean())

            def other_step(self, batch):
                self.accelerator.backward(self.model(batch).mean())


        def loop(model, batch):
            trainer = MixedPrecisionTrainer(model)
            trainer.backward(model(batch).mean())
    """,
}


def test_a_backward_method_of_the_project_that_ends_with_a_backward_pass_is_a_fact(tmp_path):
    _write(tmp_path, TRAINER)
    assert _facts(tmp_path).syncing_methods == frozenset({"MixedPrecisionTrainer.backward"})
    (tmp_path / "diffusion" / "fp16_util.py").write_text("class MixedPrecisionTrainer:\n    def backward(self, loss):\n        if self.ok:\n            loss.backward()\n")
    assert not _facts(tmp_path).syncing_methods  # one path has no backward pass


def test_a_call_of_that_method_needs_no_mark_step_after_it(tmp_path):
    _write(tmp_path, TRAINER)
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0, result.output
    trainer = (tmp_path / "diffusion" / "fp16_util.py").read_text()
    loop = (tmp_path / "diffusion" / "train_util.py").read_text()
    assert trainer.count("htcore.mark_step()") == 2  # after each backward pass of the trainer
    # Only after the third-party `accelerator.backward`, whose pass the port does not see.
    assert loop.count("htcore.mark_step()") == 1
    assert "self.accelerator.backward(self.model(batch).mean())\n        if htcore is not None:\n            htcore.mark_step()" in loop


def test_a_module_that_imports_an_extension_the_project_builds_from_cuda_is_kept_whole(tmp_path):
    """Swin's fused window kernel: built from `.cu` by the project's setup
    script, tested by a module that imports it at its top."""
    _write(tmp_path, {
        "kernels/setup.py": """
            from setuptools import setup
            from torch.utils.cpp_extension import BuildExtension, CUDAExtension

            setup(name="window_process", ext_modules=[CUDAExtension("window_process", ["kernel.cu"])])
        """,
        "kernels/unit_test.py": """
            import torch
            import window_process

            def test_forward():
                x = torch.randn(4).cuda()
                assert window_process.forward(x) is not None
        """,
        "train.py": """
            import torch

            x = torch.randn(4).cuda()
        """,
    })
    assert _facts(tmp_path).cuda_extensions == frozenset({"window_process"})
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
    assert result.exit_code in (0, 1), result.output
    assert ".cuda()" in (tmp_path / "kernels" / "unit_test.py").read_text()
    assert '.to("hpu")' in (tmp_path / "train.py").read_text()


def test_a_scaler_is_kept_where_the_project_reads_its_scale(tmp_path):
    """Swin's wrapper returns the scaler's state; the loop reads its "scale"
    in another module: a disabled scaler's empty state would fail there."""
    files = {
        "utils.py": """
            import torch

            class NativeScaler:
                def __init__(self):
                    self._scaler = torch.cuda.amp.GradScaler()

                def state_dict(self):
                    return self._scaler.state_dict()
        """,
        "main.py": """
            from utils import NativeScaler

            scaler = NativeScaler()
            value = scaler.state_dict()["scale"]
        """,
    }
    _write(tmp_path, files)
    result = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)])
    assert "HPU303" in result.output and 'reads the scaler state\'s "scale"' in result.output
    assert "main.py:4" in result.output
    (tmp_path / "main.py").write_text("from utils import NativeScaler\n\nscaler = NativeScaler()\n")
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
    assert "GradScaler(enabled=False)" in (tmp_path / "utils.py").read_text()


def test_a_folder_of_modules_below_a_package_is_a_namespace_package(tmp_path):
    """`fastchat/llm_judge/` has no `__init__.py`, yet other modules import
    `fastchat.llm_judge.gen_model_answer`: its modules are the package's."""
    _write(tmp_path, {
        "fastchat/__init__.py": "",
        "fastchat/llm_judge/gen_model_answer.py": "import torch\n",
        "scripts/run.py": "import torch\n",
    })
    facts = _facts(tmp_path)
    assert facts.module_name(str(tmp_path / "fastchat" / "llm_judge" / "gen_model_answer.py")) == "fastchat.llm_judge.gen_model_answer"
    assert str(tmp_path / "scripts") not in facts.packages


def test_device_enums_and_the_projects_own_gaudi_probes_are_facts(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/devices.py": """
            from enum import Enum


            class DeviceType(Enum):
                CUDA = "cuda"
                HPU = "hpu"


            class Color(Enum):
                RED = 1


            def is_hpu_available():
                return True


            def is_gaudi_available(strict):
                return strict
        """,
    })
    facts = _facts(tmp_path)
    assert facts.enum_members("DeviceType") == ("CUDA", "HPU")
    assert facts.enum_members("Color") is None
    assert facts.hpu_probes == ("pkg.devices.is_hpu_available",)
    assert facts.digest() != find_facts({}, LIBRARIES).digest()


NVIDIA_MODULES = {
    "pkg/__init__.py": "",
    "pkg/fp8/__init__.py": """
        from pkg.fp8.linear import FP8Linear
    """,
    "pkg/fp8/linear.py": """
        import torch
        import transformer_engine as te


        class FP8Linear(torch.nn.Module):
            pass
    """,
    "pkg/moe.py": """
        try:
            import grouped_gemm.ops as ops
        except ImportError:
            raise RuntimeError("install grouped_gemm")
    """,
    "pkg/optional.py": """
        try:
            import transformer_engine as te
        except ImportError:
            te = None
    """,
    "pkg/model.py": """
        import torch
        from pkg.fp8 import FP8Linear
    """,
    "tests/test_fp8.py": """
        import torch
        from pkg.fp8 import FP8Linear


        def test_linear():
            layer = FP8Linear().to("cuda")
            assert layer is not None
    """,
    "tests/test_model.py": """
        import torch
        from pkg.model import torch as t


        def test_model():
            assert torch.zeros(1, device="cuda").sum() == 0
    """,
}


def test_modules_that_import_an_nvidia_only_library_at_their_top_are_facts(tmp_path):
    _write(tmp_path, NVIDIA_MODULES)
    facts = find_facts({str(p): p.read_bytes() for p in tmp_path.rglob("*.py")}, LIBRARIES | {"transformer_engine*", "grouped_gemm"})
    assert "transformer_engine" in facts.why_nvidia_module("pkg.fp8.linear")
    assert "pkg.fp8.linear" in facts.why_nvidia_module("pkg.fp8")  # the package loads it
    assert "grouped_gemm" in facts.why_nvidia_module("pkg.moe")  # a `try` that raises again is no option
    assert facts.why_nvidia_module("pkg.optional") is None
    # Only one step: a module that imports such a package is not itself a fact.
    assert facts.why_nvidia_module("pkg.model") is None


def test_a_test_of_nvidia_only_code_stays_and_other_tests_are_ported(tmp_path):
    from click.testing import CliRunner
    from hpu_port.cli import main

    _write(tmp_path, NVIDIA_MODULES)
    before = (tmp_path / "tests" / "test_fp8.py").read_text()
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    assert (tmp_path / "tests" / "test_fp8.py").read_text() == before
    assert 'device="hpu"' in (tmp_path / "tests" / "test_model.py").read_text()
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert "test_fp8.py:1:1: HPU615" in check.output and "pkg.fp8" in check.output


# The shape of RWKV-style models: an autograd Function around an extension the
# module builds from `.cu` sources, and a wrapper that moves its inputs.
KERNEL_MODULE = {
    "model.py": """
        import torch
        from torch.utils.cpp_extension import load

        wkv_cuda = load(name="wkv", sources=["cuda/wkv_op.cpp", "cuda/wkv_cuda.cu"])

        class WKV(torch.autograd.Function):
            @staticmethod
            def forward(ctx, w, k):
                y = torch.empty(k.shape, device="cuda")
                wkv_cuda.forward(w, k, y)
                return y

        def RUN_CUDA(w, k):
            return WKV.apply(w.cuda(), k.cuda())

        def embed(tokens):
            return tokens.to("cuda")
    """,
}


def test_an_autograd_function_around_a_built_kernel_and_its_callers_are_nvidia_only(tmp_path):
    _write(tmp_path, KERNEL_MODULE)
    facts = _facts(tmp_path)
    assert "uses `wkv_cuda`, bound where the module builds a CUDA extension (`wkv_cuda.cu`)" in facts.why_nvidia_only("model.WKV.forward")
    assert "calls `WKV.apply`" in facts.why_nvidia_only("model.RUN_CUDA")
    assert facts.why_nvidia_only("model.embed") is None


def test_the_buffers_a_cuda_kernel_is_handed_stay_on_the_cuda_device(tmp_path):
    _write(tmp_path, KERNEL_MODULE)
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    assert 'device="hpu"' not in diff and "w.to(\"hpu\")" not in diff
    assert '+    return tokens.to("hpu")' in diff  # what can run on Gaudi is ported
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "HPU615 `forward` is not ported: it uses `wkv_cuda`" in check
    assert "HPU615 `RUN_CUDA` is not ported: it calls `WKV.apply`" in check


def test_a_package_a_multi_device_script_imports_serves_those_devices(tmp_path):
    # nanoVLM-style: train.py picks CUDA, MPS or the CPU and runs data/'s code on each.
    files = {
        "train.py": b"import torch\nfrom data.loaders import step\nuse = torch.backends.mps.is_available()\n",
        "data/__init__.py": b"",
        "data/loaders.py": b"import torch\nx = torch.tensor(1, device=torch.cuda.current_device())\n",
        "other/__init__.py": b"",
        "other/ops.py": b"x = 1\n",
        "src/app/cli.py": b"import torch\nimport app.models.net\nuse = torch.xpu.is_available()\n",
        "src/app/models/__init__.py": b"",
        "src/app/models/net.py": b"x = 1\n",
    }
    facts = _facts_of(tmp_path, files, ["xpu", "mps"])
    assert facts.shared_among_devices(str(tmp_path / "data" / "loaders.py"))
    assert not facts.shared_among_devices(str(tmp_path / "other" / "ops.py"))
    # A namespace package without `__init__.py` above its packages (a `src/` layout).
    assert facts.shared_among_devices(str(tmp_path / "src" / "app" / "models" / "net.py"))


def _facts_of(tmp_path, files: dict, other_devices):
    """The project facts of ``files`` (relative name: bytes), written under ``tmp_path``."""
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return find_facts({str(tmp_path / n): d for n, d in files.items()}, LIBRARIES, other_devices)


TRITON_TESTS = {
    # mamba-style: every test runs a fixture that skips unless Triton imports.
    "tests/test_kernels.py": b'''import pytest
import torch


def _require_kernels():
    if not torch.cuda.is_available():
        pytest.skip("CUDA is required")
    pytest.importorskip("triton")


@pytest.fixture(scope="module", autouse=True)
def _deps():
    _require_kernels()


def test_step():
    x = torch.ones(2, device="cuda")
    assert x.sum() == 2
''',
    # A fixture that loads Triton modules, the tests that take it and their helpers.
    "tests/test_ops.py": b'''import pytest
import torch


@pytest.fixture(scope="module")
def mods():
    import triton
    return triton


def build_inputs(*, mods, n):
    return torch.randn(n, device="cuda")


def test_forward(mods):
    assert build_inputs(mods=mods, n=2).shape == (2,)


def test_reference():
    assert torch.ones(2, device="cuda").sum() == 2
''',
}


def test_tests_of_code_only_nvidia_runs_are_kept_with_their_fixtures_and_helpers(tmp_path):
    _facts_of(tmp_path, TRITON_TESTS, [])
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "every test in it runs the fixture `_deps`, which calls `test_kernels._require_kernels`, which needs `triton`" in check
    assert "`build_inputs` is not ported" in check
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    assert "test_kernels.py" not in diff
    # A test that needs no Triton is ported as usual.
    assert '+    assert torch.ones(2, device="hpu").sum() == 2' in diff


def test_a_module_under_a_package_through_a_namespace_folder_imports_gaudi_optionally(tmp_path):
    # StableCascade-style: modules/cnet_modules/face_id/arcface.py, imported by modules/controlnet.py.
    files = {
        "modules/__init__.py": b"",
        "modules/controlnet.py": b"from .cnet_modules.face_id.arcface import Detector\n",
        "modules/cnet_modules/face_id/arcface.py": b'import torch\n\n\nclass Detector:\n    def __init__(self, device="cuda"):\n        self.device = device\n',
        "train.py": b"import torch\n\nx = torch.zeros(2).cuda()\n",
    }
    _facts_of(tmp_path, files, [])
    assert CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)]).exit_code == 0
    module = (tmp_path / "modules" / "cnet_modules" / "face_id" / "arcface.py").read_text()
    assert "try:\n    import habana_frameworks.torch.core as htcore" in module
    assert "except ImportError" in module
    # A script outside any package keeps the plain import.
    assert (tmp_path / "train.py").read_text().startswith("import habana_frameworks.torch.core as htcore")


# The rest of the StyleGAN layout: the CUDA path of an op reads the plugin a
# function bound with `global`, and the build helper names the GPU for its cache.
PLUGIN_USERS = {
    **PROJECT,
    "torch_utils/custom_ops.py": """
        import torch
        import torch.utils.cpp_extension

        def _gpu_name():
            return torch.cuda.get_device_name().lower()

        def get_plugin(module_name, sources, **build_kwargs):
            build_dir = f"cache-{_gpu_name()}"
            return torch.utils.cpp_extension.load(name=module_name, sources=sources, build_directory=build_dir)
    """,
    "torch_utils/ops/bias_act.py": """
        import torch
        from .. import custom_ops

        _plugin = None

        def _init():
            global _plugin
            if _plugin is None:
                _plugin = custom_ops.get_plugin(module_name="bias_act_plugin", sources=["bias_act.cpp", "bias_act.cu"])
            return True

        def _bias_act_cuda(x):
            if torch.cuda.current_stream(x.device) != torch.cuda.default_stream(x.device):
                print("non-default stream")
            return _plugin.bias_act(x)

        def bias_act(x, impl="cuda"):
            if impl == "cuda" and x.device.type == "cuda" and _init():
                return _bias_act_cuda(x)
            return x
    """,
}


def test_the_cuda_path_of_a_plugin_op_and_the_build_helpers_are_kept_for_nvidia(tmp_path):
    _write(tmp_path, PLUGIN_USERS)
    facts = _facts(tmp_path)
    assert "uses `_plugin`, bound where the module builds `bias_act.cu`" in facts.why_nvidia_only(
        "torch_utils.ops.bias_act._bias_act_cuda"
    )
    assert "serves only `custom_ops.get_plugin`" in facts.why_nvidia_only("torch_utils.custom_ops._gpu_name")
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    assert "torch.hpu.current_stream" not in diff and "torch.hpu.get_device_name" not in diff
    assert '+    return upfirdn2d.upfirdn2d(x.to("hpu"), f)' in diff  # what can run on Gaudi is still ported


def test_a_public_helper_or_one_with_another_caller_is_not_the_builders(tmp_path):
    files = dict(PLUGIN_USERS)
    files["torch_utils/custom_ops.py"] = files["torch_utils/custom_ops.py"].replace("_gpu_name", "gpu_name")
    _write(tmp_path, files)
    assert _facts(tmp_path).why_nvidia_only("torch_utils.custom_ops.gpu_name") is None
    files = dict(PLUGIN_USERS)
    files["torch_utils/custom_ops.py"] += "\n        def describe():\n            return _gpu_name()\n"
    _write(tmp_path, files)
    assert _facts(tmp_path).why_nvidia_only("torch_utils.custom_ops._gpu_name") is None


def test_a_subclass_holds_what_its_base_class_of_the_module_assigns_to_self(tmp_path):
    files = dict(TRAINER)
    files["diffusion/train_util.py"] += """
        class CMTrainLoop(TrainLoop):
            def run_step(self, batch):
                self.mp_trainer.backward(self.model(batch).sum())
    """
    _write(tmp_path, files)
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)])
    assert result.exit_code == 0, result.output
    loop = (tmp_path / "diffusion" / "train_util.py").read_text()
    assert loop.count("htcore.mark_step()") == 1  # still only after `accelerator.backward`


def test_where_the_project_is_checked_out_does_not_make_its_modules_tests(tmp_path):
    # A checkout under a folder named `test` (`/tmp/test/proj/...`): its
    # modules are not tests; a `tests` folder of the project holds tests.
    root = tmp_path / "test" / "proj"
    files = {
        root / "train.py": b"import torch\n",
        root / "pkg" / "model.py": b"import torch\n",
        root / "tests" / "helpers.py": b"import torch\n",
    }
    facts = find_facts({str(path): data for path, data in files.items()}, LIBRARIES)
    assert not facts.is_test(str(root / "train.py"))
    assert not facts.is_test(str(root / "pkg" / "model.py"))
    assert facts.is_test(str(root / "tests" / "helpers.py"))
    assert facts.is_test(str(root / "pkg" / "test_model.py"))  # named as a test
    # The checkout itself named `test`: its own name says nothing either.
    checkout = tmp_path / "test"
    facts = find_facts({str(checkout / "a" / "b" / "train.py"): b"import torch\n", str(checkout / "setup.py"): b""}, LIBRARIES)
    assert not facts.is_test(str(checkout / "a" / "b" / "train.py"))


def test_a_custom_autograd_op_around_an_nvidia_only_kernel_keeps_its_streams(tmp_path):
    _write(tmp_path, {
        "kernels.py": "from xformers.ops import fmha\n\ndef attn_fwd(q, k, v):\n    return fmha.memory_efficient_attention_forward(q, k, v)\n",
        "ring.py": (
            "import torch\nfrom kernels import attn_fwd\n\n"
            "class RingAttention(torch.autograd.Function):\n"
            "    @staticmethod\n    def forward(ctx, q, k, v):\n"
            "        stream = torch.cuda.current_stream()\n        return attn_fwd(q, k, v)\n\n"
            "class Plain:\n    def run(self, q, k, v):\n"
            "        torch.cuda.synchronize()\n        return attn_fwd(q, k, v)\n"
        ),
    })
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    # The op wraps the xformers kernel: kept whole, its stream stays CUDA's.
    assert "torch.hpu.current_stream" not in diff
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "`RingAttention` is not ported: it is a custom autograd op whose pass calls `kernels.attn_fwd`" in check


# A repository with a sub-project that shards with FSDP beside one that does not.
SHARDING = {
    "finetune/util/wrap.py": """
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        def wrap(model):
            return FSDP(model)
    """,
    "finetune/main_finetune.py": """
        from util import wrap

        model = wrap.wrap(build())
    """,
    "finetune/scripts/run.sh": "torchrun --nproc_per_node 8 main_finetune.py --lr 1e-4\n",
    "finetune/util/checks.py": """
        from torch.distributed.fsdp import FullyShardedDataParallel

        def is_sharded(model):
            return isinstance(model, FullyShardedDataParallel)
    """,
    "alpaca/finetuning.py": """
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(build())
    """,
    "alpaca/finetuning.sh": "torchrun --nproc_per_node 8 finetuning.py\n",
}


def test_the_files_that_shard_with_fsdp_are_the_ones_that_wrap_a_model_or_import_a_module_that_does(tmp_path):
    _write(tmp_path, SHARDING)
    facts = _facts(tmp_path)
    found = {os.path.relpath(path, tmp_path) for path in facts.sharding_files}
    # Only naming the class (an isinstance test) is not sharding.
    assert found == {os.path.join("finetune", "util", "wrap.py"), os.path.join("finetune", "main_finetune.py")}


def test_a_launch_of_a_script_that_shards_with_fsdp_is_reported_not_set_to_lazy_mode(tmp_path):
    _write(tmp_path, SHARDING)
    diff = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    assert "+PT_HPU_LAZY_MODE=1 torchrun --nproc_per_node 8 finetuning.py" in diff
    assert "PT_HPU_LAZY_MODE=1 torchrun --nproc_per_node 8 main_finetune.py" not in diff
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "it runs `main_finetune.py`, which shards its model with FSDP" in check


def test_a_script_that_imports_a_src_layout_module_that_shards_shards_too(tmp_path):
    """llama-recipes' `getting-started/finetuning/finetuning.py` imports
    `llama_cookbook.finetuning` from `src/`, a namespace package."""
    _write(tmp_path, {
        "src/cookbook/finetuning.py": """
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            def main():
                return FSDP(build())
        """,
        "recipes/finetuning.py": """
            import fire
            from cookbook.finetuning import main

            fire.Fire(main)
        """,
    })
    found = {os.path.relpath(path, tmp_path) for path in _facts(tmp_path).sharding_files}
    assert os.path.join("recipes", "finetuning.py") in found


# A training script that picks apex from its command line (SwAV's layout).
APEX_OPTIONS = {
    "main.py": """
        import argparse
        import apex
        import torch.nn as nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--sync_bn", type=str, default="pytorch")
        parser.add_argument("--use-fused-adam", action="store_true")
        parser.add_argument("--norm", type=str, default="layer")
        parser.add_argument("--amp_backend", default="native")
        args = parser.parse_args()

        if args.sync_bn == "pytorch":
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        elif args.sync_bn == "apex":
            model = apex.parallel.convert_syncbn_model(model)
        if args.use_fused_adam:
            optimizer = apex.optimizers.FusedAdam(model.parameters())
        if args.norm in ("fused", "apex") and model.training:
            norm = apex.normalization.FusedLayerNorm(512)
        if args.amp_backend == "native":
            scaler = None
    """,
    "run.sh": "torchrun main.py --sync_bn apex --use-fused-adam --norm fused --amp_backend native\n",
    "run_cpu.sh": "python main.py --sync_bn pytorch --norm layer\n",
}


def test_options_whose_values_pick_nvidia_only_code_are_found_with_their_place(tmp_path):
    _write(tmp_path, APEX_OPTIONS)
    facts = find_facts({str(p): p.read_bytes() for p in tmp_path.rglob("*.py")}, frozenset({"apex.contrib"}) | {"apex"})
    found = {(option, pattern) for option, pattern, _ in facts.nvidia_flag_values}
    assert found == {("--sync_bn", "apex"), ("--use-fused-adam", ""), ("--norm", "fused|apex")}
    assert any(why == "`main.py:16` uses `apex` when it is given" for _, _, why in facts.nvidia_flag_values)


def test_a_launch_line_that_picks_nvidia_only_code_of_the_project_is_reported(tmp_path):
    _write(tmp_path, APEX_OPTIONS)
    check = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU853", str(tmp_path)]).stdout
    reported = sorted(line.split(" HPU853 ")[1].split(" picks")[0] for line in check.splitlines() if " HPU853 " in line)
    assert reported == ["--norm fused", "--sync_bn apex", "--use-fused-adam"]
    assert all("run.sh" in line for line in check.splitlines() if " HPU853 " in line)


def test_a_checkpoint_loaded_where_the_project_uses_cuda_elsewhere_is_advised(tmp_path):
    # HPU145: a helper that loads published weights has no CUDA word of its
    # own; the project's training script is what makes them CUDA tensors.
    _write(tmp_path, {
        "train.py": "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n",
        "infer/load.py": "import torch\n\ndef load(path):\n    return torch.load(path)\n",
    })
    whole = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU145", str(tmp_path)]).stdout
    assert "load.py:4:12: HPU145" in whole
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2).to('cpu')\n")
    cpu_only = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU145", str(tmp_path)]).stdout
    assert "HPU145" not in cpu_only


# InternImage's ops folder: a CUDA extension built through a name set to
# CUDAExtension, a module that imports it at its top, and the folder's
# `test.py`, which checks the kernels against a PyTorch version.
DCN_OPS = {
    "ops_dcnv3/setup.py": """
        import torch
        from setuptools import setup
        from torch.utils.cpp_extension import CppExtension, CUDAExtension

        def get_extensions():
            extension = CppExtension
            if torch.cuda.is_available():
                extension = CUDAExtension
            else:
                raise NotImplementedError("Cuda is not available")
            return [extension("DCNv3", ["src/vision.cpp"])]

        setup(name="DCNv3", ext_modules=get_extensions())
    """,
    "ops_dcnv3/functions/__init__.py": "",
    "ops_dcnv3/functions/dcnv3_func.py": """
        import DCNv3
        import torch

        def dcnv3_core_pytorch(x):
            return x
    """,
    "ops_dcnv3/test.py": """
        import torch
        from functions.dcnv3_func import dcnv3_core_pytorch

        x = torch.rand(2, 3).cuda()
        print(dcnv3_core_pytorch(x))
    """,
}


def test_an_extension_built_through_a_name_set_to_cuda_extension_is_cuda_code(tmp_path):
    _write(tmp_path, DCN_OPS)
    facts = _facts(tmp_path)
    assert facts.cuda_extensions == {"DCNv3"}
    assert "imports `DCNv3` at its top" in facts.why_nvidia_module("functions.dcnv3_func")


def test_an_extension_built_through_a_helper_of_setup_py_is_cuda_code(tmp_path):
    # OpenMMLab-style setup.py files (OpenPCDet, mmdet3d) build every
    # extension through a helper that names it after its package.
    _write(tmp_path, {
        "setup.py": """
            import os
            from setuptools import setup
            from torch.utils.cpp_extension import BuildExtension, CUDAExtension

            def make_cuda_ext(name, module, sources):
                cuda_ext = CUDAExtension(
                    name='%s.%s' % (module, name),
                    sources=[os.path.join(*module.split('.'), src) for src in sources],
                )
                return cuda_ext

            setup(
                name="pcdet",
                ext_modules=[make_cuda_ext(name="bev_pool_ext", module="pcdet.ops.bev_pool", sources=["src/bev_pool.cpp"])],
                cmdclass={"build_ext": BuildExtension},
            )
        """,
        "pcdet/__init__.py": "",
        "pcdet/ops/__init__.py": "",
        "pcdet/ops/bev_pool/__init__.py": "",
        "pcdet/ops/bev_pool/bev_pool.py": """
            import torch
            from . import bev_pool_ext

            def bev_pool(feats, coords):
                return bev_pool_ext.bev_pool_forward(feats.cuda(), coords)
        """,
    })
    facts = _facts(tmp_path)
    assert facts.cuda_extensions == {"bev_pool_ext", "pcdet.ops.bev_pool.bev_pool_ext"}
    assert "bev_pool_ext" in facts.why_nvidia_module("pcdet.ops.bev_pool.bev_pool")


def test_the_test_script_of_a_cuda_extension_is_not_ported(tmp_path):
    _write(tmp_path, DCN_OPS)
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "test.py:1:1: HPU615" in check and "only loads where NVIDIA's software is" in check
    rewrite = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)]).stdout
    assert "test.py" not in rewrite


def test_the_script_that_builds_a_cuda_extension_is_reported(tmp_path):
    _write(tmp_path, {**DCN_OPS, "ops_dcnv3/make.sh": "#!/usr/bin/env bash\npython setup.py build install\n"})
    facts = _facts(tmp_path)
    assert facts.cuda_extension_builders == {str(tmp_path / "ops_dcnv3" / "setup.py")}
    check = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU855", str(tmp_path)]).stdout
    assert "make.sh:2:8: HPU855" in check


def test_a_makefile_that_builds_an_extension_after_its_own_cd_is_reported(tmp_path):
    """HRNet's `lib/Makefile`: `cd nms; python setup_linux.py build_ext --inplace`."""
    _write(tmp_path, {
        "lib/nms/setup_linux.py": """
            from setuptools import Extension, setup

            setup(ext_modules=[Extension("gpu_nms", ["nms_kernel.cu", "gpu_nms.pyx"])])
        """,
        "lib/Makefile": "all:\n\tcd nms; python setup_linux.py build_ext --inplace; cd ../../\n",
    })
    check = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU855", str(tmp_path)]).stdout
    assert "Makefile:2:17: HPU855 setup_linux.py builds one of the project's CUDA extensions" in check


def test_a_launcher_of_the_projects_own_cuda_code_is_an_entry_point(tmp_path):
    # ChatGLM-Efficient-Tuning's `src/train_bash.py` imports only its own
    # package, which brings torch; HPU205 asks for lazy mode there too.
    _write(tmp_path, {
        "tuner/__init__.py": "from .sft import run_training\n",
        "tuner/sft.py": "import torch\n\ndef run_training(model, batch):\n    model.cuda()\n    model(batch).sum().backward()\n",
        "train_bash.py": "from tuner import run_training\n\ndef main():\n    run_training(None, None)\n\nif __name__ == '__main__':\n    main()\n",
    })
    check = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU205", str(tmp_path)]).stdout
    assert "train_bash.py:6:4: HPU205" in check
    (tmp_path / "tuner" / "sft.py").write_text("import torch\n\ndef run_training(model, batch):\n    model(batch).sum().backward()\n")
    cpu_only = CliRunner().invoke(main, ["check", "--no-cache", "--select", "HPU205", str(tmp_path)]).stdout
    assert "train_bash.py" not in cpu_only


# torch-ngp's layout: an extension built by its own setup.py, loaded lazily
# by a function, with a JIT build of the same sources as the fallback.
LAZY_EXTENSION = {
    "raymarching/setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="raymarching", ext_modules=[CUDAExtension(name="_raymarching", sources=["src/raymarching.cu"])])
    """,
    "raymarching/__init__.py": "from .raymarching import *\n",
    "raymarching/raymarching.py": """
        import torch
        from torch.autograd import Function

        BACKEND = None


        def get_backend():
            global BACKEND
            if BACKEND is None:
                try:
                    import _raymarching as _backend
                except ImportError:
                    from .backend import _backend
                BACKEND = _backend
            return BACKEND


        class _march_rays(Function):
            @staticmethod
            def forward(ctx, rays_o):
                if not rays_o.is_cuda:
                    rays_o = rays_o.cuda()
                return get_backend().march_rays(rays_o)


        def optional_backend():
            try:
                import _raymarching
            except ImportError:
                _raymarching = None
            return _raymarching
    """,
    "nms/setup_linux.py": """
        from setuptools import Extension, setup

        setup(ext_modules=[Extension("gpu_nms", ["nms_kernel.cu", "gpu_nms.pyx"])])
    """,
    "nms/__init__.py": "",
}


def test_a_function_that_loads_a_cuda_extension_lazily_and_its_callers_are_kernel_code(tmp_path):
    _write(tmp_path, LAZY_EXTENSION)
    facts = _facts(tmp_path)
    assert {"_raymarching", "gpu_nms"} <= facts.cuda_extensions  # a plain Extension of `.cu` sources too
    assert "imports `_raymarching`" in facts.why_nvidia_only("raymarching.raymarching.get_backend")
    assert facts.why_kernel_code("raymarching.raymarching._march_rays.forward")
    # A fallback that leaves a way without the extension is not a load.
    assert facts.why_nvidia_only("raymarching.raymarching.optional_backend") is None


def test_the_wrappers_of_a_lazily_loaded_extension_keep_their_cuda_moves(tmp_path):
    _write(tmp_path, LAZY_EXTENSION)
    result = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", str(tmp_path)])
    assert "rays_o.to(" not in result.stdout
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "imports `_raymarching`, which the project builds from CUDA sources" in check


def test_a_module_that_imports_an_extension_at_its_top_with_a_build_as_fallback_is_kept(tmp_path):
    files = dict(LAZY_EXTENSION)
    files["raymarching/grid.py"] = """
        import torch

        try:
            import _raymarching as _backend
        except ImportError:
            from .backend import _backend


        def encode(x):
            return _backend.encode(x.cuda())
    """
    files["nms/nms.py"] = """
        import torch
        from .gpu_nms import gpu_nms


        def nms(dets):
            return gpu_nms(dets.cuda())
    """
    files["raymarching/optional.py"] = """
        import torch

        try:
            import _raymarching as _backend
        except ImportError:
            _backend = None


        def encode(x):
            return x.cuda()
    """
    _write(tmp_path, files)
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "grid.py:1:1: HPU615 this module is not ported: it imports `_raymarching`" in check
    assert "nms.py:1:1: HPU615 this module is not ported: it imports `.gpu_nms`" in check
    # A fallback without the extension: the module runs without it, and is ported.
    assert "optional.py:1:1: HPU615" not in check


def test_config_values_that_pick_an_nvidia_only_branch_are_facts_and_reported(tmp_path):
    _write(tmp_path, {
        "slowfast/models/build.py": """
            def build_model(cfg, args):
                model = make(cfg)
                if cfg.BN.NORM_TYPE == "sync_batchnorm_apex":
                    import apex
                    model = apex.parallel.convert_syncbn_model(model)
                if cfg.SOLVER.OPTIMIZING_METHOD in ("sgd", "lars"):
                    model = wrap(model)
                if args.norm == "apex":
                    import apex
                return model
        """,
        "configs/run.yaml": "BN:\n  NORM_TYPE: sync_batchnorm_apex\nSOLVER:\n  OPTIMIZING_METHOD: sgd\n",
        "configs/other.yaml": "MODEL:\n  NORM_TYPE: sync_batchnorm_apex\n",
    })
    facts = _facts(tmp_path)
    # The option (`args.norm`) is the command line's; a branch without apex picks nothing.
    assert [key for key, _, _ in facts.nvidia_config_values] == ["BN.NORM_TYPE"]
    check = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)]).stdout
    assert "run.yaml:2:14: HPU862 BN.NORM_TYPE: sync_batchnorm_apex picks code of the project" in check
    assert "other.yaml" not in check
