"""Bad input: one clear line naming the file, the other files still processed,
nothing written for the bad file, exit code 2."""

import os

import pytest
from click.testing import CliRunner

import hpu_port.engine as engine
import hpu_port.runner as runner_module
from hpu_port.cli import main

GOOD = 'import torch\nx = torch.zeros(2, device="cuda")\n'


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def rewrite(*paths, extra=()):
    return CliRunner().invoke(main, ["rewrite", *extra, *map(str, paths)], catch_exceptions=False)


BAD_FILES = {
    "python2.py": b'device = "cuda"\nprint "hello"\n',
    "bad_utf8.py": b'x = "cuda\xff\xfe"\n',
    "binary.py": bytes(range(256)) + b"cuda",
    "unknown_cookie.py": b'# -*- coding: klingon -*-\ndevice = "cuda"\n',
    "latin1_without_cookie.py": 'x = "cuda caf\xe9"\n'.encode("latin-1"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_named_and_left_alone(tree, name):
    bad = tree / name
    bad.write_bytes(BAD_FILES[name])
    result = rewrite(tree)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"{bad}: error: ")
    assert bad.read_bytes() == BAD_FILES[name]
    assert 'device="hpu"' in (tree / "good.py").read_text()


def test_empty_file_is_fine(tree):
    (tree / "empty.py").write_bytes(b"")
    result = rewrite(tree)
    assert result.exit_code == 0
    assert (tree / "empty.py").read_bytes() == b""


def test_very_large_file_is_refused_with_a_clear_line(tree):
    big = tree / "generated.py"
    big.write_text('device = "cuda"\n' * 500_000)  # about 5.5 MB
    result = rewrite(tree)
    assert result.exit_code == 2
    assert f"{big}: error: too large to port" in result.stderr
    assert 'device="hpu"' in (tree / "good.py").read_text()
    allowed = rewrite(big, extra=["--max-file-size", "0.001"])
    assert allowed.exit_code == 2


def test_deep_nesting(tree):
    deep = tree / "deep.py"
    deep.write_text("device = " + "(" * 200 + '"cuda"' + ")" * 200 + "\n")
    result = rewrite(tree)
    assert result.exit_code in (0, 2)
    if result.exit_code == 2:
        assert f"{deep}: error:" in result.stderr
    else:
        assert '"hpu"' in deep.read_text()


def test_missing_paths_broken_symlinks_and_loops(tree):
    os.symlink(tree / "nowhere.py", tree / "broken.py")
    os.symlink(tree / "loop_a.py", tree / "loop_b.py")
    os.symlink(tree / "loop_b.py", tree / "loop_a.py")
    result = rewrite(tree, tree / "missing.py")
    assert result.exit_code == 2
    for name in ("broken.py", "loop_a.py", "loop_b.py", "missing.py"):
        assert f"{tree / name}: error:" in result.stderr
    assert 'device="hpu"' in (tree / "good.py").read_text()


def test_paths_that_are_not_python(tree):
    notes = tree / "notes.txt"
    notes.write_text("uses cuda\n")
    script = tree / "train"
    script.write_text('#!/usr/bin/env python3\ndevice = "cuda"\n')
    result = rewrite(notes, script)
    assert result.exit_code == 2
    assert f"{notes}: error: not a file hpu-port reads" in result.stderr
    # It never imports torch and only names the device: no Gaudi import of its own.
    assert script.read_text() == '#!/usr/bin/env python3\ndevice = "hpu"\n'


def test_unreadable_file(tree, monkeypatch):
    secret = tree / "secret.py"
    secret.write_text(GOOD)
    real = runner_module.read_source

    def read(path):
        if path == str(secret):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(runner_module, "read_source", read)
    result = rewrite(tree)
    assert result.exit_code == 2
    assert f"{secret}: error: cannot read: Permission denied" in result.stderr
    assert secret.read_text() == GOOD


def test_output_that_does_not_parse_is_never_written(tree, monkeypatch):
    class Broken:
        bytes = b"x = (\n"

    monkeypatch.setattr(engine, "apply_plan", lambda module, plan: Broken())
    result = rewrite(tree)
    assert result.exit_code == 2
    [line] = [l for l in result.stderr.splitlines() if ": error: " in l]
    assert line.startswith(f"{tree / 'good.py'}: error: internal error: rules ")
    assert "HPU110" in line and "nothing was written" in line
    assert (tree / "good.py").read_text() == GOOD


def test_an_exception_in_one_file_does_not_stop_the_run(tree, monkeypatch):
    (tree / "other.py").write_text(GOOD)
    real = engine.port_module

    def explode(module, *args, **kwargs):
        if "boom" in module.code:
            raise ValueError("unexpected")
        return real(module, *args, **kwargs)

    monkeypatch.setattr(engine, "port_module", explode)
    (tree / "boom.py").write_text('boom = "cuda"\n')
    result = rewrite(tree)
    assert result.exit_code == 2
    assert f"{tree / 'boom.py'}: error: internal error: ValueError: unexpected" in result.stderr
    assert 'device="hpu"' in (tree / "other.py").read_text()


def test_file_changed_on_disk_is_not_overwritten(tree, monkeypatch):
    target = tree / "good.py"
    real = engine.port_source

    def port_then_edit(path, source, ruleset, apply=True, ahead=None):
        result = real(path, source, ruleset, apply, ahead)
        target.write_text("# edited meanwhile\n" + GOOD)
        return result

    monkeypatch.setattr(engine, "port_source", port_then_edit)
    result = rewrite(target)
    assert result.exit_code == 2
    assert "changed on disk" in result.stderr
    assert target.read_text() == "# edited meanwhile\n" + GOOD


def test_file_mode_is_kept(tree):
    target = tree / "good.py"
    os.chmod(target, 0o750)
    rewrite(target)
    assert os.stat(target).st_mode & 0o777 == 0o750
    assert not [p for p in tree.iterdir() if p.name.startswith(".good.py.")]  # no temporary file left


def test_unreadable_directory_is_named(tree, monkeypatch):
    import hpu_port.files as files

    locked = tree / "locked"
    locked.mkdir()
    (locked / "inside.py").write_text(GOOD)
    real_walk = os.walk

    def walk(top, onerror=None, **kwargs):
        for directory, dirnames, filenames in real_walk(top, onerror=onerror, **kwargs):
            if "locked" in dirnames:
                dirnames.remove("locked")
                onerror(PermissionError(13, "Permission denied", str(locked)))
            yield directory, dirnames, filenames

    monkeypatch.setattr(files.os, "walk", walk)
    result = rewrite(tree)
    assert result.exit_code == 2
    assert f"{locked}: error: cannot read directory: Permission denied" in result.stderr
    assert 'device="hpu"' in (tree / "good.py").read_text()
    assert (locked / "inside.py").read_text() == GOOD


def test_insertions_follow_the_files_indentation(tree):
    path = tree / "tabs.py"
    path.write_bytes(b"def train(optimizer):\r\n\tfor x in data:\r\n\t\tloss(x).backward()\r\n\t\toptimizer.step()\r\n")
    rewrite(path)
    assert path.read_bytes() == (
        b"import habana_frameworks.torch.core as htcore\r\n\r\n"
        b"def train(optimizer):\r\n\tfor x in data:\r\n\t\tloss(x).backward()\r\n\t\thtcore.mark_step()\r\n"
        b"\t\toptimizer.step()\r\n\t\thtcore.mark_step()\r\n"
    )
