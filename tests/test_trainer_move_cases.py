"""The move to the Gaudi trainer (HPU521, kind ``trainer-move``): when it is made, and when the file is left as it is."""

import textwrap

import pytest

from hpu_port.engine import port_source
from tests.conftest import make_ruleset, port, ported

MOVE = dict(select=["HPU521"], unsafe_fixes=True)


def _held(result) -> list:
    return [f.message for f in result.findings if f.code == "HPU521" and "not rewritten" in f.message]


@pytest.mark.parametrize(
    "call, why",
    [
        ("Trainer(model)", "is given no `args=`"),
        ("Trainer(model, training_args, collator)", "by position"),
        ("Trainer(model, *options)", "by position or with"),
        ("Trainer(model, **options)", "is given no `args=`"),
        ("Trainer(model=model, args=make_args())", "neither a name nor built in the call"),
    ],
)
def test_a_trainer_call_the_move_cannot_complete_leaves_the_file(call, why):
    code = f"from transformers import Trainer, TrainingArguments\n\ntraining_args = TrainingArguments('out')\ntrainer = {call}\n"
    result = port(code, **MOVE)
    assert result.new_source is None
    held = _held(result)
    assert len(held) == 2  # the trainer and the arguments: every use says why
    assert all(why in message for message in held)


def test_a_mapping_of_keywords_is_passed_on():
    code = """
    from transformers import Trainer

    trainer = Trainer(model=model, args=training_args, **data_module)
    """
    assert "GaudiTrainer(model=model, args=training_args, **data_module, gaudi_config=GaudiConfig.from_pretrained(" in ported(code, **MOVE)


def test_a_configuration_already_given_is_kept():
    code = """
    from transformers import Trainer
    from optimum.habana import GaudiConfig

    trainer = Trainer(model=model, args=args, gaudi_config=GaudiConfig())
    """
    assert "GaudiTrainer(model=model, args=args, gaudi_config=GaudiConfig())" in ported(code, **MOVE)


def test_arguments_built_in_the_call_that_name_a_configuration_are_left_to_name_it():
    code = """
    from transformers import Trainer, TrainingArguments

    trainer = Trainer(model=model, args=TrainingArguments("out", gaudi_config_name="Habana/gpt2"))
    """
    text = ported(code, **MOVE)
    assert 'GaudiTrainingArguments("out", gaudi_config_name="Habana/gpt2", use_habana=True, use_lazy_mode=True))' in text
    assert "gaudi_config=" not in text


def test_arguments_that_already_say_use_habana_keep_their_value():
    code = """
    from transformers import TrainingArguments

    args = TrainingArguments("out", use_habana=False)
    """
    assert 'GaudiTrainingArguments("out", use_habana=False, use_lazy_mode=True)' in ported(code, **MOVE)


def test_without_unsafe_fixes_nothing_moves():
    code = "from transformers import Trainer\n\ntrainer = Trainer(model=model, args=args)\n"
    result = port(code, select=["HPU521"])
    assert result.new_source is None
    [finding] = [f for f in result.findings if f.code == "HPU521"]
    assert not finding.fixable


def test_a_subclass_of_a_subclass_is_moved_through_its_parent():
    code = """
    from transformers import Trainer


    class Base(Trainer):
        pass


    class Mine(Base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)


    def main(args):
        return Mine(model=model, args=args)
    """
    text = ported(code, **MOVE)
    assert "class Base(GaudiTrainer):" in text and "class Mine(Base):" in text
    assert "Mine(model=model, args=args, gaudi_config=GaudiConfig.from_pretrained(args.gaudi_config_name) if args.gaudi_config_name else" in text


