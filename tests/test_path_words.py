"""Which names of a file's path say that its code is another device's.

The package folders come from the project facts the runner finds (the
per-file core reads no disk): here, the folders given as ``packages``.
"""

from hpu_port.filetypes import path_words


def test_the_files_directory_and_the_words_of_its_name(tmp_path):
    path = tmp_path / "quantizers" / "bitsandbytes" / "bnb_quantizer.py"
    assert {"bitsandbytes", "bnb", "quantizer", "bnb_quantizer"} <= path_words(str(path), frozenset())


def test_package_directories_above_count_with_their_words(tmp_path):
    package = tmp_path / "resharding" / "nvshmem_copy_service" / "core"
    packages = frozenset(str(d) for d in (package, package.parent, package.parent.parent))
    words = path_words(str(package / "kernel_launcher.py"), packages)
    assert {"core", "nvshmem_copy_service", "nvshmem", "resharding"} <= words


def test_directories_above_the_package_are_the_users(tmp_path):
    # A user's checkout under a directory named like a device is still theirs.
    project = tmp_path / "npu" / "project" / "models"
    packages = frozenset({str(project)})
    assert "npu" not in path_words(str(project / "net.py"), packages)
    assert "npu" not in path_words(str(tmp_path / "npu" / "project" / "train.py"), packages)


def test_the_runner_finds_the_packages(tmp_path):
    from hpu_port.runner import run
    from tests.conftest import make_ruleset

    package = tmp_path / "resharding" / "nvshmem_copy_service" / "core"
    package.mkdir(parents=True)
    for directory in (package, package.parent, package.parent.parent):
        (directory / "__init__.py").write_text("")
    (package / "kernel_launcher.py").write_text("import torch\n\ndef go():\n    torch.cuda.synchronize()\n")
    summary = run([str(tmp_path)], make_ruleset(), apply=False)
    (launcher,) = [r for r in summary.results if r.path.endswith("kernel_launcher.py")]
    assert any(f.code == "HPU615" and "nvshmem" in f.message for f in launcher.findings), launcher.findings


def test_two_words_in_a_row_of_the_name_count_as_one(tmp_path):
    words = path_words(str(tmp_path / "llama2_flash_attn_monkey_patch.py"), frozenset())
    assert {"flash_attn", "attn_monkey", "flash", "attn"} <= words


def test_the_words_of_the_files_own_folder_count(tmp_path):
    assert {"ascend_npu", "ascend", "npu"} <= path_words(str(tmp_path / "recipes" / "ascend_npu" / "train.py"), frozenset())


def test_a_generic_folder_speaks_for_the_folder_above(tmp_path):
    # `runtime/triton_trtllm/scripts/export.py`: TensorRT-LLM's scripts.
    words = path_words(str(tmp_path / "runtime" / "triton_trtllm" / "scripts" / "export.py"), frozenset())
    assert {"scripts", "triton_trtllm", "trtllm"} <= words
    assert "runtime" not in words
    assert "runtime" not in path_words(str(tmp_path / "runtime" / "models" / "net.py"), frozenset())
