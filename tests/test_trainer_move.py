"""The move to the Gaudi trainer (HPU521 with --unsafe-fixes), run end to end.

A training script is ported, then run with the optimum-habana release the rule
names, installed in an environment of its own (CPU only). The script parses
its arguments and builds its trainers there: what Gaudi's software adds at run
time (``habana_frameworks``, and ``torchvision`` for the model classes
optimum-habana loads) is stood in for by modules that accept anything, since
neither runs without a Gaudi card.
"""

import fcntl
import hashlib
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
TRL_FIXTURE = REPO / "tests" / "fixtures" / "trl_trainer_cuda.py"
# The CPU build of torch (the one pip takes without a GPU index), and the
# releases optimum-habana's own requirements pin, so that pip need not search;
# TRL 0.9.6 with what its Gaudi trainers and TRL's scripts import (its numpy<2
# needs a pyarrow built for numpy 1).
BESIDE = [
    "torch==2.13.0", "transformers>=4.55,<4.56", "huggingface-hub<1.0", "accelerate==1.10.1", "diffusers==0.35.1",
    "trl==0.9.6", "peft==0.17.0", "datasets==4.0.0", "pyarrow<21", "rich",
]

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
    # Named for everything installed: a kept environment with other releases is not reused.
    wanted = hashlib.sha256(" ".join([package, *BESIDE]).encode()).hexdigest()[:10]
    folder = download_cache_directory() / "environments" / f"{package.replace('==', '-')}-py{sys.version_info[0]}{sys.version_info[1]}-{wanted}"
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


def _run_in(python: Path, stand_ins: Path, folder: Path, *command) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "PYTHONPATH": str(stand_ins),
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    return subprocess.run([str(python), *command], capture_output=True, text=True, env=environment, cwd=folder, timeout=600)


