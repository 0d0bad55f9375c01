"""Files that are not Python: detection, span-keeping edits, errors, suppressions, discovery."""

import json
from pathlib import Path

from hpu_port.engine import port_bytes
from hpu_port.files import discover
from hpu_port.filetypes import detect
from hpu_port.formats import parse
from hpu_port.model import Options
from hpu_port.rules import load_rules
from hpu_port.settings import RuleSet

RULES = load_rules()


def ruleset(**options):
    return RuleSet([r for r in RULES if r.code.startswith("HPU8")], Options(**options))


def test_detection_by_name_suffix_and_first_line():
    assert detect("configs/trainer/gpu.yaml") == "yaml"
    assert detect("docker/Dockerfile.gaudi") == "dockerfile"
    assert detect("requirements-dev.txt") == "requirements"
    assert detect("CMakeLists.txt") == "cmake"
    assert detect("csrc/kernel.cuh") == "cuda"
    assert detect("train", b"#!/usr/bin/env bash\necho hi\n") == "shell"
    assert detect("job", b"#SBATCH --nodes=1\nsrun x\n") == "shell"
    assert detect("tool", b"#!/usr/bin/python3\n") == "python"
    assert detect("notes.txt") is None


def test_yaml_edit_keeps_every_other_byte_and_crlf():
    source = b"\xef\xbb\xbftrainer:\r\n  accelerator: 'gpu'   # keep me\r\n  devices: 2\r\n"
    result = port_bytes("trainer.yaml", source, ruleset(), True)
    assert result.new_source == source.replace(b"'gpu'", b"'hpu'")
    again = port_bytes("trainer.yaml", result.new_source, ruleset(), True)
    assert again.new_source is None


def test_bad_yaml_is_one_line_naming_the_place():
    result = port_bytes("c.yaml", b"accelerator: gpu\n  bad: [\n", ruleset(), True)
    assert result.error.startswith("cannot parse as YAML: line ")
    assert result.new_source is None


def test_deepspeed_section_next_to_bf16_is_reported_not_duplicated():
    source = b'{"train_batch_size": 8, "fp16": {"enabled": true}, "bf16": {"enabled": false}}\n'
    result = port_bytes("ds.json", source, ruleset(fp16_to_bf16=True), True)
    assert [f.code for f in result.findings] == ["HPU830"]
    assert result.new_source is None


def test_deepspeed_output_is_valid_json_with_the_last_members_dropped():
    source = b'{\n  "train_batch_size": 8,\n  "fp16": {\n    "enabled": true,\n    "loss_scale_window": 1000,\n    "min_loss_scale": 1\n  }\n}\n'
    result = port_bytes("ds.json", source, ruleset(fp16_to_bf16=True), True)
    assert json.loads(result.new_source) == {"train_batch_size": 8, "bf16": {"enabled": True}}
    assert result.new_source == b'{\n  "train_batch_size": 8,\n  "bf16": {\n    "enabled": true\n  }\n}\n'
    # `"auto"` follows the Hugging Face trainer's own fp16 flag: that flag is what changes.
    left_to_the_trainer = source.replace(b"true", b'"auto"')
    assert port_bytes("ds.json", left_to_the_trainer, ruleset(fp16_to_bf16=True), True).findings == []


def test_json_parser_rejects_what_json_with_comments_rejects():
    # A trailing comma or a comment is JSON with comments (tsconfig.json, devcontainer.json): read.
    assert [e.raw for e in parse("json", '{"a": 1, // one\n}').entries() if e.kind == "scalar"] == [1]
    for bad in ('{"a" 1}', "[1, 2", '{"a": tru}', "{} x", '{"a": 1,,}', "[,]", '{"a": 1 /* open}'):
        try:
            parse("json", bad)
        except Exception as exc:
            assert type(exc).__name__ == "FormatError"
        else:
            raise AssertionError(bad)


def test_shell_suppression_comment_and_unparseable_script():
    source = b"export CUDA_VISIBLE_DEVICES=0  # hpu-port: ignore[HPU801]\nnvidia-smi\n"
    result = port_bytes("run.sh", source, ruleset(), True)
    assert [f.code for f in result.findings] == ["HPU805"]
    broken = port_bytes("run.sh", b"if then fi ((\nnvidia-smi\n", ruleset(), True)
    assert broken.error.startswith("cannot parse as a shell script")


def test_a_script_whose_last_line_continues_into_the_end_is_read_as_the_shell_reads_it():
    # `bash -n` accepts it: the continuation ends the command.
    for ending in (b" \\\n", b" \\", b" \\\n\n"):
        source = b"export CUDA_VISIBLE_DEVICES=0\ntorchrun --nproc_per_node 8 train.py \\\n    --lr 1e-4" + ending
        result = port_bytes("run.sh", source, ruleset(), True)
        assert result.error is None, ending
        assert [f.code for f in result.findings] == ["HPU801", "HPU816", "HPU815"]


