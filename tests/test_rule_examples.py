"""Every example of every rule file is a test: adding a rule adds its tests."""

import pytest

from hpu_port.examples import example_source, run_example
from hpu_port.rules import load_rules

RULES = load_rules()
CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{'valid' if example.valid else 'invalid'}-{index}")
    for rule in RULES
    for index, example in enumerate(rule.examples, 1)
]


@pytest.mark.parametrize("rule, example", CASES)
def test_example(rule, example):
    before = example_source(example.before)
    result = run_example(rule, RULES, example)
    assert result.error is None
    output = (result.new_source or result.source).decode()
    codes = {f.code for f in result.findings}
    if example.valid:
        assert rule.code not in codes, f"{rule.code} reported on code that must stay unchanged"
        assert result.new_source is None, "valid example was changed"
        return
    assert rule.code in codes, f"{rule.code} found nothing in its own invalid example"
    expected = example_source(example.after) if example.after is not None else before
    assert output == expected
    # A second run over the output changes nothing.
    again = run_example(rule, RULES, example, source=output)
    assert again.error is None
    assert again.new_source is None, (again.new_source or b"").decode()


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_file_named_after_code(rule):
    from pathlib import Path

    assert Path(rule.source).name == f"{rule.code}-{rule.name}.toml"
