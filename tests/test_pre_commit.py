"""The repository's pre-commit hooks, run by the real pre-commit in a temporary git repository.

pre-commit installs a hook's environment once per repository and revision
(`try-repo` does it on every call): the tests run the hooks of one snapshot
of this repository (a commit of its own, the working tree included) from a
configuration, as a project using them would, so that it is installed once.
"""

import json
import os
import re
import shutil
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


@pytest.fixture(scope="module")
def hooks(tmp_path_factory, env):
    """A pre-commit configuration using the hooks of this repository as it is now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, env=env, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    copy = tmp_path_factory.mktemp("hooks-repository")
    for name in filter(None, listed):
        if (REPO / name).is_file():  # a file deleted in the working tree is not copied
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "snapshot"]):
        subprocess.run(["git", *command], cwd=copy, env=env, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=copy, env=env, capture_output=True, text=True, check=True)
    config = tmp_path_factory.mktemp("hooks-config") / ".pre-commit-config.yaml"
    config.write_text(
        f"repos:\n- repo: {copy.as_posix()}\n  rev: {commit.stdout.strip()}\n"
        "  hooks:\n  - id: hpu-port\n  - id: hpu-port-check\n"
    )
    return config


@pytest.fixture
def project(tmp_path, env):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / "train.py").write_text(CUDA)
    (tmp_path / "clean.py").write_text(CLEAN)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True, env=env)
    return tmp_path


def run_hook(project, env, hooks, hook, *files):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--config", str(hooks), hook, "--files", *files],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
@pytest.mark.network
def test_rewrite_hook_ports_the_file_and_then_passes(project, env, hooks):
    first = run_hook(project, env, hooks, "hpu-port", "train.py", "clean.py")
    assert first.returncode == 1, first.stdout + first.stderr  # pre-commit: files were modified
    assert 'device="hpu"' in (project / "train.py").read_text()
    assert (project / "clean.py").read_text() == CLEAN
    second = run_hook(project, env, hooks, "hpu-port", "train.py", "clean.py")
    assert second.returncode == 0, second.stdout + second.stderr


@pytest.mark.slow
@pytest.mark.network
def test_check_hook_writes_nothing_and_fails_on_findings(project, env, hooks):
    failing = run_hook(project, env, hooks, "hpu-port-check", "train.py")
    assert failing.returncode == 1
    assert "HPU110" in failing.stdout
    assert (project / "train.py").read_text() == CUDA
    passing = run_hook(project, env, hooks, "hpu-port-check", "clean.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr


@pytest.mark.slow
@pytest.mark.network
def test_config_excludes_apply_to_files_pre_commit_passes(project, env, hooks):
    (project / "pyproject.toml").write_text('[tool.hpu-port]\nexclude = ["train.py"]\n')
    result = run_hook(project, env, hooks, "hpu-port-check", "train.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "train.py").read_text() == CUDA


@pytest.mark.slow
@pytest.mark.network
def test_no_files_is_a_no_op(project, env, hooks):
    (project / "notes.md").write_text("cuda\n")
    result = run_hook(project, env, hooks, "hpu-port-check", "notes.md")
    assert result.returncode == 0, result.stdout + result.stderr


NOTEBOOK = json.dumps({
    "cells": [{"cell_type": "code", "execution_count": None, "id": "a1", "metadata": {}, "outputs": [],
               "source": ["import torch\n", 'x = torch.zeros(2, device="cuda")\n']}],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}, indent=1) + "\n"


def guide_snippet() -> str:
    """The pre-commit configuration in docs/guide.md, exactly as written there."""
    guide = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", guide, re.S)
    [snippet] = [block for block in blocks if "repos:" in block]
    return snippet


def test_the_guide_snippet_works_as_written(tmp_path, env):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / ".pre-commit-config.yaml").write_text(guide_snippet())
    (tmp_path / "train.py").write_text(CUDA)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "explore.ipynb").write_text(NOTEBOOK)
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "notes.md").write_text("cuda\n")
    (tmp_path / "launch.sh").write_text("#!/bin/sh\npython train.py --device cuda\n")
    (tmp_path / "config.yaml").write_text("lr: 0.1\n")
    files = ["train.py", "clean.py", "explore.ipynb", "requirements.txt", "notes.md", "launch.sh", "config.yaml"]
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True, env=env)
    # `language: system`: hpu-port as installed where the commit is made.
    path_env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")}

    def run():
        return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--files", *files], cwd=tmp_path,
                              env=path_env, capture_output=True, text=True, timeout=600)

    first = run()
    assert first.returncode == 1, first.stdout + first.stderr  # files were modified
    assert 'device="hpu"' in (tmp_path / "train.py").read_text()
    assert 'device=\\"hpu\\"' in (tmp_path / "explore.ipynb").read_text()  # notebooks are passed
    assert (tmp_path / "clean.py").read_text() == CLEAN and (tmp_path / "notes.md").read_text() == "cuda\n"
    second = run()
    assert second.returncode == 0, second.stdout + second.stderr


def _hooks():
    import yaml

    return yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


def test_hooks_take_every_file_type_hpu_port_ports():
    import yaml

    guide_hook = yaml.safe_load(guide_snippet())["repos"][0]["hooks"][0]
    hooks = _hooks() + [guide_hook]
    patterns = {hook["files"] for hook in hooks}
    assert len(patterns) == 1 and all(hook["require_serial"] is True for hook in hooks)
    assert all(hook.get("types") == ["text"] and "types_or" not in hook for hook in hooks)  # no narrower type
    pattern = re.compile(patterns.pop())
    taken = ["train.py", "stubs/a.pyi", "nb/explore.ipynb", "requirements.txt", "requirements-dev.txt",
             "sub/pyproject.toml", "setup.cfg", "run.sh", "run.bash", "job.sbatch", "ci.yaml", "conf/ds.yml",
             "ds_config.json", "Dockerfile", "docker/Dockerfile.gpu", "CMakeLists.txt", "cmake/cuda.cmake",
             "kernels/add.cu", "kernels/add.cuh", "run.slurm", "Containerfile", "requirements.in"]
    left = ["README.md", "notes.txt", "data.csv", "pyproject.toml.bak", "image.png", "mysetup.cfgx"]
    assert [name for name in taken if not pattern.search(name)] == []
    assert [name for name in left if pattern.search(name)] == []
