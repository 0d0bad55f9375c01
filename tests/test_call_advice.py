"""Advice whose text and reach depend on a call's arguments (kind `call-advice`)."""

import pytest

from hpu_port.kinds import get_kind
from tests.conftest import REPO, port


def messages(code, select):
    result = port(code, select=select, apply=False)
    assert result.error is None, result.error
    return [(f.line, f.message) for f in result.findings if f.code in select]


def test_fused_clip_norm_advice_names_the_arguments_it_carries_over():
    found = messages(
        """
        from torch.nn.utils import clip_grad_norm_

        norm = clip_grad_norm_(params, cfg.clip, cfg.norm_type, True, foreach=True)
        """,
        ["HPU702"],
    )
    assert len(found) == 1
    message = found[0][1]
    assert "FusedClipNorm(params, cfg.clip)" in message and "clipper.clip_norm(params)" in message
    # Nothing FusedClipNorm lacks is dropped without a word.
    assert "only where `cfg.norm_type` is 2" in message
    assert "`error_if_nonfinite=True`" in message and "torch.isfinite" in message
    assert "leave out `foreach=True`" in message


def test_fused_clip_norm_default_arguments_need_no_note():
    [(_, message)] = messages(
        "import torch\ntorch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=2.0, error_if_nonfinite=False, foreach=None)\n",
        ["HPU702"],
    )
    assert message.endswith("it returns the total norm too")


@pytest.mark.parametrize(
    "norm", ["1", "float('inf')", "math.inf", "'inf'"],
)
def test_fused_clip_norm_is_not_advised_for_other_norms(norm):
    code = f"import math, torch\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, norm_type={norm})\n"
    assert messages(code, ["HPU702"]) == []


def test_a_call_that_unpacks_a_mapping_is_not_guessed_at():
    assert messages("import torch\ntorch.nn.utils.clip_grad_norm_(model.parameters(), **clip_args)\n", ["HPU702"]) == []


TRAINING_TOKENIZER = """
def train(model, tokenizer, batches, optimizer):
    for texts in batches:
        inputs = tokenizer(texts, padding={padding}, return_tensors="pt")
        model(**inputs).loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("padding, advised", [("True", True), ('"longest"', True), ('"max_length"', False), ("False", False)])
def test_tokenizer_padding_in_a_training_script(padding, advised):
    found = messages(TRAINING_TOKENIZER.format(padding=padding), ["HPU722"])
    assert bool(found) == advised
    if advised:
        assert found[0][0] == 3 and f"`padding={padding}`" in found[0][1]


def test_tokenizer_padding_to_a_multiple_is_bucketing_already():
    code = TRAINING_TOKENIZER.format(padding='True, pad_to_multiple_of=64')
    assert messages(code, ["HPU722"]) == []


def test_collators_with_positional_padding():
    found = messages(
        """
        from transformers import DataCollatorForSeq2Seq, DataCollatorWithPadding

        a = DataCollatorWithPadding(tokenizer, "max_length", 128)
        b = DataCollatorForSeq2Seq(tokenizer, model, True, None, None)
        c = DataCollatorForSeq2Seq(tokenizer, model, True, None, 64)
        """,
        ["HPU722"],
    )
    assert [line for line, _ in found] == [4]


def test_the_kind_rejects_placeholders_that_name_no_parameter():
    kind = get_kind("call-advice")
    table = {"calls": {"torch.f": {"advice": "use {nothing}", "signature": ["x"]}}}
    with pytest.raises(ValueError, match="names no parameter"):
        kind.parse_params(table)
    with pytest.raises(ValueError, match="needs 'only-if'"):
        kind.parse_params({"calls": {"*": {"advice": "text"}}})


def test_step_loop_named_by_its_own_line_not_the_comment_above_it():
    [(_, message)] = messages(
        """
        def train(model, loader, optimizer):

            # one pass over the data
            for x, y in loader:
                model(x, y).backward()
                optimizer.step()
        """,
        ["HPU708"],
    )
    assert "`for x, y in loader:`" in message


FINETUNE = REPO / "tests" / "fixtures" / "advice_hf"


def test_a_hugging_face_finetuning_script_gets_clipping_and_padding_advice():
    script = FINETUNE / "finetune_unoptimised.py"
    lines = script.read_text().splitlines()
    found = port(script.read_text(), select=["HPU702", "HPU722"], apply=False).findings
    advised = [(f.code, lines[f.line - 1].strip()) for f in found]
    assert advised == [
        ("HPU722", "collator = DataCollatorWithPadding(tokenizer)"),
        ("HPU702", "torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm, foreach=True)"),
        ("HPU722", 'batch = tokenizer(sentences, padding=True, return_tensors="pt")'),
    ]
    assert "leave out `foreach=True`" in found[1].message


def test_the_tuned_finetuning_script_gets_neither():
    script = FINETUNE / "finetune_optimised.py"
    assert port(script.read_text(), select=["HPU702", "HPU722"], apply=False).findings == []


def test_a_name_counts_as_its_value_only_where_one_plain_assignment_binds_it():
    import libcst as cst

    from hpu_port.visitors.call_advice import _assigned_once

    function = cst.parse_module(
        "def load(a, r, p):\n"
        "    location = 'cpu' if a else None\n"
        "    twice = 1\n    twice = 2\n"
        "    first, second = 3, 4\n    second = 5\n"
        "    for looped in r:\n        pass\n    looped = 6\n"
        "    with open(p) as handle:\n        pass\n    handle = 7\n"
        "    total = 0\n    total += 1\n"
    ).body[0]
    assert _assigned_once(function) == {"location": "'cpu' if a else None"}
