"""Files that launch or provision training outside Python: Makefiles, Apptainer
definitions, environment files, container specs (compose, Kubernetes, CI, devcontainers)."""

import pytest

from hpu_port.engine import port_bytes
from hpu_port.filetypes import detect
from hpu_port.model import Options
from hpu_port.rules import load_rules
from hpu_port.settings import RuleSet

RULES = RuleSet([r for r in load_rules() if r.code.startswith("HPU8")], Options())


def port(path: str, text: str):
    result = port_bytes(path, text.encode(), RULES, True)
    assert result.error is None, result.error
    codes = sorted({(f.code, f.line) for f in result.findings})
    return (result.new_source.decode() if result.new_source is not None else text), codes


@pytest.mark.parametrize("path, head, kind", [
    ("Makefile", None, "makefile"), ("docker/build.mk", None, "makefile"), (".env", None, "dotenv"),
    (".deepspeed_env", None, "dotenv"),
    ("deploy/.env.example", None, "dotenv"), (".envrc", None, "shell"), ("train.def", b"Bootstrap: docker\nFrom: ubuntu\n", "apptainer"),
    ("grammar.def", b"DEFINITION MODULE x;\n", None),
    ("configs/ds_configs/stage3_no_offloading.conf", b'{\n  "bf16": {"enabled": "auto"},\n', "json"),
    ("nginx.conf", b"server {\n", None),
])
def test_detection(path, head, kind):
    assert detect(path, head) == kind


def test_makefile_recipes_are_shell_and_its_assignments_set_variables():
    text = "export CUDA_VISIBLE_DEVICES = 0,1\n\ntrain:  # the default\n\t@nvidia-smi\n\t-torchrun --nproc_per_node 8 \\\n\t  train.py --device cuda\n"
    output, codes = port("Makefile", text)
    # make drops the `-` (ignore errors) before running the line: the variable leads the shell's command.
    assert output == text.replace("@nvidia-smi", "@hl-smi").replace("--device cuda", "--device hpu").replace(
        "-torchrun", "-PT_HPU_LAZY_MODE=1 torchrun")
    assert [code for code, _ in codes] == ["HPU801", "HPU805", "HPU815", "HPU816", "HPU817"]


def test_apptainer_sections_are_shell_and_its_base_image_is_read():
    text = "Bootstrap: docker\nFrom: nvcr.io/nvidia/pytorch:24.01-py3\n\n%files\n  nvidia-smi.txt /opt\n%post\n    nvidia-smi\n%environment\n    export NCCL_DEBUG=INFO\n"
    output, codes = port("train.def", text)
    assert output == text.replace("    nvidia-smi\n", "    hl-smi\n")
    assert codes == [("HPU802", 9), ("HPU805", 7), ("HPU840", 2)]


def test_kubernetes_containers_commands_env_lists_and_gpu_resources():
    text = (
        "spec:\n  containers:\n  - name: train\n    command: [\"torchrun\", \"--nproc_per_node\", \"8\"]\n"
        "    args: [\"train.py\", \"--dist-backend\", \"nccl\"]\n"
        "    env:\n    - name: NCCL_DEBUG\n      value: INFO\n"
        "    resources:\n      limits:\n        nvidia.com/gpu: 8\n"
    )
    output, codes = port("k8s/job.yaml", text)
    assert output == text.replace('"nccl"', '"hccl"').replace("nvidia.com/gpu", "habana.ai/gaudi")
    assert [code for code, _ in codes] == ["HPU802", "HPU815", "HPU817", "HPU834"]


def test_a_shell_in_a_container_command_is_read_as_a_script():
    text = "spec:\n  containers:\n  - name: t\n    command: [\"/bin/bash\", \"-c\", \"nvidia-smi && python t.py --device cuda\"]\n"
    output, _ = port("k8s/pod.yaml", text)
    assert output == text.replace("nvidia-smi &&", "hl-smi &&").replace("--device cuda", "--device hpu")


