"""`rewrite` writes only regular files inside the paths it is given, keeps
what the file was (owner, mode, extended attributes, its hard links), and one
bad path never stops the run: it gets one line, the others are ported, exit 2.

The machine running the tests is often root, who may write anything: cases
about permissions test the mode bits (which decide for root too), or the
user's own permission with os functions replaced, or skip."""

import errno
import os
import socket
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

import hpu_port.engine as engine
import hpu_port.runner as runner_module
from hpu_port.cli import main
from hpu_port.options import REPORT_FORMATS

CUDA = "import torch\nx = torch.zeros(2).cuda()\n"
PORTED_MARK = '.to("hpu")'
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
BAD_NAME = os.fsdecode(b"caf\xe9.py")  # Latin-1, not UTF-8
BAD_NAME_SHOWN = "caf\\xe9.py"


def invoke(*args):
    return CliRunner().invoke(main, [*map(str, args)], catch_exceptions=False)


def rewrite(*args):
    return invoke("rewrite", "--no-cache", *args)


def run_cli(*args, cwd=None):
    """The command in a process of its own, with a time limit: a FIFO opened by
    mistake would otherwise block the test run for ever."""
    return subprocess.run(
        [sys.executable, "-m", "hpu_port", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd,
        errors="backslashreplace",
    )


def ported(path) -> bool:
    return PORTED_MARK in open(path, encoding="utf-8").read()


def error_lines(output: str) -> list:
    return [line for line in output.splitlines() if ": error: " in line]


@pytest.fixture
def project(tmp_path):
    """A repository (`repo/`) with one file to port, and a folder beside it
    that no run is given (`outside/`)."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / "good.py").write_text(CUDA)
    (outside / "victim.py").write_text(CUDA)
    return repo, outside


# -- symbolic links ----------------------------------------------------------


def test_a_link_named_on_the_command_line_is_not_followed_out_of_the_repository(project):
    repo, outside = project
    os.symlink(outside / "victim.py", repo / "link.py")
    result = rewrite(repo / "link.py", repo / "good.py")
    assert result.exit_code == 2
    [line] = error_lines(result.stderr)
    assert line == f"{repo / 'link.py'}: error: is a symbolic link to {outside / 'victim.py'}; not followed (name the file itself to port it)"
    assert (outside / "victim.py").read_text() == CUDA
    assert (repo / "link.py").is_symlink()
    assert ported(repo / "good.py")
    # check says the same: what it reports is what rewrite would do.
    assert invoke("check", "--no-cache", repo / "link.py").exit_code == 2


def test_links_committed_and_passed_by_git_ls_files(project):
    repo, outside = project
    (repo / "real.py").write_text(CUDA)
    os.symlink(outside / "victim.py", repo / "out.py")
    os.symlink("real.py", repo / "alias.py")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], check=True)
    listed = subprocess.run([*git, "ls-files", "-z"], check=True, capture_output=True).stdout.decode().split("\0")
    result = rewrite(*[repo / name for name in listed if name])
    assert result.exit_code == 2
    [line] = error_lines(result.stderr)
    assert line.startswith(f"{repo / 'out.py'}: error: is a symbolic link")
    assert (outside / "victim.py").read_text() == CUDA
    # The link to a file of the repository adds nothing: the file is ported by its own name.
    assert ported(repo / "real.py") and (repo / "alias.py").is_symlink()


def test_a_file_turned_into_a_link_after_it_was_read_is_not_written_through(project, monkeypatch):
    repo, outside = project
    target = repo / "good.py"
    real = engine.port_source

    def port_then_swap(path, source, ruleset, apply=True, ahead=None):
        result = real(path, source, ruleset, apply, ahead)
        os.unlink(target)
        os.symlink(outside / "victim.py", target)
        return result

    monkeypatch.setattr(engine, "port_source", port_then_swap)
    result = rewrite(target)
    assert result.exit_code == 2
    assert f"{target}: error: is a symbolic link; not written" in result.stderr
    assert (outside / "victim.py").read_text() == CUDA


def test_a_folder_turned_into_a_link_after_it_was_read_is_not_written_through(project, monkeypatch):
    repo, outside = project
    (repo / "pkg").mkdir()
    (repo / "pkg" / "model.py").write_text(CUDA)
    real = engine.port_source

    def port_then_swap(path, source, ruleset, apply=True, ahead=None):
        result = real(path, source, ruleset, apply, ahead)
        if path.endswith("model.py"):
            os.rename(repo / "pkg", outside / "pkg")
            os.symlink(outside / "pkg", repo / "pkg")
        return result

    monkeypatch.setattr(engine, "port_source", port_then_swap)
    result = rewrite("--jobs", "1", repo)
    assert result.exit_code == 2
    assert f"{repo / 'pkg' / 'model.py'}: error: lies outside the paths given; not written" in result.stderr
    assert (outside / "pkg" / "model.py").read_text() == CUDA
    assert ported(repo / "good.py")


# -- what the file was is kept ---------------------------------------------


def test_a_read_only_file_is_named_and_left_alone(project):
    repo, _ = project
    locked = repo / "locked.py"
    locked.write_text(CUDA)
    locked.chmod(0o444)
    result = rewrite(repo)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{locked}: error: is read-only; not written"]
    assert locked.read_text() == CUDA and stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert ported(repo / "good.py")


def test_a_file_the_user_may_not_write_is_left_alone(project, monkeypatch):
    """Not root: the folder's permission would let a rename replace a file the
    user may not write; the user's own permission on the file decides."""
    repo, _ = project
    theirs = repo / "theirs.py"
    theirs.write_text(CUDA)
    real_access = os.access
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: path != "theirs.py" and real_access(path, mode, **kw))
    result = rewrite(repo)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{theirs}: error: is read-only; not written"]
    assert theirs.read_text() == CUDA and ported(repo / "good.py")