def test_check_reports_the_subclass_call_that_rewrite_moves():
    # The function that calls the subclass names no trainer: `check`, which
    # stubs out functions no rule could act on, must still read it.
    code = (
        "from transformers import Trainer\n\n\nclass Mine(Trainer):\n    pass\n\n\n"
        + "".join(f"def helper{i}(x):\n    return x + {i}\n\n\n" for i in range(5))
        + "def main(args):\n    return Mine(model=model, args=args)\n"
    )
    ruleset = make_ruleset(["HPU521"], unsafe_fixes=True)
    checked = port_source("script.py", code.encode(), ruleset, False)
    rewritten = port_source("script.py", code.encode(), ruleset, True)
    lines = lambda result: sorted(f.line for f in result.findings if f.code == "HPU521")
    assert lines(checked) == lines(rewritten) == [4, 29]


def test_trl_trainers_are_reported_not_moved_where_trl_is_not_pinned():
    code = "from trl import SFTTrainer\n\ntrainer = SFTTrainer(model=model, args=config)\n"
    result = port(code, **MOVE)
    assert result.new_source is None
    [finding] = [f for f in result.findings if f.code == "HPU521"]
    assert "GaudiSFTTrainer" in finding.message and "pins trl 0.9" in finding.message and not finding.fixable


TRL_SCRIPT = """
from dataclasses import dataclass

from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer, TrlParser


@dataclass
class ScriptArguments:
    model_name: str = "gpt2"


def sft(model, dataset):
    parser = TrlParser((ScriptArguments, SFTConfig))
    script_args, training_args = parser.parse_args_and_config()
    return SFTTrainer(model, training_args, train_dataset=dataset)


def dpo(model, reference, dataset):
    config = DPOConfig("out", beta=0.1)
    return DPOTrainer(model, reference, args=config, train_dataset=dataset)
"""


@pytest.mark.parametrize("pin", ["trl==0.9.6", "trl>=0.9.4,<0.10", "trl~=0.9.6"])
def test_trl_trainers_move_where_the_project_pins_trl_0_9(tmp_path, pin):
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    text = _rewrite_tree(tmp_path, {"train.py": TRL_SCRIPT})["train.py"]
    assert "from optimum.habana.trl import GaudiDPOConfig, GaudiDPOTrainer, GaudiSFTConfig, GaudiSFTTrainer" in text
    assert "parser = TrlParser((ScriptArguments, GaudiSFTConfig))" in text
    assert "GaudiSFTTrainer(model, args=training_args, train_dataset=dataset, gaudi_config=GaudiConfig.from_pretrained(training_args.gaudi_config_name)" in text
    assert 'config = GaudiDPOConfig("out", beta=0.1, use_habana=True, use_lazy_mode=True)' in text
    assert "GaudiDPOTrainer(model, ref_model=reference, args=config, train_dataset=dataset, gaudi_config=GaudiConfig.from_pretrained(config.gaudi_config_name)" in text
    assert "from optimum.habana import GaudiConfig" in text


@pytest.mark.parametrize("pin", [None, "trl==0.19.1", "trl>=0.9", "trl<0.10"])
def test_trl_trainers_stay_where_the_project_may_run_another_trl(tmp_path, pin):
    if pin:
        (tmp_path / "requirements.txt").write_text(pin + "\n")
    assert _rewrite_tree(tmp_path, {"train.py": TRL_SCRIPT})["train.py"] == textwrap.dedent(TRL_SCRIPT).lstrip("\n")


def test_trl_launch_flags_are_named_where_a_trl_parser_reads_the_config(tmp_path):
    (tmp_path / "requirements.txt").write_text("trl==0.9.6\n")
    (tmp_path / "train.py").write_text(textwrap.dedent(TRL_SCRIPT).lstrip("\n"))
    messages = _trainer_messages(tmp_path)
    assert any("GaudiSFTConfig" in m and "launch the script with --use_habana --use_lazy_mode" in m for m in messages)


def _rewrite_tree(tmp_path, files: dict) -> dict:
    from click.testing import CliRunner

    from hpu_port.cli import main

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    result = CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--select", "HPU521", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return {name: (tmp_path / name).read_text() for name in files}


TRAINER_MODULE = """
from transformers import Trainer


class QuestionAnsweringTrainer(Trainer):
    def __init__(self, *args, eval_examples=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.eval_examples = eval_examples
"""