def test_compose_commands_ci_container_options_and_devcontainer_run_args():
    compose = "services:\n  train:\n    command: python train.py --device cuda\n"
    assert port("docker-compose.yml", compose)[0] == compose.replace("cuda", "hpu")
    workflow = "jobs:\n  test:\n    runs-on: ubuntu-latest\n    container:\n      image: ubuntu:22.04\n      options: --gpus all\n"
    assert port(".github/workflows/ci.yml", workflow)[1] == [("HPU810", 6)]
    devcontainer = '{\n  "image": "nvcr.io/nvidia/pytorch:24.01-py3",\n  "runArgs": ["--gpus", "all"]\n}\n'
    assert port(".devcontainer/devcontainer.json", devcontainer)[1] == [("HPU810", 3), ("HPU840", 2)]


def test_a_dockerfile_base_image_given_as_a_build_argument_is_read():
    text = "ARG BASE_IMAGE=nvcr.io/nvidia/pytorch:24.01-py3\nFROM ${BASE_IMAGE}\n"
    assert port("Dockerfile", text)[1] == [("HPU840", 1)]


def test_scripts_that_start_or_fetch_containers_name_their_images():
    text = (
        "MODEL=nvidia/Llama-3.1-Nemotron-70B\n"
        "docker run --rm -v $PWD:/ws -it nvcr.io/nvidia/pytorch:24.01-py3 python train.py\n"
        "docker build --build-arg BASE_IMAGE=nvidia/cuda:12.1.0-devel-ubuntu22.04 -t x .\n"
        "srun --container-image=nvcr.io/nvidia/pytorch:24.01-py3 python t.py\n"
        "apptainer pull docker://nvcr.io/nvidia/pytorch:24.01-py3\n"
    )
    assert [line for code, line in port("run.sh", text)[1] if code == "HPU840"] == [2, 3, 4, 5]


def test_a_script_handed_to_a_reusable_workflow_is_read_as_shell():
    text = "jobs:\n  gpu-tests:\n    uses: ./.github/workflows/_run.yml\n    with:\n      runner: ubuntu-latest\n      script: |\n        nvidia-smi\n        python -m pytest tests\n"
    assert port(".github/workflows/ci.yml", text)[1] == [("HPU805", 7)]


def test_a_launch_handed_to_a_job_submitter_gets_no_variable_it_would_not_pass_on():
    text = "python mason.py --cluster x -- accelerate launch train.py\nsrun -N 2 torchrun train.py\n"
    output, codes = port("scripts/submit.sh", text)
    assert output == text.replace("srun -N 2", "PT_HPU_LAZY_MODE=1 srun -N 2")
    assert [line for code, line in codes if code == "HPU816"] == [2]


def test_a_ci_job_on_a_runner_another_job_starts_is_kept():
    text = "jobs:\n  gpu:\n    runs-on: ${{ needs.start-runner.outputs.label }}\n    steps:\n      - run: nvidia-smi\n"
    output, codes = port(".github/workflows/main.yml", text)
    assert output == text and [code for code, _ in codes] == ["HPU805"]


def test_what_a_ci_job_installs_for_itself_is_not_the_gaudi_machines_environment():
    ci = "jobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pip install torch==2.5.1 pytest\n"
    script = "pip install torch==2.5.1 pytest\n"
    rules = RuleSet([r for r in load_rules() if r.code == "HPU713"], Options())
    assert port_bytes(".github/workflows/tests.yml", ci.encode(), rules, True).findings == []
    assert [f.code for f in port_bytes("scripts/setup.sh", script.encode(), rules, True).findings] == ["HPU713"]


def test_the_documents_of_a_multi_document_yaml_file_are_apart():
    text = (
        "spec:\n  containers:\n  - name: a\n    command: [\"python\", \"prep.py\"]\n    env:\n    - name: CUDA_VISIBLE_DEVICES\n      value: \"$(IDS)\"\n"
        "---\n"
        "spec:\n  containers:\n  - name: b\n    command: [\"torchrun\", \"train.py\", \"--device\", \"cuda\"]\n    env:\n    - name: FOO\n      value: \"0\"\n"
    )
    output, codes = port("k8s/jobs.yaml", text)
    assert output == text.replace('"cuda"', '"hpu"')  # the first document's variable is not renamed by the second's value
    assert ("HPU817", 12) in codes and ("HPU801", 6) in codes


