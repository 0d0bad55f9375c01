import functools
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from hpu_port.engine import port_source
from hpu_port.rules import load_rules, select_rules
from hpu_port.model import Options
from hpu_port.settings import RuleSet

REPO = Path(__file__).resolve().parent.parent

# The cache is sealed with a key of the user's; the tests (and the commands
# they start) use one of their own and never create the user's key file.
os.environ.setdefault("HPU_PORT_CACHE_KEY", "hpu-port tests")
# The tests read plain output: a CI log's colour and format settings are the run's, not theirs.
for _variable in ("FORCE_COLOR", "HPU_PORT_OUTPUT_FORMAT"):
    os.environ.pop(_variable, None)


@pytest.fixture(scope="session")
def all_rules():
    return load_rules()


def make_ruleset(select=(), extra_rules=(), **options):
    rules = _bundled_rules() if not extra_rules else load_rules(extra_rules)
    return RuleSet(select_rules(rules, select), Options(**options))


_LOADED: dict = {}


def _bundled_rules() -> list:
    """The bundled rules, read once per test process for as long as their
    files and the device evidence stay as they are (reading and checking
    every rule file takes a tenth of a second; the tests build rule sets
    thousands of times). Rules are frozen: sharing them is what one
    long-lived process does."""
    from hpu_port import rule_cache
    from hpu_port.device import evidence
    from hpu_port.rules import bundled_rules_dir, rule_files

    key = rule_cache.key([*rule_files([bundled_rules_dir()]), evidence.bundled_file()])
    if key is None or key not in _LOADED:
        rules = load_rules()
        if key is None:
            return rules
        _LOADED.clear()
        _LOADED[key] = rules
    return list(_LOADED[key])


def port(code, select=(), extra_rules=(), apply=True, **options):
    """Port a snippet with the default (or selected) rules; returns the FileResult."""
    source = textwrap.dedent(code).lstrip("\n").encode()
    return port_source("snippet.py", source, make_ruleset(select, extra_rules, **options), apply)


def ported(code, **kwargs):
    result = port(code, **kwargs)
    assert result.error is None, result.error
    return (result.new_source or result.source).decode()


def python_programs():
    """Random Python programs from the language's grammar (hypothesmith), made
    when a test first draws one: building the grammar's parser takes
    seconds, which collecting the tests should not pay."""
    from hypothesis import strategies as st

    return st.deferred(lambda: _grammar_programs())


@functools.lru_cache(maxsize=None)
def _grammar_programs():
    import hypothesmith

    return hypothesmith.from_grammar()


def rename_rule_toml(code="HPU901", name="my-rename", old="mylib.cuda_helper", new="mylib.hpu_helper") -> str:
    """A complete, valid user rule file of kind `rename`, for tests of user rules."""
    module = old.rsplit(".", 1)[0]
    call_old, call_new = old.split(".", 1)[1], new.split(".", 1)[1]
    return f'''code = "{code}"
name = "{name}"
summary = "Rename my CUDA helper."
why = "Because."
kind = "rename"
fix = "safe"
default = true
category = "device"
message = "`{{name}}` -> `{{replacement}}`"

[renames]
"{old}" = "{new}"

[[examples.invalid]]
before = "import {module}\\n{module}.{call_old}()\\n"
after = "import {module}\\n{module}.{call_new}()\\n"

[[examples.valid]]
code = "import {module}\\n{module}.{call_new}()\\n"
'''


@pytest.fixture(autouse=True)
def _private_cache_directory(tmp_path_factory, monkeypatch):
    """Each test caches into a directory of its own: never the user's, and no
    result cached by one test answers for another (some replace engine parts)."""
    directory = tmp_path_factory.mktemp("hpu-port-cache")
    monkeypatch.setenv("HPU_PORT_CACHE_DIR", str(directory))
    return directory


def pytest_addoption(parser):
    parser.addoption(
        "--all-files",
        action="store_true",
        help="port every Python file of the standard library and site-packages, not a sample",
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--all-files"):
        for item in items:
            if item.get_closest_marker("corpus"):
                item.add_marker(pytest.mark.slow)


def download_cache_directory() -> Path:
    """Where tests keep downloads between runs: $HPU_PORT_TEST_CACHE, else the
    user's cache directory; never the repository."""
    configured = os.environ.get("HPU_PORT_TEST_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hpu-port-tests"


def cached_wheels(requirements: list) -> Path:
    """A directory holding the wheels of ``requirements`` (all `name==version`),
    downloaded only when not there from an earlier run."""
    directory = download_cache_directory() / "wheels"
    directory.mkdir(parents=True, exist_ok=True)
    missing = [r for r in requirements if not any(directory.glob(f"{_wheel_prefix(r)}-*.whl"))]
    if missing:
        # Into a directory of its own first, so that a run that stops halfway
        # (or another run at the same time) never sees a partial wheel.
        with tempfile.TemporaryDirectory(dir=directory) as download:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--only-binary=:all:", "-d", download, *missing],
                check=True,
            )
            for wheel in Path(download).glob("*.whl"):
                os.replace(wheel, directory / wheel.name)
    return directory


def _wheel_prefix(requirement: str) -> str:
    name, version = requirement.split("==")
    return f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}"


def native_recursion_is_capped() -> bool:
    """True on Pythons that cap recursion through native calls at a fixed
    depth whatever the stack and limit (3.12.0 and 3.12.1 stop at 1500):
    there the deepest files cannot be ported."""
    from hpu_port import deep_stack

    def down(n: int) -> int:
        return 0 if n == 0 else list(map(down, [n - 1]))[0] + 1

    try:
        deep_stack.call(down, 3000)
    except RecursionError:
        return True
    return False