SCRIPT = """
from transformers import HfArgumentParser, TrainingArguments
from trainer_qa import QuestionAnsweringTrainer


def main():
    (training_args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
    trainer = QuestionAnsweringTrainer(model=model, args=training_args, eval_examples=examples)
    trainer.train()
"""


def test_a_trainer_subclass_of_another_module_gets_the_configuration(tmp_path):
    ported = _rewrite_tree(tmp_path, {"trainer_qa.py": TRAINER_MODULE, "run_qa.py": SCRIPT})
    assert "class QuestionAnsweringTrainer(GaudiTrainer):" in ported["trainer_qa.py"]
    assert "eval_examples=examples, gaudi_config=GaudiConfig.from_pretrained(training_args.gaudi_config_name)" in ported["run_qa.py"]


def test_a_subclass_of_another_module_with_parameters_of_its_own_holds_the_script(tmp_path):
    own = TRAINER_MODULE.replace("*args, eval_examples=None, **kwargs", "model, args, eval_examples=None").replace(
        "super().__init__(*args, **kwargs)", "super().__init__(model, args)"
    )
    ported = _rewrite_tree(tmp_path, {"trainer_qa.py": own, "run_qa.py": SCRIPT})
    assert ported["run_qa.py"] == textwrap.dedent(SCRIPT).lstrip("\n")


def test_a_script_that_also_probes_another_accelerator_moves(tmp_path):
    # Not in a package: a script for one run, whose XLA branch is a metric's detail.
    script = SCRIPT.replace("def main():", "def main():\n    if is_torch_xla_available():\n        import torch_xla")
    script = script.replace("from trainer_qa import", "from transformers import is_torch_xla_available\nfrom trainer_qa import")
    ported = _rewrite_tree(tmp_path, {"trainer_qa.py": TRAINER_MODULE, "run_qa.py": script})
    assert "GaudiTrainingArguments" in ported["run_qa.py"]


def test_a_package_module_that_serves_several_devices_is_held(tmp_path):
    library = TRAINER_MODULE + "\n\ndef device():\n    return 'npu' if torch.npu.is_available() else 'cuda'\n"
    ported = _rewrite_tree(tmp_path, {"lib/__init__.py": "", "lib/trainers.py": library})
    assert ported["lib/trainers.py"] == textwrap.dedent(library).lstrip("\n")


def _launch_findings(tmp_path, files: dict, *options) -> list:
    import json

    from click.testing import CliRunner

    from hpu_port.cli import main

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    result = CliRunner().invoke(main, ["check", "--select", "HPU847", "--no-cache", "--format", "json", *options, str(tmp_path)], catch_exceptions=False)
    return [(f["path"].rsplit("/", 1)[-1], f["line"]) for f in json.loads(result.stdout)["findings"]]


LAUNCHES = """
#!/bin/bash
python run_qa.py --model_name_or_path bert-base-uncased --dataset_name squad
torchrun --nproc_per_node 8 evaluate.py --output_dir out --do_eval
python run_qa.py --use_habana --use_lazy_mode --dataset_name squad
"""


def test_launch_lines_of_a_script_that_parses_the_trainer_arguments_are_reported(tmp_path):
    files = {"trainer_qa.py": TRAINER_MODULE, "run_qa.py": SCRIPT, "evaluate.py": "print('no trainer here')\n", "scripts/run.sh": LAUNCHES}
    # evaluate.py is the project's and parses nothing: its trainer-like flags do not count.
    assert _launch_findings(tmp_path, files, "--unsafe-fixes") == [("run.sh", 2)]
    assert _launch_findings(tmp_path, files) == []


def _trainer_messages(tmp_path, *options) -> list:
    import json

    from click.testing import CliRunner

    from hpu_port.cli import main

    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", *options, str(tmp_path)], catch_exceptions=False)
    return [f["message"] for f in json.loads(result.stdout)["findings"] if f["code"] == "HPU521"]


