"""The repository's pre-commit hooks, run by the real pre-commit in a temporary git repository."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

CUDA = 'import torch\nx = torch.zeros(2, device="cuda")\n'
CLEAN = "import torch\nx = torch.zeros(2)\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    return {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "NO_COLOR": "1",
    }


@pytest.fixture
def project(tmp_path, env):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / "train.py").write_text(CUDA)
    (tmp_path / "clean.py").write_text(CLEAN)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True, env=env)
    return tmp_path


def try_repo(project, env, hook, *files):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook, "--files", *files],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_rewrite_hook_ports_the_file_and_then_passes(project, env):
    first = try_repo(project, env, "hpu-port", "train.py", "clean.py")
    assert first.returncode == 1, first.stdout + first.stderr  # pre-commit: files were modified
    assert 'device="hpu"' in (project / "train.py").read_text()
    assert (project / "clean.py").read_text() == CLEAN
    second = try_repo(project, env, "hpu-port", "train.py", "clean.py")
    assert second.returncode == 0, second.stdout + second.stderr


def test_check_hook_writes_nothing_and_fails_on_findings(project, env):
    failing = try_repo(project, env, "hpu-port-check", "train.py")
    assert failing.returncode == 1
    assert "HPU110" in failing.stdout
    assert (project / "train.py").read_text() == CUDA
    passing = try_repo(project, env, "hpu-port-check", "clean.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_config_excludes_apply_to_files_pre_commit_passes(project, env):
    (project / "pyproject.toml").write_text('[tool.hpu-port]\nexclude = ["train.py"]\n')
    result = try_repo(project, env, "hpu-port-check", "train.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "train.py").read_text() == CUDA


def test_no_files_is_a_no_op(project, env):
    (project / "notes.md").write_text("cuda\n")
    result = try_repo(project, env, "hpu-port-check", "notes.md")
    assert result.returncode == 0, result.stdout + result.stderr