def test_a_heredoc_without_a_command_is_a_block_comment():
    # `<<com ... com` as a block comment (`bash -n` accepts it), then a launch
    # line continued to the end of the file: both at once.
    source = (b"#!/bin/bash\n<<com\nExample script. Notes:\n- run it on 8 GPUs (nvidia-smi)\ncom\n\n"
              b"export CUDA_VISIBLE_DEVICES=0\ntorchrun --nproc_per_node 8 train.py \\\n    --lr 1e-4 \\")
    result = port_bytes("run.sh", source, ruleset(), True)
    assert result.error is None
    assert [f.code for f in result.findings] == ["HPU801", "HPU816", "HPU815"]
    assert result.new_source is None or result.new_source.startswith(source[:70])


def test_a_comment_in_backquotes_among_continued_lines_is_read_as_bash_reads_it():
    # `` `# section` \`` labels a group of options; bash runs an empty command there.
    source = (b"torchrun --nproc_per_node 2 train.py \\\n    --lr 1e-4 \\\n    \\\n"
              b"    `# LoRA settings` \\\n    --use_peft True\necho \"done!\"\n")
    result = port_bytes("run.sh", source, ruleset(), True)
    assert result.error is None
    assert "HPU816" in [f.code for f in result.findings]
    assert result.new_source.startswith(b"PT_HPU_LAZY_MODE=1 " + source[:40])


def test_heredoc_bodies_are_data_not_commands():
    source = b"cat > cfg.txt <<EOF\nnvidia-smi\nCUDA_VISIBLE_DEVICES=1\nEOF\n"
    assert port_bytes("run.sh", source, ruleset(), True).findings == []


def test_build_script_is_reported_never_rewritten():
    source = b'import torch\nfrom setuptools import setup\nif torch.cuda.is_available():\n    pass\nsetup(name="x")\n'
    full = RuleSet([r for r in RULES if r.default], Options())
    assert port_bytes("setup.py", source, full, True).new_source is None
    assert port_bytes("train.py", source, full, True).new_source is not None


def test_discovery_walks_every_type_and_counts_the_rest(tmp_path):
    for name in ("a.py", "run.sh", "c.yaml", "ds.json", "Dockerfile", "k.cu", "README.md", "logo.png"):
        (tmp_path / name).write_text("x\n")
    found = discover([str(tmp_path)])
    assert sorted(s.file_type for s in found) == ["cuda", "dockerfile", "json", "python", "shell", "yaml"]
    assert found.passed_over == {".md": 1, ".png": 1}


def test_build_output_is_skipped_but_a_package_named_dist_is_walked(tmp_path):
    for name in ("dist/pkg-1.0/train.py", "build/lib/pkg/train.py", "pkg/dist/__init__.py", "pkg/dist/utils.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    found = [Path(s.path).relative_to(tmp_path).as_posix() for s in discover([str(tmp_path)])]
    assert found == ["pkg/dist/__init__.py", "pkg/dist/utils.py"]


def test_a_requirement_installed_from_git_is_named_by_its_egg_or_repository():
    source = b"git+https://github.com/Dao-AILab/causal-conv1d@v1.4.0\ngit+https://github.com/state-spaces/mamba.git#egg=mamba-ssm\ngit+https://github.com/me/tools.git\n"
    result = port_bytes("requirements.txt", source, ruleset(), True)
    assert [(f.code, f.line) for f in result.findings] == [("HPU850", 1), ("HPU850", 2)]


def test_a_deepspeed_section_switched_off_in_yaml_is_left_alone():
    source = b"train_batch_size: 8\nfp16:\n  enabled: false\n  loss_scale: 0\n"
    assert port_bytes("ds_config.yaml", source, ruleset(fp16_to_bf16=True), True).findings == []


def test_a_script_the_parser_gives_up_on_whole_is_reported_where_the_problem_starts():
    # An unclosed `${` makes the whole file one error node: bash itself fails at
    # the end of the file; the line to look at is where the expansion opens.
    source = b"#!/bin/bash\n#SBATCH --nodes=1\nexport A=1\n\npython ${ROOT/run.py \\\n  --device cuda\n"
    result = port_bytes("train.slurm", source, ruleset(), True)
    assert result.error is not None and "line 5" in result.error and result.new_source is None


def test_a_suppression_inside_a_block_covers_its_own_statement_only():
    source = b'if [ -n "$HOME" ]; then\n  nvidia-smi # hpu-port: ignore[HPU805]\n  N=$(nvidia-smi -L | wc -l)\nfi\n'
    result = port_bytes("run.sh", source, ruleset(), True)
    assert [(f.code, f.line) for f in result.findings if f.code == "HPU805"] == [("HPU805", 3)]
