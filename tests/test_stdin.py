"""`-` as PATH: source from stdin, result to stdout (editor integrations)."""

from click.testing import CliRunner

from hpu_port.cli import main

CODE = 'import torch\nx = torch.zeros(2, device="cuda")\n'


def invoke(args, data: bytes):
    return CliRunner().invoke(main, args, input=data, catch_exceptions=False)


def test_rewrite_stdin_to_stdout():
    result = invoke(["rewrite", "-"], CODE.encode())
    assert result.exit_code == 0
    assert result.stdout_bytes == b'import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\nx = torch.zeros(2, device="hpu")\n'


def test_stdin_keeps_bytes_and_crlf():
    result = invoke(["rewrite", "-"], b'y = t.cuda()\r\n')
    assert result.stdout_bytes == b'import habana_frameworks.torch.core as htcore  # noqa: F401\r\n\r\ny = t.to("hpu")\r\n'


def test_unparsable_stdin_comes_back_unchanged_with_exit_2():
    result = invoke(["rewrite", "-", "--stdin-filename", "src/bad.py"], b'print "x"\ndevice = "cuda"\n')
    assert result.exit_code == 2
    assert result.stdout_bytes == b'print "x"\ndevice = "cuda"\n'
    assert result.stderr.startswith("src/bad.py: error: syntax error")


def test_check_stdin_names_the_file(tmp_path):
    result = invoke(["check", "-", "--stdin-filename", "train.py"], CODE.encode())
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:1:1: HPU001")


def test_stdin_filename_picks_the_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port]\nselect = ["HPU101"]\nexclude = ["generated"]\n')
    (tmp_path / "pkg").mkdir()
    result = invoke(["check", "-", "--stdin-filename", str(tmp_path / "pkg" / "m.py")], CODE.encode())
    assert result.exit_code == 0 and result.stdout == ""  # HPU110 is not selected there
    excluded = invoke(["rewrite", "-", "--stdin-filename", str(tmp_path / "generated" / "m.py")], CODE.encode())
    assert excluded.stdout_bytes == CODE.encode()


def test_dry_run_on_stdin_prints_a_diff():
    result = invoke(["rewrite", "--dry-run", "-", "--stdin-filename", "t.py"], CODE.encode())
    assert result.exit_code == 1
    assert result.stdout.startswith("--- t.py\n+++ t.py\n")


def test_stdin_cannot_be_mixed_with_paths(tmp_path):
    result = CliRunner().invoke(main, ["check", "-", str(tmp_path)], input=b"")
    assert result.exit_code == 2 and "cannot be combined" in result.stderr


def test_stdin_goes_through_the_same_file_type_dispatch_as_paths():
    import json

    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": ["import torch\n", 'x = torch.zeros(2, device="cuda")\n']}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    raw = (json.dumps(notebook, indent=1) + "\n").encode()
    ported = invoke(["rewrite", "-", "--stdin-filename", "train.ipynb"], raw)
    assert ported.exit_code == 0, ported.stderr
    assert '\\"hpu\\"' in ported.stdout_bytes.decode()  # still a notebook: JSON-escaped source
    json.loads(ported.stdout_bytes)
    requirements = invoke(["check", "-", "--stdin-filename", "requirements.txt"], b"flash-attn==2.5.0\n")
    assert "requirements.txt:1:" in requirements.stdout
