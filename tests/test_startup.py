"""What a run on files with nothing to port pays for: no libcst, rules from the cache."""

import subprocess
import sys
from types import SimpleNamespace

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


@pytest.mark.parametrize("source", [
    pytest.param('import argparse\n\ndef main():\n    print(argparse.ArgumentParser().parse_args())\n\n'
                 'if __name__ == "__main__":\n    main()\n', id="entry-point-block"),
    pytest.param('"""Runs on cuda with nccl and fp16."""\nimport os\n# move the model to cuda\nprint(os.sep)\n', id="words-in-prose"),
    pytest.param("import torch\nfor i in range(3):\n    print(i)\n", id="advice-words-without-the-code"),
])
def test_a_file_whose_triggers_the_code_does_not_bear_out_never_loads_libcst(tmp_path, source):
    # Decided by the standard parser, as the port would decide it first.
    assert "libcst" not in modules_loaded_by(tmp_path, source, "--no-cache")


def test_a_file_with_cuda_code_does_load_it(tmp_path):
    # The probe above can see libcst: without this, it could pass by accident.
    assert "libcst" in modules_loaded_by(tmp_path, CUDA, "--no-cache")


def test_a_python_file_never_loads_the_kinds_that_read_documents(tmp_path):
    # What a kind tells about the files it reads is kept with the cached rules.
    cache = str(tmp_path / "cache")
    modules_loaded_by(tmp_path, CUDA, "--cache-dir", cache)
    (tmp_path / "module.py").write_text(CUDA + "y = 1\n")
    loaded = modules_loaded_by(tmp_path, CUDA + "y = 1\n", "--cache-dir", cache)
    assert "libcst" in loaded and "hpu_port.kinds.device_string" in loaded
    assert not loaded & {"hpu_port.formats", "hpu_port.documents", "hpu_port.kinds.config_value", "hpu_port.kinds.command"}


def test_loaded_rules_carry_what_their_kind_tells_of_the_files_they_read():
    by_code = {rule.code: rule for rule in load_rules()}
    assert by_code["HPU110"].screening.reads_python and by_code["HPU110"].screening.triggers
    assert not by_code["HPU821"].screening.reads_python
    assert "yaml" in by_code["HPU821"].screening.document_types


def test_rules_come_from_the_cache_the_second_time(tmp_path, monkeypatch):
    first = load_rules(cache_dir=tmp_path)

    def no_toml(*args, **kwargs):
        raise AssertionError("a rule file was read again")

    monkeypatch.setattr(rules, "toml", lambda: SimpleNamespace(loads=no_toml))
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
    entries = list((tmp_path / rule_cache.SUBDIRECTORY).glob("*.json"))
    assert len(entries) == 1
    entries[0].write_bytes(b"not a rule cache entry")
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
