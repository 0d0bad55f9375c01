"""What a run on files with nothing to port pays for: no libcst, rules from the cache."""

import subprocess
import sys

import pytest

from hpu_port import rule_cache, rules
from hpu_port.rules import load_rules

PLAIN = "import os\nprint(os.getcwd())\n"
CUDA = 'import torch\nx = torch.zeros(2, device="cuda")\n'


def modules_loaded_by(tmp_path, source: str, *options: str) -> set:
    target = tmp_path / "module.py"
    target.write_text(source)
    probe = (
        "import sys; from hpu_port.cli import main\n"
        "try:\n    main([" + ", ".join(repr(o) for o in ("check", "-q", *options, str(target))) + "])\n"
        "except SystemExit:\n    pass\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


@pytest.mark.parametrize("options", [(), ("--no-cache",)])
def test_a_file_with_nothing_to_port_never_loads_libcst(tmp_path, options):
    assert "libcst" not in modules_loaded_by(tmp_path, PLAIN, *options)


def test_a_file_with_cuda_code_does_load_it(tmp_path):
    # The probe above can see libcst: without this, it could pass by accident.
    assert "libcst" in modules_loaded_by(tmp_path, CUDA, "--no-cache")


def test_rules_come_from_the_cache_the_second_time(tmp_path, monkeypatch):
    first = load_rules(cache_dir=tmp_path)

    def no_toml(*args, **kwargs):
        raise AssertionError("a rule file was read again")

    monkeypatch.setattr(rules.tomllib, "loads", no_toml)
    assert load_rules(cache_dir=tmp_path) == first


def test_a_changed_rule_file_is_read_again(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text(_user_rule("first message"))
    cache = tmp_path / "cache"
    assert _message(load_rules([extra], cache)) == "first message"
    extra.write_text(_user_rule("second, longer message"))
    assert _message(load_rules([extra], cache)) == "second, longer message"


def test_a_damaged_entry_is_ignored(tmp_path):
    expected = load_rules(cache_dir=tmp_path)
    entries = list((tmp_path / rule_cache.SUBDIRECTORY).glob("*.pickle"))
    assert len(entries) == 1
    entries[0].write_bytes(b"not a pickle")
    assert load_rules(cache_dir=tmp_path) == expected


def test_without_a_cache_directory_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    load_rules()
    assert list(tmp_path.iterdir()) == []


def _message(loaded) -> str:
    return next(r.message for r in loaded if r.code == "XYZ001")


def _user_rule(message: str) -> str:
    return f'''
code = "XYZ001"
name = "my-rule"
summary = "A user rule."
why = "Because."
kind = "mention"
fix = "none"
default = true
category = "device"
message = "{message}"
words = ["xyzzy"]

[[examples.invalid]]
before = "xyzzy = 1\\n"

[[examples.valid]]
code = "plugh = 1\\n"
'''