@pytest.mark.skipif(AS_ROOT, reason="root may write any file")
def test_a_file_of_another_mode_the_user_may_not_write_is_left_alone_for_real(project):
    repo, _ = project
    theirs = repo / "theirs.py"
    theirs.write_text(CUDA)
    theirs.chmod(0o044)  # others may read; its owner (we) may not write
    result = rewrite(repo)
    assert result.exit_code == 2 and f"{theirs}: error: is read-only; not written" in result.stderr
    assert theirs.read_text() == CUDA


@pytest.mark.skipif(not AS_ROOT, reason="only root may give a file to another user")
def test_owner_group_and_mode_are_kept_when_root_rewrites(project):
    repo, _ = project
    target = repo / "good.py"
    os.chown(target, 1234, 2345)
    target.chmod(0o2764)  # set-group-id: chown clears it, the copy of the mode restores it
    assert rewrite(target).exit_code == 0
    info = target.stat()
    assert ported(target)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (1234, 2345, 0o2764)


@pytest.mark.skipif(not AS_ROOT, reason="only root may give a file to another user")
def test_an_owner_that_cannot_be_kept_stops_that_write_only(project, monkeypatch):
    """Not root, a file of another user (in a group-writable tree) would become
    the user's own: it is named and left alone. The refusal a user gets is made here."""
    repo, _ = project
    target = repo / "good.py"
    os.chown(target, 1234, 2345)
    (repo / "other.py").write_text(CUDA)

    def fchown(fd, uid, gid):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", fchown)
    result = rewrite(target, repo / "other.py")
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{target}: error: its owner and group could not be kept; not written"]
    assert target.read_text() == CUDA and ported(repo / "other.py")
    assert not [p for p in repo.iterdir() if p.name.endswith(".hpu-port")]  # no temporary file left behind


def _xattrs_supported(path) -> bool:
    try:
        os.setxattr(path, "user.hpu_port_probe", b"1")
        os.removexattr(path, "user.hpu_port_probe")
    except (OSError, AttributeError):
        return False
    return True


def test_extended_attributes_are_kept(project):
    repo, _ = project
    target = repo / "good.py"
    if not _xattrs_supported(target):
        pytest.skip("no user extended attributes on this file system")
    os.setxattr(target, "user.origin", b"cuda tree")
    assert rewrite(target).exit_code == 0
    assert ported(target)
    assert os.getxattr(target, "user.origin") == b"cuda tree"


def test_a_file_with_hard_links_is_named_and_left_alone(project):
    """Renaming a new file over one name would leave the other names with the
    old text: the file is reported, and every name keeps the same file."""
    repo, outside = project
    twin = outside / "twin.py"
    os.link(repo / "good.py", twin)
    (repo / "other.py").write_text(CUDA)
    result = rewrite(repo)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{repo / 'good.py'}: error: has 2 hard links, and the others would keep the old text; not written"]
    assert os.path.samefile(repo / "good.py", twin) and twin.read_text() == CUDA
    assert ported(repo / "other.py")


# -- one bad path never stops the run ----------------------------------------


def _tree_with_a_bad_name(repo):
    with open(os.path.join(os.fsencode(repo), os.fsencode(BAD_NAME)), "w") as handle:
        handle.write(CUDA)
    bad_folder = os.path.join(os.fsencode(repo), b"d\xff")
    os.mkdir(bad_folder)
    with open(os.path.join(bad_folder, b"inner.py"), "w") as handle:
        handle.write(CUDA)


