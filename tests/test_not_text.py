"""Files that are not text get one verdict whatever bytes they hold: an error
naming the problem (exit 2), whether or not they happen to contain text a
rule looks for, in every way a file reaches the engine."""

import pytest
from click.testing import CliRunner

from hpu_port.cli import main

TRIGGER = b'\ny = "cuda"\n'

# Bytes that are not Python text, and the start of the error they get.
NOT_TEXT = {
    "nul-byte": (b"x = 1\n\0\n", "not a text file: it holds NUL bytes"),
    "utf-16": ("x = 1\n".encode("utf-16"), "not a text file: it holds NUL bytes"),
    "every-byte": (bytes(range(256)), "not a text file: it holds NUL bytes"),
    "invalid-utf-8": (b"x = '\xff\xfe'\n", "cannot decode as utf-8: invalid start byte (byte 0xff, line 1)"),
    "truncated-utf-8": (b"# caf\xc3\n", "cannot decode as utf-8"),
    "latin-1-without-declaration": ("x = 'café'\n".encode("latin-1"), "cannot decode as utf-8"),
    "unknown-declared-encoding": (b"# -*- coding: klingon -*-\nx = 1\n", "cannot decode: unknown encoding: klingon"),
    "not-the-declared-encoding": (b"# coding: cp1252\nx = '\x81'\n", "cannot decode as cp1252: character maps to <undefined>"),
    "bom-contradicting-declaration": (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "cannot decode: encoding problem"),
}

# Text in encodings Python reads: no error, with or without a trigger.
TEXT = {
    "ascii": b"x = 1\n",
    "utf-8": "x = 'café ✓'\n".encode(),
    "utf-8-with-bom": b"\xef\xbb\xbf" + "x = 'café'\n".encode(),
    "latin-1-declared": b"# -*- coding: latin-1 -*-\n" + "x = 'café'\n".encode("latin-1"),
    "cp1252-declared-on-second-line": b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n" + "x = '€'\n".encode("cp1252"),
}


def invoke(*args, data=None):
    return CliRunner().invoke(main, list(args), input=data, catch_exceptions=False)


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("trigger", [b"", TRIGGER], ids=["plain", "with-trigger"])
@pytest.mark.parametrize("name", sorted(NOT_TEXT))
@pytest.mark.parametrize("command", ["check", "rewrite"])
def test_bytes_that_are_not_text_are_an_error_whatever_they_hold(tmp_path, command, name, trigger):
    data, problem = NOT_TEXT[name]
    path = tmp_path / "bad.py"
    path.write_bytes(data + trigger)
    for _ in range(2):  # the second run answers from the cache
        result = invoke(command, str(path))
        assert result.exit_code == 2
        assert result.stderr.splitlines()[0].startswith(f"{path}: error: {problem}")
    assert path.read_bytes() == data + trigger


@pytest.mark.parametrize("trigger", [b"", TRIGGER], ids=["plain", "with-trigger"])
@pytest.mark.parametrize("name", sorted(TEXT))
def test_text_in_a_declared_or_default_encoding_is_read(tmp_path, name, trigger):
    path = tmp_path / "good.py"
    path.write_bytes(TEXT[name] + trigger)
    result = invoke("check", str(path))
    assert result.exit_code == (1 if trigger else 0), result.stderr
    assert "error" not in result.stderr


@pytest.mark.parametrize("trigger", [b"", TRIGGER], ids=["plain", "with-trigger"])
def test_the_verdict_is_the_same_in_worker_processes(tmp_path, trigger):
    for number in range(40):  # enough source for the pool, which then also screens
        (tmp_path / f"pad{number}.py").write_bytes(b"x = 1  # padding\n" * 8000)
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = 1\n\0\n" + trigger)
    result = invoke("check", "--jobs", "2", "--no-cache", str(tmp_path))
    assert result.exit_code == 2
    assert f"{bad}: error: not a text file" in result.stderr


@pytest.mark.parametrize("trigger", [b"", b'\n"cuda"'], ids=["plain", "with-trigger"])
@pytest.mark.parametrize("name, data", [("nul", b'{"cells": []}\0'), ("invalid-utf-8", b'{"cells": ["\xff"]}')])
def test_a_notebook_that_is_not_text_is_an_error_whatever_it_holds(tmp_path, name, data, trigger):
    path = tmp_path / "bad.ipynb"
    path.write_bytes(data + trigger)
    result = invoke("check", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{path}: error: ")


@pytest.mark.parametrize("trigger", [b"", TRIGGER], ids=["plain", "with-trigger"])
def test_stdin_that_is_not_text_comes_back_unchanged_with_the_same_error(trigger):
    data = b"x = 1\n\0\n" + trigger
    result = invoke("rewrite", "-", "--stdin-filename", "bad.py", data=data)
    assert result.exit_code == 2
    assert result.stdout_bytes == data
    assert result.stderr.startswith("bad.py: error: not a text file")