def _port_and_build(tmp_path, python, stand_ins, script: Path, driver_text: str, *options) -> tuple:
    """Port ``script`` with the move, then run it in the Gaudi trainer's
    environment through the driver: (the ported text, what the driver built)."""
    result = CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--no-cache", *options, str(script)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    driver = tmp_path / "driver.py"
    driver.write_text(driver_text)
    run = _run_in(python, stand_ins, tmp_path, str(driver), str(script), str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr[-3000:]
    return script.read_text(), json.loads(run.stdout.strip().splitlines()[-1])


def test_ported_script_builds_its_gaudi_trainers(tmp_path, gaudi_trainer_python, stand_ins):
    script = tmp_path / "train.py"
    shutil.copy(FIXTURE, script)
    text, built = _port_and_build(tmp_path, gaudi_trainer_python, stand_ins, script, DRIVER, "--fp16-to-bf16")
    assert "from optimum.habana import GaudiConfig, GaudiTrainer, GaudiTrainingArguments" in text
    assert "Trainer, TrainingArguments" not in text
    for trainer in built.values():
        assert "GaudiTrainer" in trainer["trainer"]
        assert trainer["arguments"] == "GaudiTrainingArguments"
        assert trainer["use_habana"] is True and trainer["use_lazy_mode"] is True
        assert trainer["fused_adam"] is True and trainer["fused_clip_norm"] is True
    assert built["parsed"]["trainer"][0] == "LoggingTrainer"


TRL_DRIVER = '''
import json, runpy, sys
import habana_frameworks  # installs the stand-ins

import datasets
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

# What the script would download (a model, its tokenizer, the data), made small here.
WORDS = "the a cat dog sat on mat user assistant hello good bad is".split()


def tokenizer(*args, **kwargs):
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", "</s>", *WORDS])}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="</s>")


def model(*args, **kwargs):
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config)


def dataset(*args, **kwargs):
    rows = {"text": ["the cat sat on the mat"] * 16, "prompt": ["hello"] * 16, "chosen": ["good"] * 16, "rejected": ["bad"] * 16}
    return datasets.Dataset.from_dict(rows)


class Built(Exception):
    pass


def stop(self, *args, **kwargs):
    raise Built(self)


transformers.AutoTokenizer.from_pretrained = tokenizer
transformers.AutoModelForCausalLM.from_pretrained = model
datasets.load_dataset = dataset
import optimum.habana
# Built is enough: training needs a Gaudi card (and the script as it was would train on the CPU).
optimum.habana.GaudiTrainer.train = transformers.Trainer.train = stop

script, output = sys.argv[1], sys.argv[2]
module = runpy.run_path(script)
described = {}
for run, argv in (("supervised", ["--output_dir", output, "--use_habana", "--use_lazy_mode", "--report_to", "none"]), ("preferences", [])):
    try:
        module[run](argv)
    except Built as built:
        trainer = built.args[0]
        described[run] = {
            "trainer": [c.__name__ for c in type(trainer).__mro__],
            "arguments": type(trainer.args).__name__,
            "use_habana": getattr(trainer.args, "use_habana", None),
            "use_lazy_mode": getattr(trainer.args, "use_lazy_mode", None),
            "fused_adam": getattr(getattr(trainer, "gaudi_config", None), "use_fused_adam", None),
            "fused_clip_norm": getattr(getattr(trainer, "gaudi_config", None), "use_fused_clip_norm", None),
        }
print(json.dumps(described))
'''


def test_ported_trl_script_builds_its_gaudi_trainers(tmp_path, gaudi_trainer_python, stand_ins):
    project = tmp_path / "project"
    project.mkdir()
    # TRL's SFT and DPO trainers move only in a project that pins the release
    # optimum-habana's Gaudi TRL trainers are built on.
    (project / "requirements.txt").write_text("trl==0.9.6\n")
    script = project / "train.py"
    shutil.copy(TRL_FIXTURE, script)
    text, built = _port_and_build(tmp_path, gaudi_trainer_python, stand_ins, script, TRL_DRIVER)
    assert "from optimum.habana.trl import GaudiDPOConfig, GaudiDPOTrainer, GaudiSFTConfig, GaudiSFTTrainer" in text
    assert "from trl import" not in text
    assert built["supervised"]["trainer"][:2] == ["GaudiSFTTrainer", "SFTTrainer"]
    assert built["supervised"]["arguments"] == "GaudiSFTConfig"
    assert built["preferences"]["trainer"][:2] == ["GaudiDPOTrainer", "DPOTrainer"]
    assert built["preferences"]["arguments"] == "GaudiDPOConfig"
    for trainer in built.values():
        assert "GaudiTrainer" in trainer["trainer"]
        assert trainer["use_habana"] is True and trainer["use_lazy_mode"] is True
        assert trainer["fused_adam"] is True and trainer["fused_clip_norm"] is True


@pytest.mark.parametrize("fixture, driver_text", [(FIXTURE, DRIVER), (TRL_FIXTURE, TRL_DRIVER)], ids=["transformers", "trl"])
def test_unported_script_fails_there(tmp_path, gaudi_trainer_python, stand_ins, fixture, driver_text):
    """The same run fails on the script as it was (its arguments know no
    --use_habana): the test can tell."""
    script = tmp_path / "train.py"
    shutil.copy(fixture, script)
    driver = tmp_path / "driver.py"
    driver.write_text(driver_text)
    run = _run_in(gaudi_trainer_python, stand_ins, tmp_path, str(driver), str(script), str(tmp_path / "out"))
    assert run.returncode != 0
    assert "use_habana" in run.stderr


TRL_RELEASE_SCRIPTS = ("sft.py", "dpo.py")


def test_trl_release_scripts_whose_parser_would_refuse_the_gaudi_config_are_held(tmp_path, gaudi_trainer_python, stand_ins):
    """TRL 0.9.6's own command-line scripts hand TrlParser the config beside
    TRL's ModelConfig; both Gaudi configs add --attn_implementation, which
    ModelConfig defines too. The move is held there, and the environment
    confirms why: the parser refuses the pair."""
    where = _run_in(gaudi_trainer_python, stand_ins, tmp_path, "-c", "import os, trl; print(os.path.dirname(trl.__file__))")
    assert where.returncode == 0, where.stderr[-3000:]
    scripts = Path(where.stdout.strip()) / "commands" / "scripts"
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text("trl==0.9.6\n")
    for name in TRL_RELEASE_SCRIPTS:
        shutil.copy(scripts / name, project / name)
    originals = {name: (project / name).read_bytes() for name in TRL_RELEASE_SCRIPTS}
    result = CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--select", "HPU521", "--no-cache", str(project)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    assert {name: (project / name).read_bytes() for name in TRL_RELEASE_SCRIPTS} == originals
    checked = CliRunner().invoke(main, ["check", "--unsafe-fixes", "--select", "HPU521", "--no-cache", str(project)], catch_exceptions=False)
    for name, config in (("sft.py", "GaudiSFTConfig"), ("dpo.py", "GaudiDPOConfig")):
        assert f"`ModelConfig` and `{config}` both define the option --attn_implementation" in checked.output, name

    refused = _run_in(
        gaudi_trainer_python, stand_ins, tmp_path, "-c",
        "import habana_frameworks\n"
        "from trl import ModelConfig, TrlParser\n"
        "from trl.commands.cli_utils import SFTScriptArguments\n"
        "from optimum.habana.trl import GaudiSFTConfig\n"
        "TrlParser((SFTScriptArguments, GaudiSFTConfig, ModelConfig))\n",
    )
    assert refused.returncode != 0 and "conflicting option string" in refused.stderr