def test_container_args_written_above_their_command_are_left_to_a_person():
    text = "spec:\n  containers:\n  - name: t\n    args: [\"--device\", \"cuda\"]\n    command: [\"python\", \"train.py\"]\n"
    assert port("k8s/pod.yaml", text)[0] == text


def test_a_makefile_variable_that_a_recipe_reads_is_kept_and_crlf_lines_are_read():
    reads = "export CUDA_VISIBLE_DEVICES = 0,1\ntrain:\n\tpython train.py --gpus $(CUDA_VISIBLE_DEVICES)\n"
    rules = RuleSet([r for r in load_rules() if r.code.startswith("HPU8")], Options(unsafe_fixes=True))
    assert port_bytes("Makefile", reads.encode(), rules, True).new_source is None  # renamed, the recipe would read nothing
    crlf = "train:\r\n\ttorchrun train.py \\\r\n\t  --device cuda\r\n"
    output, codes = port("Makefile", crlf)
    assert output == crlf.replace("--device cuda", "--device hpu").replace("\ttorchrun", "\tPT_HPU_LAZY_MODE=1 torchrun")



def test_an_environment_file_is_read_as_dotenv_reads_it():
    text = "# GPUs\nPASSWORD=abc(def)\nexport CUDA_VISIBLE_DEVICES=0,1  # two\nNCCL_DEBUG='INFO'\n"
    output, codes = port(".env", text)
    assert codes == [("HPU801", 3), ("HPU802", 4)]
    suppressed = port(".env", "CUDA_VISIBLE_DEVICES=0  # hpu-port: ignore\n")
    assert suppressed[1] == []
    # What DeepSpeed's launcher exports on every node.
    assert port(".deepspeed_env", "NCCL_IB_DISABLE=1\nPYTHONPATH=/src\n")[1] == [("HPU802", 1)]


def test_an_mpi_launch_is_told_how_to_pass_the_variable_and_not_rewritten():
    text = "mpirun -np 8 --bind-to core python train.py\n"
    rules = RuleSet([r for r in load_rules() if r.code == "HPU816"], Options())
    result = port_bytes("run_mpi.sh", text.encode(), rules, True)
    assert result.new_source is None
    assert [f.message.endswith("`-x PT_HPU_LAZY_MODE=1`)") for f in result.findings] == [True]


def test_a_command_line_kept_in_a_string_and_evaluated_is_ported():
    text = (
        'CMD="torchrun --nproc_per_node 8 train.py --device cuda"\neval $CMD\n'
        'LAUNCH="deepspeed train.py"\neval "${LAUNCH} --deepspeed ds.json"\n'
        'bash -c "python train.py --device cuda"\n'
    )
    output, _ = port("run.sh", text)
    assert output == (
        'CMD="PT_HPU_LAZY_MODE=1 torchrun --nproc_per_node 8 train.py --device hpu"\neval $CMD\n'
        'LAUNCH="PT_HPU_LAZY_MODE=1 deepspeed train.py"\neval "${LAUNCH} --deepspeed ds.json"\n'
        'bash -c "python train.py --device hpu"\n'
    )


def test_an_evaluated_launch_that_is_echoed_first_and_starts_with_variables_of_the_environment_is_read():
    # SwissArmyTransformer's and Megatron's scripts: the line is shown, then run.
    text = (
        'OPTIONS_NCCL="NCCL_DEBUG=info NCCL_IB_DISABLE=0"\n'
        'gpt_options=" --mode finetune --distributed-backend nccl --seed 2023"\n'
        'run_cmd="${OPTIONS_NCCL} deepspeed --master_port 16666 finetune.py ${gpt_options}"\n'
        'echo ${run_cmd}\n'
        'eval ${run_cmd}\n'
    )
    output, codes = port("finetune.sh", text)
    assert output == text.replace('run_cmd="${OPTIONS_NCCL}', 'run_cmd="PT_HPU_LAZY_MODE=1 ${OPTIONS_NCCL}').replace("backend nccl", "backend hccl")
    assert sorted(code for code, _ in codes) == ["HPU816", "HPU817"]


