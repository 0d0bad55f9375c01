"""Config keys the code reads at a backend, device or dtype position are touchpoints in every config."""

from click.testing import CliRunner

from hpu_port.cli import main
from hpu_port.device.config_reads import config_reads

TRAIN = b'''import torch
import torch.distributed as dist

cfg = load_config()
dist.init_process_group(backend=cfg.comm.kind, init_method="env://")
device = torch.device(args.run_on)
model = model.to(self.device)
amp = getattr(torch, cfg.get("amp_precision"))
model = AutoModel.from_pretrained(path, torch_dtype=model_args.load_dtype)
x = torch.zeros(3, device=opts["place"])
y = torch.ones(3, dtype=torch.float16)
'''


def test_the_keys_read_at_each_position_are_found():
    assert config_reads([TRAIN]) == (
        ("amp_precision", "dtype"), ("kind", "backend"), ("load_dtype", "dtype"), ("place", "device"), ("run_on", "device"),
    )
    assert config_reads([b"x = 1\n", b"model.to(device)\n"]) == ()


def test_a_config_value_the_code_reads_as_a_backend_device_or_dtype_is_rewritten(tmp_path):
    (tmp_path / "train.py").write_bytes(TRAIN)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "run.yaml").write_text("comm:\n  kind: nccl\nrun_on: cuda  # where\namp_precision: float16\nname: cuda\n")
    (tmp_path / "configs" / "job.toml").write_text('[data]\nplace = "cuda"\nload_dtype = "float16"\n')
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", "--fp16-to-bf16", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "configs" / "run.yaml").read_text() == (
        "comm:\n  kind: hccl\nrun_on: hpu  # where\namp_precision: bfloat16\nname: cuda\n"
    )
    assert (tmp_path / "configs" / "job.toml").read_text() == '[data]\nplace = "hpu"\nload_dtype = "bfloat16"\n'


def test_without_code_reading_them_such_keys_are_left_alone(tmp_path):
    (tmp_path / "run.yaml").write_text("comm_kind: nccl\nrun_on: cuda\n")
    result = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert "HPU8" not in result.output


def test_a_flag_is_renamed_only_where_the_projects_script_takes_the_new_one(tmp_path):
    from hpu_port.device.cli_flags import cli_flags

    parser = b'import argparse\np = argparse.ArgumentParser()\np.add_argument("--fp16", "--half", action="store_true")\n'
    assert cli_flags([parser]) == {"--fp16", "--half"}
    (tmp_path / "train.py").write_bytes(parser)
    launch = "deepspeed train.py --deepspeed ds.json --output_dir out --fp16\n"
    (tmp_path / "run.sh").write_text(launch)
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", "--fp16-to-bf16", str(tmp_path)], catch_exceptions=False)
    assert "--fp16" in (tmp_path / "run.sh").read_text()  # train.py has no --bf16: the launch would stop
    assert "HPU807" in result.output
    assert "use --bf16 once the script has one (its parser defines --fp16 and no --bf16)" in result.output
    (tmp_path / "train.py").write_bytes(parser + b'p.add_argument("--bf16", action="store_true")\n')
    CliRunner().invoke(main, ["rewrite", "--no-cache", "--fp16-to-bf16", str(tmp_path)], catch_exceptions=False)
    assert "--bf16" in (tmp_path / "run.sh").read_text()


def test_a_launch_passes_the_new_default_of_a_project_option_the_port_changes(tmp_path):
    from hpu_port.device.cli_flags import flag_defaults

    parser = (
        "import argparse\nimport torch.distributed as dist\np = argparse.ArgumentParser()\n"
        "p.add_argument('--dp-backend', type=str, default='nccl', metavar='S')\n"
        "p.add_argument('--name', default='run')\nargs = p.parse_args()\n"
        "if args.dp_backend == 'nccl':\n    dist.init_process_group(backend=args.dp_backend)\n"
    )
    assert flag_defaults([parser.encode()]) == (("--dp-backend", "nccl"), ("--name", "run"))
    (tmp_path / "train.py").write_text(parser)
    launch = 'ARGS="--name a \\\n--dp-backend nccl"\npython train.py $(echo ${ARGS})\n'
    (tmp_path / "run.sh").write_text(launch)
    CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert "if args.dp_backend == 'hccl':" in (tmp_path / "train.py").read_text()
    assert (tmp_path / "run.sh").read_text() == launch.replace("nccl", "hccl")  # the launch takes the ported branch


def test_a_launch_keeps_the_value_of_a_project_option_that_is_no_device_or_backend(tmp_path):
    # `--kernel-impl` picks an implementation: the Python keeps "cuda", so must the launch.
    (tmp_path / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--kernel-impl', default='cuda', choices=['cuda', 'triton', 'torch'])\nargs = p.parse_args()\n"
    )
    launch = "python train.py --kernel-impl cuda\n"
    (tmp_path / "run.sh").write_text(launch)
    CliRunner().invoke(main, ["rewrite", "--no-cache", str(tmp_path)], catch_exceptions=False)
    assert (tmp_path / "run.sh").read_text() == launch