@pytest.mark.parametrize(
    "name, text, says",
    [
        ("requirements.txt", "torch>=2.1\ntransformers==4.38.2  # the release we tested\n", "before 4.50 the plain Trainer does not run on Gaudi"),
        ("requirements/train.txt", "transformers~=4.49.0\n", "before 4.50"),
        ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["transformers[torch]>=4.51,<5"]\n', "from 4.50 on the plain Trainer runs on Gaudi as it is"),
        ("setup.py", 'from setuptools import setup\nsetup(install_requires=["transformers >= 4.52"])\n', "from 4.50 on"),
        ("environment.yml", "name: x\ndependencies:\n  - python=3.10\n  - pip:\n      - transformers==4.44.2\n", "before 4.50"),
    ],
)
def test_the_advice_follows_the_transformers_release_the_project_pins(tmp_path, name, text, says):
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text)
    (tmp_path / "train.py").write_text("from transformers import Trainer\n\ntrainer = Trainer(model=model, args=args)\n")
    [message] = _trainer_messages(tmp_path)
    assert says in message
    # Read whatever rules are selected: the advice does not change with them.
    assert _trainer_messages(tmp_path, "--select", "HPU521") == [message]


def test_a_release_range_that_spans_4_50_adds_nothing(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers>=4.40\n")
    (tmp_path / "train.py").write_text("from transformers import Trainer\n\ntrainer = Trainer(model=model, args=args)\n")
    [message] = _trainer_messages(tmp_path)
    assert "the project pins" not in message


def test_a_launch_of_a_script_in_a_package_that_serves_several_devices_is_not_reported(tmp_path):
    # HPU521 holds the move in such a package: the flags would be unknown options there.
    files = {
        "chat/__init__.py": "",
        "chat/devices.py": "import torch\n\ndef pick():\n    return 'npu' if torch.npu.is_available() else 'cuda'\n",
        "chat/train/__init__.py": "",
        "chat/train/train_mem.py": "from chat.train.train import train\n\ntrain()\n",
        "chat/train/train.py": SCRIPT.replace("def main():", "def train():"),
        "chat/train/trainer_qa.py": TRAINER_MODULE,
        "scripts/train.sh": "torchrun --nproc_per_node 8 chat/train/train_mem.py --output_dir out --do_train\n",
    }
    assert _launch_findings(tmp_path, files, "--unsafe-fixes") == []


@pytest.mark.parametrize(
    "handed, clash",
    [
        ("(ScriptArguments, SFTConfig, ModelConfig)", "`ModelConfig` and `GaudiSFTConfig` both define the option --attn_implementation"),
        ("(ModelArguments, SFTConfig)", "`ModelArguments` and `GaudiSFTConfig` both define the option --use_habana"),
    ],
)
def test_a_parser_that_would_refuse_the_gaudi_arguments_holds_the_file(tmp_path, handed, clash):
    (tmp_path / "requirements.txt").write_text("trl==0.9.6\n")
    script = TRL_SCRIPT.replace("(ScriptArguments, SFTConfig)", handed).replace(
        "from trl import", "from dataclasses import dataclass\n\n\n@dataclass\nclass ModelArguments:\n    use_habana: bool = False\n\n\nfrom trl import ModelConfig,"
    )
    assert _rewrite_tree(tmp_path, {"train.py": script})["train.py"] == textwrap.dedent(script).lstrip("\n")
    messages = _trainer_messages(tmp_path, "--unsafe-fixes")
    assert messages and all(clash in m for m in messages)


def test_a_class_of_the_script_without_a_clashing_field_moves(tmp_path):
    (tmp_path / "requirements.txt").write_text("trl==0.9.6\n")
    assert "TrlParser((ScriptArguments, GaudiSFTConfig))" in _rewrite_tree(tmp_path, {"train.py": TRL_SCRIPT})["train.py"]


@pytest.mark.parametrize(
    "handed, why",
    [
        # Given by keyword, as HfArgumentParser names its parameter.
        ("dataclass_types=(SFTConfig, ModelConfig)", "define the option --attn_implementation"),
        # A class of another library: its fields are not known.
        ("(SFTConfig, OtherArguments)", "the fields of `OtherArguments` are not known to this run"),
        # A nested class: not followed, so not known either.
        ("(SFTConfig, Outer.Inner)", "the fields of `Inner` are not known to this run"),
    ],
)
def test_a_parser_whose_other_classes_clash_or_are_unknown_holds_the_move(tmp_path, handed, why):
    (tmp_path / "requirements.txt").write_text("trl==0.9.6\n")
    script = TRL_SCRIPT.replace("TrlParser((ScriptArguments, SFTConfig))", f"HfArgumentParser({handed})").replace(
        "from trl import", "from other import OtherArguments\nfrom transformers import HfArgumentParser\nfrom trl import ModelConfig,"
    ) + "\n\nclass Outer:\n    @dataclass\n    class Inner:\n        x: int = 0\n"
    assert _rewrite_tree(tmp_path, {"train.py": script})["train.py"] == textwrap.dedent(script).lstrip("\n")
    messages = _trainer_messages(tmp_path, "--unsafe-fixes")
    assert messages and all(why in m for m in messages)


def test_a_class_re_exported_with_a_star_import_is_followed(tmp_path):
    files = _package_project(tmp_path)
    files["src/alignment/__init__.py"] = "from .configs import *\nfrom .parser import H4ArgumentParser\n"
    assert _rewrite_tree(tmp_path, files)["scripts/run_sft.py"] == textwrap.dedent(PACKAGE_SCRIPT).lstrip("\n")
    assert any("`ModelArguments` defines --attn_implementation" in m for m in _trainer_messages(tmp_path, "--unsafe-fixes"))


def test_modules_of_one_name_in_two_folders_are_told_apart_by_the_importing_script(tmp_path):
    configs = "from dataclasses import dataclass\n\n\n@dataclass\nclass ModelArguments:\n    name: str = 'm'\n"
    script = "from configs import ModelArguments\nfrom transformers import HfArgumentParser\nfrom trl import SFTConfig, SFTTrainer\n\nargs, config = HfArgumentParser((ModelArguments, SFTConfig)).parse_args_into_dataclasses()\ntrainer = SFTTrainer(model='m', args=config)\n"
    files = {
        "requirements.txt": "trl==0.9.6\n",
        "a_sft/configs.py": configs,
        "a_sft/train.py": script,
        "dpo/configs.py": configs + "    attn_implementation: str = 'eager'\n",
        "dpo/train.py": script,
    }
    ported = _rewrite_tree(tmp_path, files)
    # dpo's parser would refuse the Gaudi config: the project holds the move everywhere.
    assert ported["dpo/train.py"] == files["dpo/train.py"] and ported["a_sft/train.py"] == files["a_sft/train.py"]
    assert any("dpo/train.py:5: the argument parser would refuse" in m for m in _trainer_messages(tmp_path, "--unsafe-fixes"))


def test_a_run_on_one_file_reads_the_pins_of_its_project(tmp_path):
    # A pre-commit hook names the changed files only: the project's pins still count.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["trl==0.9.6"]\n')
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.py"
    script.write_text(textwrap.dedent(TRL_SCRIPT).lstrip("\n"))
    from click.testing import CliRunner

    from hpu_port.cli import main

    result = CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--select", "HPU521", "--no-cache", str(script)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    assert "GaudiSFTTrainer" in script.read_text()


def test_the_project_of_a_file_is_the_nearest_folder_with_a_marker(tmp_path):
    from hpu_port.files import dependency_files_of_projects
    from hpu_port.runner import is_dependency_file

    (tmp_path / "requirements.txt").write_text("trl==0.8.6\n")  # an outer project: not this one's
    inner = tmp_path / "inner"
    (inner / "src").mkdir(parents=True)
    (inner / "setup.cfg").write_text("[metadata]\nname = inner\n")
    (inner / "requirements-dev.txt").write_text("pytest\n")
    (inner / "src" / "train.py").write_text("")
    found = sorted(p.rsplit("/", 1)[-1] for p in dependency_files_of_projects([str(inner / "src" / "train.py")], is_dependency_file))
    assert found == ["requirements-dev.txt", "setup.cfg"]


PACKAGE_CONFIGS = """
from dataclasses import dataclass, field
from typing import Optional

import trl


@dataclass
class ModelArguments:
    model_name_or_path: str = "gpt2"
    attn_implementation: Optional[str] = field(default=None)


@dataclass
class SFTConfig(trl.SFTConfig):
    dataset_kwargs: Optional[dict] = None
"""

PACKAGE_SCRIPT = """
from alignment import H4ArgumentParser, ModelArguments, SFTConfig
from trl import SFTTrainer


def main():
    parser = H4ArgumentParser((ModelArguments, SFTConfig))
    model_args, training_args = parser.parse()
    trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args)
    trainer.train()
"""


def _package_project(tmp_path, script: str = PACKAGE_SCRIPT) -> dict:
    return {
        "requirements.txt": "trl==0.9.6\n",
        "src/alignment/__init__.py": "from .configs import ModelArguments, SFTConfig\nfrom .parser import H4ArgumentParser\n",
        "src/alignment/configs.py": PACKAGE_CONFIGS,
        "src/alignment/parser.py": "from transformers import HfArgumentParser\n\n\nclass H4ArgumentParser(HfArgumentParser):\n    pass\n",
        "scripts/run_sft.py": script,
    }


def test_a_parser_in_another_module_that_would_refuse_the_gaudi_arguments_holds_the_whole_project(tmp_path):
    # The script's parser is handed the package's own config (built on TRL's,
    # re-exported by the package) beside arguments with a field the Gaudi
    # config adds: moved, the package's config would make the parser fail.
    files = _package_project(tmp_path)
    ported = _rewrite_tree(tmp_path, files)
    assert ported == {name: textwrap.dedent(text).lstrip("\n") for name, text in files.items()}
    messages = _trainer_messages(tmp_path, "--unsafe-fixes")
    assert messages and all("scripts/run_sft.py:6: the argument parser would refuse the Gaudi arguments: `ModelArguments` defines --attn_implementation" in m for m in messages)


def test_without_the_clashing_field_the_package_and_its_script_move(tmp_path):
    files = _package_project(tmp_path)
    files["src/alignment/configs.py"] = PACKAGE_CONFIGS.replace("    attn_implementation: Optional[str] = field(default=None)\n", "")
    ported = _rewrite_tree(tmp_path, files)
    assert "class SFTConfig(GaudiSFTConfig):" in ported["src/alignment/configs.py"]
    assert "GaudiSFTTrainer(model=model_args.model_name_or_path, args=training_args, gaudi_config=" in ported["scripts/run_sft.py"]


def test_the_facts_follow_a_class_the_package_re_exports_to_its_parser(tmp_path):
    from hpu_port.project import find_facts

    files = {tmp_path / name: textwrap.dedent(text).lstrip("\n").encode() for name, text in _package_project(tmp_path).items() if name.endswith(".py")}
    fields = {"": frozenset({"attn_implementation", "use_habana"}), "trl.ModelConfig": frozenset({"attn_implementation"})}
    facts = find_facts({str(path): data for path, data in files.items()}, (), bases=("trl.SFTConfig",), argument_fields=fields)
    assert [name for name, _, _ in facts.subclasses] == ["alignment.configs.SFTConfig"]
    assert [path.rsplit("/", 1)[-1] for path in facts.parsing_scripts] == ["run_sft.py"]
    [(library, path, line, why)] = facts.argument_clashes
    assert (library, path.rsplit("/", 1)[-1], line) == ("trl.SFTConfig", "run_sft.py", 6)
    assert "`ModelArguments` defines --attn_implementation" in why
    # TRL's own ModelConfig clashes by the rule's table.
    files[tmp_path / "scripts/run_sft.py"] = files[tmp_path / "scripts/run_sft.py"].replace(b"from alignment import H4ArgumentParser, ModelArguments, SFTConfig", b"from alignment import H4ArgumentParser, SFTConfig\nfrom trl import ModelConfig as ModelArguments")
    facts = find_facts({str(path): data for path, data in files.items()}, (), bases=("trl.SFTConfig",), argument_fields=fields)
    assert [why for _, _, _, why in facts.argument_clashes] == ["the argument parser would refuse the Gaudi arguments: `ModelConfig` defines --attn_implementation, which the Gaudi arguments add too"]


def test_the_pins_of_the_project_root_count_past_a_folder_with_requirements_of_its_own(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["trl==0.9.6"]\n')
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "requirements.txt").write_text("datasets>=2.0\n")
    script = tmp_path / "scripts" / "train.py"
    script.write_text(textwrap.dedent(TRL_SCRIPT).lstrip("\n"))
    from click.testing import CliRunner

    from hpu_port.cli import main

    CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--select", "HPU521", "--no-cache", str(script)], catch_exceptions=False)
    assert "GaudiSFTTrainer" in script.read_text()


def test_launch_lines_of_the_scripts_the_run_moves_get_the_flags(tmp_path):
    from click.testing import CliRunner

    from hpu_port.cli import main

    files = {"trainer_qa.py": TRAINER_MODULE, "run_qa.py": SCRIPT, "scripts/run.sh": LAUNCHES}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    checked = CliRunner().invoke(main, ["check", "--unsafe-fixes", "--select", "HPU521,HPU847", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert "run.sh:2:8: HPU847 [*]" in checked.output
    CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--select", "HPU521,HPU847", "--no-cache", str(tmp_path)], catch_exceptions=False)
    lines = (tmp_path / "scripts" / "run.sh").read_text().splitlines()
    assert lines[1] == "python run_qa.py --use_habana --use_lazy_mode --model_name_or_path bert-base-uncased --dataset_name squad"
    assert lines[3] == "python run_qa.py --use_habana --use_lazy_mode --dataset_name squad"  # already there: untouched
    assert "GaudiTrainingArguments" in (tmp_path / "run_qa.py").read_text()


def test_launch_lines_of_a_script_the_run_holds_stay_reported(tmp_path):
    from click.testing import CliRunner

    from hpu_port.cli import main

    own = TRAINER_MODULE.replace("*args, eval_examples=None, **kwargs", "model, args, eval_examples=None").replace(
        "super().__init__(*args, **kwargs)", "super().__init__(model, args)"
    )
    files = {"trainer_qa.py": own, "run_qa.py": SCRIPT, "scripts/run.sh": LAUNCHES}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"))
    CliRunner().invoke(main, ["rewrite", "--unsafe-fixes", "--select", "HPU521,HPU847", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert (tmp_path / "scripts" / "run.sh").read_text() == textwrap.dedent(LAUNCHES).lstrip("\n")


def test_a_project_trainer_called_where_the_move_does_not_look_holds_the_move(tmp_path):
    # run.py names no class of transformers: the move never reads it, and its
    # call of the moved subclass would get no Gaudi configuration.
    caller = "from trainer_qa import QuestionAnsweringTrainer\n\n\ndef run(model, args):\n    return QuestionAnsweringTrainer(model=model, args=args)\n"
    files = {"trainer_qa.py": TRAINER_MODULE, "run_qa.py": SCRIPT, "run.py": caller}
    ported = _rewrite_tree(tmp_path, files)
    assert ported == {name: textwrap.dedent(text).lstrip("\n") for name, text in files.items()}
    messages = _trainer_messages(tmp_path, "--unsafe-fixes")
    assert messages and all("run.py:5: `QuestionAnsweringTrainer`, the project's class built on the library's, is called in a file that names none" in m for m in messages)