def test_a_string_that_is_not_evaluated_or_not_plain_stays_as_it_is():
    text = (
        'MSG="torchrun is used below"\necho $MSG\n'  # printed, never run
        'CMD="torchrun train.py --name \\"a b\\""\neval $CMD\n'  # quotes inside: not read
        'RUN="torchrun train.py"\n$RUN\n'  # run by word splitting: a prefix would become the program
    )
    output, codes = port("run.sh", text)
    assert output == text and codes == []


def test_a_device_flag_read_through_a_variable_is_changed_where_the_variable_is_set():
    script = 'DEVICE=cuda\nBACKEND="${BACKEND:-nccl}"\npython train.py --device $DEVICE --dist-backend=${BACKEND} --eval-device ${EVAL:-cuda}\n'
    output, codes = port("run.sh", script)
    assert output == script.replace("=cuda", "=hpu").replace(":-nccl", ":-hccl")
    assert codes == [("HPU817", 3)]
    make = "DEVICE ?= cuda\ntrain:\n\tpython train.py --device $(DEVICE)\n"
    assert port("Makefile", make)[0] == make.replace("?= cuda", "?= hpu")


@pytest.mark.parametrize("script", [
    # Read elsewhere too: the other read would change with it.
    'DEVICE=cuda\necho "on $DEVICE"\npython train.py --device $DEVICE\n',
    'DEVICE=cuda\npython train.py --device $DEVICE\npython probe.py --gpu-name $DEVICE\n',
])
def test_a_variable_read_elsewhere_too_is_reported_not_changed(script):
    output, codes = port("run.sh", script)
    assert output == script and ("HPU817", 3 if "probe" not in script else 2) in codes


@pytest.mark.parametrize("script", [
    "DEVICE=cuda\nDEVICE=cpu\npython train.py --device $DEVICE\n",  # set twice: which one reaches the flag is not known here
    "python train.py --device $DEVICE\n",  # set elsewhere
    "DEVICE=cpu\npython train.py --device $DEVICE\n",
    "DEVICE=${OTHER:-cuda}\npython train.py --device $DEVICE\n",  # another variable's default
])
def test_a_variable_whose_value_is_not_known_to_be_cuda_is_left_alone(script):
    assert port("run.sh", script) == (script, [])


def test_cluster_job_specs_run_their_scripts_and_launch_training_there():
    sky = "resources:\n  accelerators: A100:8\nsetup: |\n  pip install -r requirements.txt\nrun: |\n  torchrun --nproc_per_node 8 train.py --device cuda\n"
    output, codes = port("sky.yaml", sky)
    assert output == sky.replace("  torchrun", "  PT_HPU_LAZY_MODE=1 torchrun").replace("cuda", "hpu")
    assert {"HPU816", "HPU817"} <= {code for code, _ in codes}
    mcli = "name: sd2\nimage: mosaicml/pytorch:latest\ncompute:\n  gpus: 8\ncommand: |\n  composer run.py --config-path /mnt/config\n"
    assert port("run.yaml", mcli)[0] == mcli.replace("  composer", "  PT_HPU_LAZY_MODE=1 composer")


def test_a_ci_step_or_a_plain_run_key_is_no_training_launch():
    ci = "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: torchrun --nproc_per_node 2 tests/dist.py\n"
    assert "HPU816" not in [code for code, _ in port(".github/workflows/ci.yml", ci)[1]]
    # `image:` and `command:` alone (no job-spec key beside them) are not an mcli run.
    other = "image: ubuntu\ncommand: torchrun train.py\n"
    assert port("other.yaml", other) == (other, [])
    php = "composer install\n"
    assert port("setup.sh", php) == (php, [])


def test_json_with_comments_and_trailing_commas_is_read_as_its_tools_read_it():
    devcontainer = (
        '// the training container\n{\n  "image": "nvcr.io/nvidia/pytorch:24.01-py3", /* NGC */\n'
        '  "runArgs": ["--gpus", "all",],\n  "containerEnv": {"NCCL_DEBUG": "INFO",},\n}\n'
    )
    output, codes = port(".devcontainer/devcontainer.json", devcontainer)
    assert output == devcontainer and {"HPU810", "HPU840"} <= {code for code, _ in codes}
    tsconfig = '{\n  "compilerOptions": {\n    "strict": true,\n  },\n}\n'
    assert port("web/tsconfig.json", tsconfig) == (tsconfig, [])


