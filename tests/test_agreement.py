"""`check` and `rewrite` agree: what check says a rewrite leaves is what it leaves.

Over the bundled examples and fixtures: check, rewrite in place, check again.
Everything check marked fixable is gone after the rewrite, and the findings
that need a person are the same, rule by rule, before and after.
"""

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import REPO

SOURCES = sorted([*(REPO / "docs" / "examples").glob("*.py"), *(REPO / "tests" / "fixtures").rglob("*_cuda.py")])
OPTION_SETS = [[], ["--fp16-to-bf16"], ["--mode", "eager"], ["--select", "ALL"]]


def check(tree: Path, options: list) -> list:
    done = CliRunner().invoke(main, ["check", "--no-cache", *options, "--format", "json", str(tree)], catch_exceptions=False)
    assert done.exit_code in (0, 1), done.stderr
    return json.loads(done.stdout)["findings"]


def person_work(findings: list) -> Counter:
    return Counter(f["code"] for f in findings if not f["fixable"])


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "default")
def test_check_predicts_what_rewrite_leaves(tmp_path, options):
    for source in SOURCES:
        shutil.copy(source, tmp_path / source.name)
    before = check(tmp_path, options)
    assert any(f["fixable"] for f in before)
    rewrite = CliRunner().invoke(main, ["rewrite", "--no-cache", *options, str(tmp_path)], catch_exceptions=False)
    assert rewrite.exit_code == 0, rewrite.stderr
    after = check(tmp_path, options)
    assert [f for f in after if f["fixable"]] == []
    assert person_work(after) == person_work(before)


def test_a_mention_beside_a_fix_is_counted_before_the_rewrite(tmp_path):
    # The fix rewrites `.cuda()`; `use_cuda` stays and needs a person, before and after.
    target = tmp_path / "train.py"
    target.write_text("import torch\nuse_cuda = True\nx = torch.zeros(2).cuda() if use_cuda else None\n")
    before = check(tmp_path, [])
    CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)], catch_exceptions=False)
    after = check(tmp_path, [])
    assert person_work(before) == person_work(after)
    assert ("HPU190", 3) in {(f["code"], f["line"]) for f in before}


def test_findings_printed_by_rewrite_point_into_the_rewritten_file(tmp_path):
    # Inserted imports and mark_step calls move every later line down.
    target = tmp_path / "train.py"
    target.write_text(
        "import torch\n\ndef train(model, loader, opt):\n    for x in loader:\n"
        "        loss = model(x.cuda())\n        loss.backward()\n        opt.step()\n"
        "    print(torch.cuda.get_device_capability())\n"
    )
    done = CliRunner().invoke(main, ["rewrite", "--no-cache", str(target)], catch_exceptions=False)
    printed = [line for line in done.stderr.splitlines() if ": HPU130 " in line]
    assert len(printed) == 1
    line, column = map(int, printed[0].split(":")[1:3])
    rewritten = target.read_text().splitlines()
    assert rewritten[line - 1][column - 1:].startswith("torch.cuda.get_device_capability")
    assert line != 8  # where it was before the rewrite


def _python_examples():
    from hpu_port.examples import example_file, example_options, example_source
    from hpu_port.rules import load_rules

    for rule in load_rules():
        for index, example in enumerate(rule.examples, 1):
            name = example_file(rule, example)
            if name.endswith(".py"):
                yield pytest.param(name, example_source(example.before).encode(), example_options(example),
                                   id=f"{rule.code}-{index}")


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("name, source, options", list(_python_examples()))
def test_what_is_held_is_held_again_after_the_rewrite(name, source, options):
    """Over every rule example, with every rule on: the blockers held back
    ("not rewritten: ...") are the same before the rewrite and in its output,
    and nothing fixable is left; the port's own output never turns a held
    check into a ported one, nor the other way round."""
    from hpu_port.engine import port_bytes
    from hpu_port.rules import load_rules, select_rules
    from hpu_port.settings import RuleSet

    rules = load_rules()
    ruleset = RuleSet(select_rules(rules), options, analysis=rules)
    before = port_bytes(name, source, ruleset, False)
    output = port_bytes(name, source, ruleset, True).new_source or source
    after = port_bytes(name, output, ruleset, False)

    def held(result) -> Counter:
        return Counter(f.code for f in result.findings if not f.fixable and not f.advice and "(not rewritten" in f.message)

    assert [f for f in after.findings if f.fixable] == []
    assert held(after) == held(before)
