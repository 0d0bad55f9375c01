"""`hpu-port init`: the execution mode is chosen for the tree before the first
rewrite, explained from what each mode does to it, and written into
[tool.hpu-port] without touching any other byte of pyproject.toml."""

import textwrap

import pytest
from click.testing import CliRunner

from hpu_port._compat import toml
from hpu_port.cli import main
from hpu_port.mode_choice import write_mode

TRAIN = textwrap.dedent("""
    import torch

    model = torch.nn.Linear(2, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""").lstrip()


def init(*args):
    return CliRunner().invoke(main, ["init", "--no-cache", *map(str, args)], catch_exceptions=False)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def test_it_explains_both_modes_and_writes_nothing_unasked(tree):
    result = init(tree)
    assert result.exit_code == 0
    assert "lazy (PT_HPU_LAZY_MODE=1)" in result.output and "eager (PT_HPU_LAZY_MODE=0)" in result.output
    assert "2 × HPU201" in result.output  # the two mark_step() a lazy port adds
    assert "Recommended: eager" in result.output and "Nothing written" in result.output
    assert not (tree / "pyproject.toml").exists()


def test_the_choice_is_written_and_read_back(tree):
    result = init(tree, "--mode", "lazy")
    assert result.exit_code == 0
    data = toml().loads((tree / "pyproject.toml").read_text())
    assert data["tool"]["hpu-port"]["mode"] == "lazy"
    again = init(tree, "--mode", "lazy")
    assert "already sets mode" in again.output


def test_a_gaudi_release_that_defaults_to_lazy_mode_is_recommended_lazy(tree):
    (tree / "Dockerfile").write_text("FROM vault.habana.ai/gaudi-docker/1.17.0/ubuntu22.04/habanalabs/pytorch-installer-2.3.1:latest\n")
    assert "Recommended: lazy, because the project targets Gaudi software 1.17" in init(tree).output


def test_torch_compile_makes_eager_the_advice(tree):
    (tree / "train.py").write_text(TRAIN.replace("model = torch", "model = torch.compile(torch") + "\n")
    (tree / "train.py").write_text(TRAIN + "model = torch.compile(model)\n")
    assert "which lazy mode does not support" in init(tree).output


def test_fsdp_makes_eager_the_advice(tree):
    (tree / "train.py").write_text(
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n" + TRAIN + "model = FSDP(model)\n"
    )
    assert "the project shards with FSDP" in init(tree).output


def test_fsdp_turned_on_by_a_launcher_config_makes_eager_the_advice(tree):
    # Even for a Gaudi release whose default is lazy mode: lazy mode has no FSDP.
    (tree / "Dockerfile").write_text("FROM vault.habana.ai/gaudi-docker/1.17.0/ubuntu22.04/habanalabs/pytorch-installer-2.3.1:latest\n")
    (tree / "fsdp.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 8\n")
    assert "the project shards with FSDP (1 place" in init(tree).output


def test_a_lazy_port_is_detected_and_switching_is_explained(tree):
    (tree / "train.py").write_text(TRAIN.replace("optimizer.step()", "optimizer.step()\n        htcore.mark_step()"))
    result = init(tree, "--mode", "eager")
    assert "Recommended: lazy, because the tree already holds a port made for lazy mode" in result.output
    assert "This tree holds a lazy-mode port" in result.output and "revert the port" in result.output
    assert toml().loads((tree / "pyproject.toml").read_text())["tool"]["hpu-port"]["mode"] == "eager"


@pytest.mark.parametrize("before, after", [
    (b'[project]\r\nname = "x"\r\n', b'[project]\r\nname = "x"\r\n\r\n[tool.hpu-port]\r\nmode = "eager"\r\n'),
    (b'[project]\nname = "x"', b'[project]\nname = "x"\n\n[tool.hpu-port]\nmode = "eager"\n'),
    (b'[tool.hpu-port]\nignore = ["HPU190"]  # noisy\n\n[tool.ruff]\n',
     b'[tool.hpu-port]\nmode = "eager"\nignore = ["HPU190"]  # noisy\n\n[tool.ruff]\n'),
    (b'[tool.hpu-port]\nmode = "lazy"  # first try\n', b'[tool.hpu-port]\nmode = "eager"  # first try\n'),
])
def test_writing_keeps_every_other_byte(tmp_path, before, after):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(before)
    write_mode(path, "eager")
    assert path.read_bytes() == after


def test_a_broken_pyproject_is_one_error_and_stays_as_it_was(tree):
    (tree / "pyproject.toml").write_bytes(b"[project\nname = 1\n")
    result = init(tree, "--mode", "eager")
    assert result.exit_code == 2
    assert (tree / "pyproject.toml").read_bytes() == b"[project\nname = 1\n"


def test_a_run_in_the_other_mode_than_the_trees_port_warns(tree):
    (tree / "train.py").write_text(TRAIN.replace("optimizer.step()", "optimizer.step()\n        htcore.mark_step()"))
    eager = CliRunner().invoke(main, ["check", "--no-cache", "--mode", "eager", str(tree)], catch_exceptions=False)
    assert "1 file (" in eager.stderr and "holds a port made for lazy mode" in eager.stderr
    lazy = CliRunner().invoke(main, ["check", "--no-cache", str(tree)], catch_exceptions=False)
    assert "a port made for" not in lazy.stderr


def test_the_choice_goes_to_the_configuration_that_rules_the_folder(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port]\nselect = ["HPU1"]\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text(TRAIN)
    result = init(tmp_path / "sub", "--mode", "eager")
    assert result.exit_code == 0 and not (tmp_path / "sub" / "pyproject.toml").exists()
    data = toml().loads((tmp_path / "pyproject.toml").read_text())["tool"]["hpu-port"]
    assert data == {"select": ["HPU1"], "mode": "eager"}


def test_check_points_to_init_until_a_mode_is_configured(tree):
    check = lambda: CliRunner().invoke(main, ["check", "--no-cache", str(tree)], catch_exceptions=False)
    from hpu_port.config import _hpu_port_table, _nearest_table, settings_for_directory

    assert "hpu-port init" in check().stderr
    init(tree, "--mode", "lazy")
    # A new process reads the new configuration; this one forgets what it read.
    settings_for_directory.cache_clear()
    _hpu_port_table.cache_clear()
    _nearest_table.cache_clear()
    assert "hpu-port init" not in check().stderr
