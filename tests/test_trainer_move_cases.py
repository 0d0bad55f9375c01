"""The move to the Gaudi trainer (HPU521, kind ``trainer-move``): when it is made, and when the file is left as it is."""

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
        ("Trainer(model, **options)", "by position or with"),
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


def test_trl_trainers_are_reported_not_moved():
    code = "from trl import SFTTrainer\n\ntrainer = SFTTrainer(model=model, args=config)\n"
    result = port(code, **MOVE)
    assert result.new_source is None
    [finding] = [f for f in result.findings if f.code == "HPU521"]
    assert "GaudiSFTTrainer" in finding.message and not finding.fixable
