"""What code is whose device is decided once, whatever rules are selected.

`--select` and `--ignore` choose which findings are reported and fixed; they
never change what another rule's analysis holds. Over every rule example and
every bundled example: each rule's findings, and whether each is fixable, are
the same when the rule runs alone, among the default rules, and when any other
rule is ignored. Rules that add an import as the consequence of other fixes
(`ensure-import`) are the exception by design: they answer to what is fixed;
so does the fallback that reports a line still mentioning CUDA once the rest is
ported (an import whose every use another rule rewrites is dropped, and says
nothing, only when that rule is on).
"""

from pathlib import Path

import pytest

from hpu_port.engine import port_bytes
from hpu_port.examples import example_file, example_options, example_source
from hpu_port.kinds import fallback_codes
from hpu_port.model import Options
from hpu_port.rules import load_rules, select_rules
from hpu_port.settings import RuleSet
from tests.conftest import REPO

RULES = load_rules()
DEFAULT = select_rules(RULES)
CONSEQUENCES = [rule for rule in RULES if rule.kind == "ensure-import"]
# What is left after the fixes: consequences, and the fallback on what still mentions CUDA.
AFTER_FIXES = {rule.code for rule in CONSEQUENCES} | fallback_codes(RULES)


def _sources():
    for rule in RULES:
        for index, example in enumerate(rule.examples, 1):
            name = f"{rule.code}-{'valid' if example.valid else 'invalid'}-{index}"
            yield pytest.param(example_file(rule, example), example_source(example.before).encode(),
                               example_options(example), id=name)
    bundled = sorted((REPO / "docs" / "examples").glob("*.py")) + sorted((REPO / "tests" / "fixtures").glob("*.py"))
    for path in bundled:
        yield pytest.param(path.name, path.read_bytes(), Options(), id=path.name)


def _findings(name: str, source: bytes, chosen: list, options: Options) -> list:
    result = port_bytes(name, source, RuleSet(chosen, options, analysis=RULES), False)
    return sorted((f.code, f.line, f.column, f.end_line, f.end_column, f.fixable, f.message) for f in result.findings)


def _of(findings: list, code: str) -> list:
    return [f for f in findings if f[0] == code]


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("name, source, options", list(_sources()))
def test_a_rules_findings_do_not_depend_on_the_selection(name, source, options):
    among_all = _findings(name, source, DEFAULT, options)
    for code in sorted({f[0] for f in among_all}):
        rule = next(r for r in RULES if r.code == code)
        if rule in CONSEQUENCES:
            continue
        alone = _findings(name, source, [rule, *(r for r in CONSEQUENCES if r is not rule)], options)
        assert _of(alone, code) == _of(among_all, code), f"{code} alone"
        without = _findings(name, source, [r for r in DEFAULT if r is not rule], options)
        others = [f for f in among_all if f[0] != code]
        assert [f for f in without if f[0] not in AFTER_FIXES] == [
            f for f in others if f[0] not in AFTER_FIXES
        ], f"with {code} ignored"


def test_an_ignored_rule_still_holds_what_it_guards(tmp_path):
    """A check kept for NVIDIA GPUs keeps the NVIDIA-only library it guards,
    also when the rule that keeps the check is switched off."""
    from click.testing import CliRunner

    from hpu_port.cli import main

    script = tmp_path / "sel.py"
    script.write_text(
        "import torch\nimport pynvml\n\n\ndef setup(model):\n    if torch.cuda.is_available():\n"
        "        pynvml.nvmlInit()\n        torch.cuda.synchronize()\n    return model\n"
    )
    for options in ([], ["--ignore", "HPU101"], ["--select", "HPU510"], ["--ignore", "HPU615"]):
        result = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", *options, str(script)])
        assert result.exit_code == 0, (options, result.output)


def test_a_module_of_kernels_stays_held_when_its_reporter_is_ignored(tmp_path):
    from click.testing import CliRunner

    from hpu_port.cli import main

    script = tmp_path / "tri.py"
    script.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def add_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\ndef launch(x):\n"
        "    out = torch.empty_like(x, device=\"cuda\")\n    torch.cuda.synchronize()\n    return out\n"
    )
    for options in ([], ["--ignore", "HPU615"], ["--select", "HPU1"]):
        result = CliRunner().invoke(main, ["rewrite", "--dry-run", "--no-cache", *options, str(script)])
        assert result.exit_code == 0, (options, result.output)


IF_AND_EXPRESSION = '''
import torch
import pynvml


def a():
    if torch.cuda.is_available() and pynvml.nvmlInit() is None:
        n = torch.cuda.device_count()
    return n


def b():
    n = torch.cuda.device_count() if torch.cuda.is_available() and pynvml.nvmlInit() is None else 0
    return n
'''


def test_an_if_and_a_conditional_expression_get_the_same_answer():
    """Neither form is ported: the check guards NVML in its own test, and the
    arm of the expression is walked before its test, yet held all the same."""
    from tests.conftest import port

    result = port(IF_AND_EXPRESSION)
    assert result.new_source is None
    by_function = {}
    for finding in result.findings:
        function = "a" if finding.line < 10 else "b"
        by_function.setdefault(function, []).append((finding.code, finding.fixable))
    assert sorted(by_function["a"]) == sorted(by_function["b"])
    assert not any(fixable for _, fixable in by_function["a"])


def test_what_needs_a_person_is_the_same_before_and_after_the_rewrite():
    from tests.conftest import port

    before = port(IF_AND_EXPRESSION, apply=False)
    after_source = (port(IF_AND_EXPRESSION).new_source or IF_AND_EXPRESSION.lstrip("\n").encode()).decode()
    after = port(after_source, apply=False)
    manual = lambda result: sorted((f.code, f.line) for f in result.findings if not f.fixable)  # noqa: E731
    assert manual(after) == manual(before)


def test_an_earlier_pass_is_no_evidence_of_an_hpu_path():
    """The second pass reads the first one's `torch.hpu...`: it must not take it
    for a path the function had for the HPU and keep its CUDA check."""
    from hpu_port.engine import _port_once
    from tests.conftest import make_ruleset

    original = b"import torch\n\n\ndef count():\n    if torch.cuda.is_available():\n        return 1\n    return 0\n"
    written = original.replace(b"return 0", b"return torch.hpu.device_count()")
    ruleset = make_ruleset().python_rules
    as_read = _port_once("count.py", written, ruleset, True)
    as_second_pass = _port_once("count.py", written, ruleset, True, origin=original)
    assert b"torch.cuda.is_available" in as_read.source and as_read.new_source is None
    assert as_second_pass.new_source is not None and b"torch.hpu.is_available()" in as_second_pass.new_source