@pytest.mark.parametrize("text, line", [('{\n  "a": 1\n  "b": 2\n}\n', 3), ('{"a": /* open\n1}\n', 1)])
def test_json_that_is_not_even_json_with_comments_is_one_error(text, line):
    result = port_bytes("config.json", text.encode(), RULES, True)
    assert result.error is not None and f"line {line}" in result.error and result.new_source is None


def test_base_images_a_ci_matrix_hands_to_a_build_are_images():
    workflow = (
        "jobs:\n  build:\n    strategy:\n      matrix:\n        include:\n"
        "          - base_image: mosaicml/pytorch:2.4.0_cu124-python3.11-ubuntu20.04\n"
        "        base-image: [nvidia/cuda:12.1.0-devel-ubuntu22.04, ubuntu:22.04]\n"
    )
    codes = port(".github/workflows/docker.yaml", workflow)[1]
    assert [code for code, _ in codes] == ["HPU840", "HPU840"]


def test_a_launcher_kept_in_a_variable_and_run_by_a_job_steps_shell_gets_the_variable():
    script = (
        'export LAUNCHER="torchrun \\\n    --nproc_per_node 8 \\\n    --nnodes $COUNT_NODE \\\n    "\n'
        'srun $SRUN_ARGS -u bash -c "$LAUNCHER --node_rank $SLURM_PROCID train.py"\n'
    )
    assert port("launch.slurm", script)[0] == script.replace('="torchrun', '="PT_HPU_LAZY_MODE=1 torchrun')
    # Also run by word splitting, where a prefix would be taken for the program: left alone.
    split_too = script + "$LAUNCHER train.py\n"
    assert port("launch.slurm", split_too)[0] == split_too


def test_a_command_line_kept_in_a_string_and_run_by_word_splitting_is_read_for_its_flags():
    script = 'SBATCH_CMD="sbatch \\\n    --nodes=${NUM_NODES} \\\n    --gres=gpu:${GPUS} \\\n    eval.slurm"\nID_JOB=$($SBATCH_CMD)\n'
    output, codes = port("submit.sh", script)
    assert output == script and ("HPU809", 3) in codes


def test_configs_a_script_writes_with_a_here_document_are_read_as_configs():
    script = (
        'cat << EOT > $DEEPSPEED_CONFIG_FILE\n{\n  "fp16": {"enabled": true},\n'
        '  "zero_optimization": {"stage": 3},\n  "train_micro_batch_size_per_gpu": $MBS\n}\nEOT\n'
        'cat > accelerate.yaml <<"EOF"\ndistributed_type: FSDP\nmixed_precision: fp16\nEOF\n'
    )
    rules = RuleSet([r for r in load_rules() if r.code.startswith("HPU8")], Options(fp16_to_bf16=True))
    result = port_bytes("train.slurm", script.encode(), rules, True)
    assert {(f.code, f.line) for f in result.findings} >= {("HPU830", 3), ("HPU833", 4), ("HPU849", 9), ("HPU822", 10)}
    assert result.new_source.decode() == script.replace('"fp16": {', '"bf16": {').replace("precision: fp16", "precision: bf16")


@pytest.mark.parametrize("script", [
    # The script chooses whether fp16 is on, where it sets the variable: left to it.
    'cat << EOT > ds.json\n{\n  "fp16": {"enabled": $ENABLE_FP16}\n}\nEOT\n',
    # Written to a file of no config type, or not written to a file at all.
    'cat << EOT > notes.txt\nmixed_precision: fp16\nEOT\n',
    'python - << EOT\n{"fp16": {"enabled": true}}\nEOT\n',
])
def test_a_here_document_is_edited_only_where_it_is_a_config_and_its_text_is_literal(script):
    rules = RuleSet([r for r in load_rules() if r.code.startswith("HPU8")], Options(fp16_to_bf16=True))
    assert port_bytes("run.sh", script.encode(), rules, True).new_source is None