def test_names_that_are_not_utf8_are_named_escaped(project):
    repo, _ = project
    _tree_with_a_bad_name(repo)
    result = rewrite(repo)
    assert result.exit_code == 2
    assert sorted(error_lines(result.stderr)) == [
        f"{repo / BAD_NAME_SHOWN}: error: its name is not valid UTF-8; not read (rename it to port it)",
        f"{repo / 'd'}\\xff: error: its name is not valid UTF-8; not read (rename it to port it)",
    ]
    assert ported(repo / "good.py")
    assert open(os.path.join(os.fsencode(repo), os.fsencode(BAD_NAME))).read() == CUDA
    # Named on the command line, too.
    named = rewrite(os.path.join(str(repo), BAD_NAME))
    assert named.exit_code == 2 and f"{repo / BAD_NAME_SHOWN}: error: its name is not valid UTF-8" in named.stderr


@pytest.mark.parametrize("output_format", REPORT_FORMATS)
def test_every_report_format_prints_a_name_that_is_not_utf8(project, output_format):
    repo, _ = project
    _tree_with_a_bad_name(repo)
    result = invoke("check", "--no-cache", "--format", output_format, repo)
    assert result.exit_code == 2, result.output
    assert f"{repo / BAD_NAME_SHOWN}: error:" in result.stderr
    result.stdout.encode("utf-8")  # no lone surrogate reached the report


def test_a_folder_that_cannot_be_searched_is_named_once(project, monkeypatch):
    """Read permission without search permission: its names can be listed, but
    none of them looked up. Root is never refused, so the refusal is made here."""
    repo, _ = project
    locked = repo / "locked"
    (locked / "sub").mkdir(parents=True)
    (locked / "inside.py").write_text(CUDA)
    (locked / "build").mkdir()
    real_lstat = os.lstat

    def lstat(path, *args, **kwargs):
        if os.fspath(path).startswith(str(locked) + os.sep):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    result = rewrite(repo)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{locked}: error: cannot read directory: Permission denied"]
    assert ported(repo / "good.py")


@pytest.mark.skipif(AS_ROOT, reason="root may search any folder")
def test_a_folder_that_cannot_be_searched_is_named_once_for_real(project):
    repo, _ = project
    locked = repo / "locked"
    locked.mkdir()
    (locked / "inside.py").write_text(CUDA)
    locked.chmod(0o444)
    try:
        result = rewrite(repo)
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{locked}: error: cannot read directory: Permission denied"]
    assert ported(repo / "good.py")


def test_a_file_deleted_after_it_was_found_is_named(project, monkeypatch):
    repo, _ = project
    gone = repo / "gone.py"
    gone.write_text(CUDA)
    real = runner_module.discover

    def discover_then_delete(paths):
        found = real(paths)
        gone.unlink()
        return found

    monkeypatch.setattr(runner_module, "discover", discover_then_delete)
    result = rewrite(repo)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{gone}: error: cannot read: No such file or directory"]
    assert ported(repo / "good.py")


def test_a_file_deleted_before_it_is_written_is_named(project, monkeypatch):
    repo, _ = project
    (repo / "gone.py").write_text(CUDA)
    real = engine.port_source

    def port_then_delete(path, source, ruleset, apply=True, ahead=None):
        result = real(path, source, ruleset, apply, ahead)
        if path.endswith("gone.py"):
            os.unlink(path)
        return result

    monkeypatch.setattr(engine, "port_source", port_then_delete)
    result = rewrite("--jobs", "1", repo)
    assert result.exit_code == 2
    assert error_lines(result.stderr) == [f"{repo / 'gone.py'}: error: no longer exists; not written"]
    assert not (repo / "gone.py").exists() and ported(repo / "good.py")


def _socket_at(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


def test_fifos_and_sockets_are_named_and_never_opened(project):
    repo, _ = project
    os.mkfifo(repo / "pipe.py")
    os.mkfifo(repo / "runner")  # no suffix: only its first bytes could tell its type
    os.mkfifo(repo / "data.fifo")  # a name hpu-port does not read: passed over like any other
    server = _socket_at(repo / "ipc.sh")
    try:
        result = run_cli("rewrite", "--no-cache", repo)
    finally:
        server.close()
    assert result.returncode == 2, result.stderr
    assert sorted(error_lines(result.stderr)) == [
        f"{repo / 'ipc.sh'}: error: is a socket; not read",
        f"{repo / 'pipe.py'}: error: is a FIFO; not read",
        f"{repo / 'runner'}: error: is a FIFO; not read",
    ]
    assert ported(repo / "good.py")


def test_fifos_and_devices_named_on_the_command_line_are_never_opened(project):
    repo, _ = project
    os.mkfifo(repo / "pipe.py")
    result = run_cli("check", "--no-cache", repo / "pipe.py", os.devnull, repo / "good.py")
    assert result.returncode == 2
    assert sorted(error_lines(result.stderr)) == [
        f"{os.devnull}: error: is a device; not read",
        f"{repo / 'pipe.py'}: error: is a FIFO; not read",
    ]
    assert "good.py:2" in result.stdout
