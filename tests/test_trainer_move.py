"""The move to the Gaudi trainer (HPU521 with --unsafe-fixes), run end to end.

A training script is ported, then run with the optimum-habana release the rule
names, installed in an environment of its own (CPU only). The script parses
its arguments and builds its trainers there: what Gaudi's software adds at run
time (``habana_frameworks``, and ``torchvision`` for the model classes
optimum-habana loads) is stood in for by modules that accept anything, since
neither runs without a Gaudi card.
"""

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from hpu_port.rules import load_rules
from tests.conftest import REPO, download_cache_directory

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURE = REPO / "tests" / "fixtures" / "hf_trainer_cuda.py"
# The CPU build of torch (the one pip takes without a GPU index), and the
# releases optimum-habana's own requirements pin, so that pip need not search.
BESIDE = ["torch==2.13.0", "transformers>=4.55,<4.56", "huggingface-hub<1.0", "accelerate==1.10.1", "diffusers==0.35.1"]

STAND_INS = '''
"""Modules Gaudi's software provides, standing in: every name exists and does nothing."""
import importlib.abc
import importlib.machinery
import sys
import types

STOOD_IN = ("habana_frameworks.", "torchvision")


class _Anything:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return _Anything(self._name + "." + attr)

    def __call__(self, *args, **kwargs):
        return _Anything(self._name + "()")

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __mro_entries__(self, bases):
        return (object,)


class _Module(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Anything(self.__name__ + "." + attr)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.startswith(STOOD_IN):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
'''

DRIVER = '''
import json, runpy, sys
import habana_frameworks  # installs the stand-ins
script, output = sys.argv[1], sys.argv[2]
module = runpy.run_path(script)  # not as __main__: the driver calls it
parsed = module["main"](["--output_dir", output, "--use_habana", "--use_lazy_mode", "--report_to", "none"])
quick = module["quick_trainer"](output)
describe = lambda trainer: {
    "trainer": [c.__name__ for c in type(trainer).__mro__],
    "arguments": type(trainer.args).__name__,
    "use_habana": trainer.args.use_habana,
    "use_lazy_mode": trainer.args.use_lazy_mode,
    "fused_adam": trainer.gaudi_config.use_fused_adam,
    "fused_clip_norm": trainer.gaudi_config.use_fused_clip_norm,
}
print(json.dumps({"parsed": describe(parsed), "quick": describe(quick)}))
'''


def _package() -> str:
    [rule] = [rule for rule in load_rules() if rule.code == "HPU521"]
    return rule.params["package"]


@pytest.fixture(scope="module")
def gaudi_trainer_python() -> Path:
    """The Python of an environment with the named optimum-habana release,
    made once and kept in the tests' download cache."""
    package = _package()
    folder = download_cache_directory() / "environments" / f"{package.replace('==', '-')}-py{sys.version_info[0]}{sys.version_info[1]}"
    python = folder / "bin" / "python"
    done = folder / "complete"
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Another test process may be building it: one builds, the others wait.
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", package, *BESIDE], check=True)
            done.write_text(package)
    return python


@pytest.fixture
def stand_ins(tmp_path) -> Path:
    folder = tmp_path / "stand-ins"
    (folder / "habana_frameworks").mkdir(parents=True)
    (folder / "habana_frameworks" / "__init__.py").write_text(textwrap.dedent(STAND_INS))
    # optimum-habana reads the Gaudi release from `pip list` when it is imported.
    metadata = folder / "habana_torch_plugin-1.21.0.dist-info"
    metadata.mkdir()
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: habana-torch-plugin\nVersion: 1.21.0\n")
    return folder


def test_ported_script_builds_its_gaudi_trainers(tmp_path, gaudi_trainer_python, stand_ins):
    script = tmp_path / "train.py"
    shutil.copy(FIXTURE, script)
    result = CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--fp16-to-bf16", str(script)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = script.read_text()
    assert "from optimum.habana import GaudiConfig, GaudiTrainer, GaudiTrainingArguments" in text
    assert "Trainer, TrainingArguments" not in text

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    environment = {
        **os.environ,
        "PYTHONPATH": str(stand_ins),
        "PATH": f"{gaudi_trainer_python.parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    run = subprocess.run(
        [str(gaudi_trainer_python), str(driver), str(script), str(tmp_path / "out")],
        capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    built = json.loads(run.stdout.strip().splitlines()[-1])
    for trainer in built.values():
        assert "GaudiTrainer" in trainer["trainer"]
        assert trainer["arguments"] == "GaudiTrainingArguments"
        assert trainer["use_habana"] is True and trainer["use_lazy_mode"] is True
        assert trainer["fused_adam"] is True and trainer["fused_clip_norm"] is True
    assert built["parsed"]["trainer"][0] == "LoggingTrainer"


def test_unported_script_fails_there(tmp_path, gaudi_trainer_python, stand_ins):
    """The same run fails on the script as it was: the test can tell."""
    script = tmp_path / "train.py"
    shutil.copy(FIXTURE, script)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    run = subprocess.run(
        [str(gaudi_trainer_python), str(driver), str(script), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(stand_ins), "PATH": f"{gaudi_trainer_python.parent}{os.pathsep}{os.environ['PATH']}"},
    )
    assert run.returncode != 0
    assert "use_habana" in run.stderr
