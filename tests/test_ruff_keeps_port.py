"""A port survives the linter the project already runs.

ruff (like flake8) reports an import nothing reads (F401) and `--fix`
deletes it: a Gaudi import kept only for what importing it does (it
registers the HPU device and its collectives) would go, and with it the
device. isort's order (ruff's `I` rules) places each import in its section:
a Gaudi import appended after a sorted block breaks it. Every bundled
example, fixture and rule example is ported and linted before and after:
the port adds no import-order, unused-import or unused-variable violation,
and `ruff check --fix` leaves its Gaudi imports in place.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpu_port.examples import example_file, example_source
from hpu_port.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
CHECKS = "I,F401,F841"


def _ruff() -> str:
    found = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("ruff is not installed: pip install '.[test]'")
        pytest.skip("ruff is not installed (pip install '.[test]')")
    return found


def _violations(folder: Path, *extra: str) -> set:
    """(file, code, name) of each violation ruff finds in ``folder``, alone
    (no configuration of the folder's own)."""
    command = [_ruff(), "check", "--isolated", "--no-cache", "--select", CHECKS, "--output-format", "json", *extra, "."]
    run = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    return {(Path(v["filename"]).name, v["code"], v["message"]) for v in json.loads(run.stdout or "[]")}


def _bundled_python() -> list[Path]:
    fixtures = [p for p in (ROOT / "tests" / "fixtures").rglob("*.py") if not p.name.endswith(".expected.py")]
    return [ROOT / "docs" / "examples" / "train_cuda.py", *sorted(fixtures)]


def _port(files: dict, folder: Path) -> None:
    for name, text in files.items():
        (folder / name).write_text(text)
    run = subprocess.run([sys.executable, "-m", "hpu_port", "rewrite", "--no-cache", "-q", "."], cwd=folder, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr


def _gaudi_imports(folder: Path) -> dict:
    return {
        path.name: [line for line in path.read_text().splitlines() if "import habana_frameworks" in line]
        for path in sorted(folder.glob("*.py"))
    }


def test_bundled_scripts_gain_no_unused_names_and_keep_gaudi_imports_through_ruff_fix(tmp_path):
    files = {f"{index:02d}_{path.name}": path.read_text() for index, path in enumerate(_bundled_python())}
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    for name, text in files.items():
        (before / name).write_text(text)
    _port(files, after)
    assert _gaudi_imports(after) != _gaudi_imports(before), "nothing was ported"
    assert _violations(after) - _violations(before) == set()
    imports = _gaudi_imports(after)
    _violations(after, "--fix")
    assert _gaudi_imports(after) == imports


def _rule_examples() -> list:
    """(name, before, after) of each Python rule example a rule rewrites."""
    cases = []
    for rule in load_rules():
        for index, example in enumerate(rule.examples, 1):
            if example.valid or example.after is None or not example_file(rule, example).endswith(".py"):
                continue
            if rule.kind == "left-unused":
                continue  # its example shows the F841 a rewrite leaves, which the rule reports
            cases.append((f"{rule.code}_{index}.py", example_source(example.before), example_source(example.after)))
    return cases


def test_rule_examples_gain_no_unused_gaudi_import(tmp_path):
    cases = _rule_examples()
    assert len(cases) > 50
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    for name, old, new in cases:
        (before / name).write_text(old)
        (after / name).write_text(new)
    added = _violations(after) - _violations(before)
    # Snippets read names they never define (`model`, `loss`): only what the
    # port itself adds counts, and it adds imports.
    assert {v for v in added if "habana_frameworks" in v[2] or v[1] == "F841"} == set()
    imports = _gaudi_imports(after)
    _violations(after, "--fix")
    assert _gaudi_imports(after) == imports