MEGATRON_JOB = '''GPT_ARGS=" \\
    --num-layers 24 \\
    --distributed-backend nccl \\
    "
export LAUNCHER="python -u -m torch.distributed.launch \\
    --nproc_per_node $GPUS_PER_NODE \\
    "
export CMD=" \\
    `pwd`/pretrain_gpt.py \\
    $GPT_ARGS \\
    --device cuda \\
    "
echo $CMD
srun --jobid $SLURM_JOBID bash -c '$LAUNCHER --node_rank $SLURM_PROCID $CMD' 2>&1 | tee log.txt
'''


def test_a_megatron_style_job_reads_its_launcher_and_argument_strings_through_the_inner_shell():
    output, codes = port("train.slurm", MEGATRON_JOB)
    assert output == (
        MEGATRON_JOB.replace('LAUNCHER="python', 'LAUNCHER="PT_HPU_LAZY_MODE=1 python')
        .replace("backend nccl", "backend hccl").replace("--device cuda", "--device hpu")
    )
    # Not exported, the launcher does not reach the single-quoted inner shell: left alone.
    private = MEGATRON_JOB.replace("export LAUNCHER", "LAUNCHER")
    assert 'LAUNCHER="python' in port("train.slurm", private)[0]


def test_a_here_document_member_that_holds_an_expansion_is_removed_whole():
    script = 'cat > ds.json <<EOF\n{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true, "loss_scale": $LOSS_SCALE}\n}\nEOF\n'
    rules = RuleSet([r for r in load_rules() if r.code.startswith("HPU8")], Options(fp16_to_bf16=True))
    new = port_bytes("run.sh", script.encode(), rules, True).new_source.decode()
    assert '"bf16": {"enabled": true}' in new and "LOSS_SCALE" not in new
    tee = "tee accelerate.yaml <<EOF\nmixed_precision: fp16\nEOF\n"
    assert port_bytes("run.sh", tee.encode(), rules, True).new_source.decode() == tee.replace("fp16", "bf16")


@pytest.mark.parametrize("script", [
    # Set for one command only: the later launch reads an unset variable.
    "DEVICE=cuda python prepare.py\npython train.py --device $DEVICE\n",
    # A single-quoted inner shell sees only exported variables.
    "ARGS=\"--device cuda\"\nbash -c 'python train.py $ARGS'\n",
    # Written with an escape: its text is not its value.
    "python train.py --device cu\\da --dist-backend=nc\\cl\n",
])
def test_values_the_launch_does_not_see_as_written_are_not_edited(script):
    assert port("run.sh", script)[0] == script


def test_a_double_quoted_inner_shell_splits_the_arguments_it_expands():
    script = 'ARGS="--device cuda"\nbash -c "python train.py $ARGS"\n'
    assert port("run.sh", script)[0] == script.replace("cuda", "hpu")


def test_the_schedulers_options_end_where_the_program_it_runs_begins():
    codes = port("job.sh", "srun -p a100 -u python train.py -C configs/a100.yaml --partition t4\n")[1]
    assert [code for code in codes if code[0] == "HPU809"] == [("HPU809", 1)]
    message = next(f.message for f in port_bytes("job.sh", b"srun -p a100 -u python train.py -C configs/a100.yaml --partition t4\n", RULES, True).findings if f.code == "HPU809")
    assert message.startswith("-p a100")


def test_json_with_comments_that_is_broken_is_reported_where_it_breaks():
    text = '// dev container\n{\n  "name": "x",\n  "a": 1\n  "b": 2\n}\n'
    result = port_bytes("devcontainer.json", text.encode(), RULES, True)
    assert result.error is not None and "line 5" in result.error


def test_a_venv_made_by_a_python_read_from_a_variable_hides_gaudi_pytorch_too():
    script = '"${python_cmd}" -m venv "${venv_dir}"\n"$PYTHON" -m venv --system-site-packages env\n"${cmd}" -m venv x\n'
    _, codes = port("webui.sh", script)
    assert [found for found in codes if found[0] == "HPU856"] == [("HPU856", 1)]
    # A CI job's environment is the hosted runner's.
    ci = "jobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python -m venv .venv\n"
    _, codes = port(".github/workflows/lint.yml", ci)
    assert not [found for found in codes if found[0] == "HPU856"]
