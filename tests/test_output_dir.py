"""`rewrite --output-dir DIR`: the ported tree is written apart; the sources stay."""

import os
import stat

import pytest
from click.testing import CliRunner

from hpu_port.cli import main

CUDA = 'import torch\nx = torch.zeros(2, device="cuda")\n'
CLEAN = "import torch\nx = torch.zeros(2)\n"
BROKEN = "x = torch.cuda.current_device(\n"


def invoke(*args):
    return CliRunner().invoke(main, ["rewrite", "--no-cache", *map(str, args)], catch_exceptions=False)


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def make_project(tmp_path):
    src = tmp_path / "work" / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "train.py").write_text(CUDA)
    (src / "pkg" / "clean.py").write_text(CLEAN)
    (src / "run.py").write_text(CUDA)
    (src / "run.py").chmod(0o755)
    (src / "notes.md").write_text("cuda\n")
    return tmp_path / "work"


def test_every_examined_file_is_written_under_its_relative_path(tmp_path, monkeypatch):
    work = make_project(tmp_path)
    monkeypatch.chdir(work)
    before = tree(work)
    result = invoke("--output-dir", tmp_path / "ported", "src")
    assert result.exit_code == 0, result.output
    assert tree(work) == before  # the source tree is untouched
    out = tmp_path / "ported"
    assert sorted(tree(out)) == ["src/pkg/clean.py", "src/pkg/train.py", "src/run.py"]  # examined files only
    assert 'device="hpu"' in (out / "src" / "pkg" / "train.py").read_text()
    assert (out / "src" / "pkg" / "clean.py").read_text() == CLEAN  # unchanged, still written
    assert stat.S_IMODE(os.stat(out / "src" / "run.py").st_mode) == 0o755
    assert not list(out.rglob("*.hpu-port"))  # no temporary file left behind
    # A second run into the same directory gives the same tree.
    again = invoke("--output-dir", tmp_path / "ported", "src")
    assert again.exit_code == 0 and tree(out)["src/pkg/train.py"] == (out / "src" / "pkg" / "train.py").read_bytes()


def test_a_file_that_fails_is_copied_as_it_is_and_named(tmp_path, monkeypatch):
    work = make_project(tmp_path)
    (work / "src" / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(work)
    result = invoke("--output-dir", tmp_path / "ported", "src")
    assert result.exit_code == 2
    assert "src/broken.py: error:" in result.stderr
    assert (tmp_path / "ported" / "src" / "broken.py").read_text() == BROKEN
    assert 'device="hpu"' in (tmp_path / "ported" / "src" / "run.py").read_text()


def test_output_dir_must_lie_outside_what_is_ported(tmp_path, monkeypatch):
    work = make_project(tmp_path)
    monkeypatch.chdir(work)
    inside = invoke("--output-dir", "src/ported", "src")
    assert inside.exit_code == 2 and "lies inside src, a path being ported" in inside.stderr
    assert invoke("--output-dir", tmp_path / "o", "--dry-run", "src").exit_code == 2
    assert not (work / "src" / "ported").exists()


def test_files_outside_the_working_directory_are_errors(tmp_path, monkeypatch):
    work = make_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.py").write_text(CUDA)
    monkeypatch.chdir(work)
    result = invoke("--output-dir", tmp_path / "ported", "src", elsewhere / "x.py")
    assert result.exit_code == 2
    assert "lies outside the working directory; not written to the output directory" in result.stderr
    assert (elsewhere / "x.py").read_text() == CUDA


def test_what_is_left_is_reported_in_the_written_file_at_its_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\ny = torch.cuda.get_device_capability()\n")
    result = invoke("--output-dir", "ported", "train.py")
    written = (tmp_path / "ported" / "train.py").read_text().splitlines()
    [line] = [line for line in result.output.splitlines() if "HPU130" in line]
    path, number = line.split(":")[:2]
    assert path == os.path.join("ported", "train.py")
    assert "get_device_capability" in written[int(number) - 1]


CUDA_CALL = "import torch\nx = torch.zeros(2).cuda()\n"


@pytest.mark.parametrize(
    "output_dir, paths, problem",
    [
        (".", ["train.py"], "holds train.py"),  # the file's own folder: it would be written over
        (".", ["."], "is ."),
        ("pkg", ["pkg"], "is pkg"),
        ("pkg/out", ["pkg"], "lies inside pkg"),
        (".", ["pkg"], "holds pkg"),
        ("alias", ["pkg"], "is pkg"),  # a link to the source folder is that folder
    ],
)
def test_output_dir_may_not_be_hold_or_lie_inside_a_source(tmp_path, monkeypatch, output_dir, paths, problem):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(CUDA_CALL)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(CUDA_CALL)
    os.symlink("pkg", tmp_path / "alias")
    result = invoke("--output-dir", output_dir, *paths)
    assert result.exit_code == 2
    assert f"{problem}, a path being ported" in result.stderr
    assert (tmp_path / "train.py").read_text() == CUDA_CALL
    assert (tmp_path / "pkg" / "model.py").read_text() == CUDA_CALL


def test_a_link_at_a_destination_is_never_written_through(tmp_path, monkeypatch):
    """A link placed in the output tree (where a file or a folder will go)
    would send the write to its target: it is named and left alone."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text(CUDA_CALL)
    (tmp_path / "src" / "pkg" / "model.py").write_text(CUDA_CALL)
    (tmp_path / "src" / "other.py").write_text(CUDA_CALL)
    victim, victims = tmp_path / "victim.py", tmp_path / "victims"
    victim.write_text("precious\n")
    victims.mkdir()
    out = tmp_path / "out" / "src"
    out.mkdir(parents=True)
    os.symlink(victim, out / "train.py")
    os.symlink(victims, out / "pkg")
    result = invoke("--output-dir", "out", "src")
    assert result.exit_code == 2
    assert f"src/train.py: error: {os.path.join('out', 'src', 'train.py')} is a symbolic link; not written" in result.stderr
    assert f"src/pkg/model.py: error: {os.path.join('out', 'src', 'pkg')} is a symbolic link; not written" in result.stderr
    assert victim.read_text() == "precious\n" and list(victims.iterdir()) == []
    assert (out / "train.py").is_symlink() and (out / "pkg").is_symlink()
    assert ".to(\"hpu\")" in (out / "other.py").read_text()  # the rest of the tree is written
