"""Any number of rules of one kind, each reporting under its own code.

A user rule file may use a kind that a bundled rule uses too; both must act.
Each kind is tried with a second rule that copies a bundled one under a new
code, on the bundled rule's own invalid example.
"""

import dataclasses

import pytest

from hpu_port.engine import port_bytes
from hpu_port.examples import example_file, example_options, example_ruleset, example_source
from hpu_port.kinds import kind_names
from hpu_port.rules import load_rules
from hpu_port.settings import RuleSet
from hpu_port.toolkit_log import ParsedLog, match, parse_text
from tests.conftest import port

RULES = load_rules()
IMPORTS = [r for r in RULES if r.kind == "ensure-import"]
# Kinds whose visitors let the first rule that matches a node have it: the
# copy then finds nothing there, but must never change what the first reports.
CLAIMING = {"call-rewrite", "device-index", "device-string", "drop-call", "import-in-branch", "in-step-loop", "method-call",
            "rename", "report", "string-literal", "trainer-move", "unwrap-context"}


def _first_rule_with_a_finding(kind):
    for rule in RULES:
        if rule.kind != kind:
            continue
        for example in rule.examples:
            if not example.valid and not example.select:
                return rule, example
    return None


CASES = [case for kind in kind_names() if (case := _first_rule_with_a_finding(kind))]


def _findings(rules, example):
    source = example_source(example.before).encode()
    ruleset = RuleSet([*rules, *(r for r in IMPORTS if r not in rules)], example_options(example))
    # The project facts an example stands on (`nvidia-config-values`, say) come with it.
    ruleset.facts = example_ruleset(rules[0], RULES, example).facts
    result = port_bytes(example_file(rules[0], example), source, ruleset, apply=False)
    assert result.error is None, result.error
    if example.toolkit_log is not None:  # the kind reports what a runtime log shows
        result.source, result.rules = source, tuple(ruleset.rules)
        match([result], ParsedLog(*parse_text(example_source(example.toolkit_log)), 1))
    return result.findings


def _at(findings, code):
    return sorted((f.line, f.column, f.message) for f in findings if f.code == code)


@pytest.mark.parametrize("rule, example", CASES, ids=[rule.kind for rule, _ in CASES])
def test_a_second_rule_of_the_kind_reports_under_its_own_code(rule, example):
    copy = dataclasses.replace(rule, code="XYZ901")
    alone = _findings([rule], example)
    copy_alone = _findings([copy], example)
    both = _findings([rule, copy], example)
    assert _at(alone, rule.code), f"{rule.code} finds nothing in its own example"
    assert _at(copy_alone, copy.code) == _at(alone, rule.code)
    assert _at(both, rule.code) == _at(alone, rule.code)
    if rule.kind in CLAIMING:
        assert set(_at(both, copy.code)) <= set(_at(copy_alone, copy.code))
    elif rule.kind != "mention":  # fallbacks speak once a line: see the next test
        assert _at(both, copy.code) == _at(copy_alone, copy.code)


def test_a_user_mention_rule_speaks_beside_the_bundled_one(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text(
        'code = "XYZ190"\nname = "vendor-mention"\nsummary = "s"\nwhy = "w"\nkind = "mention"\nfix = "none"\n'
        'default = true\ncategory = "device"\nmessage = "mentions {name}"\nwords = ["xyzzy"]\n'
        '[[examples.invalid]]\nbefore = "xyzzy = 1\\n"\n[[examples.valid]]\ncode = "plugh = 1\\n"\n'
    )
    result = port("use_cuda = True\nuse_xyzzy = True\n", select=["HPU190", "XYZ190"], extra_rules=[extra], apply=False)
    assert {(f.code, f.line) for f in result.findings} == {("HPU190", 1), ("XYZ190", 2)}


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
def test_the_most_specific_wildcard_answers_in_every_run(tmp_path):
    # `apex.*` (HPU506) and `apex.contrib.*` (HPU611) both cover this call;
    # which one reports must not depend on the interpreter's string hashing.
    import os
    import subprocess
    import sys

    target = tmp_path / "loss.py"
    # (Imported at the top without a fallback, the module would be kept whole instead.)
    target.write_text(
        "try:\n    from apex.contrib import xentropy\nexcept ImportError:\n    xentropy = None\n"
        "loss = xentropy.SoftmaxCrossEntropyLoss.apply(x, y)\n"
    )
    seen = set()
    for seed in ("1", "2", "3", "4"):
        done = subprocess.run(
            [sys.executable, "-m", "hpu_port", "check", "--no-cache", str(target)],
            capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed},
        )
        seen.add(tuple(line.split(" ")[1] for line in done.stdout.splitlines()))
    # The optional import is apex's (HPU506); the use, the most specific rule's (HPU611).
    assert seen == {("HPU506", "HPU611")}
