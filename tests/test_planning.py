"""Root causes as a person plans them: one item for a module's choice of device."""

import textwrap

from hpu_port.engine import port_source
from hpu_port.planning import file_items, in_tests, kept_whole, make_plan, tree_of_tests, work_packages
from hpu_port.results import Finding
from tests.conftest import make_ruleset


def test_a_module_that_serves_several_devices_makes_its_choice_of_device_once():
    """Its shared code's held fixes (kept reason `shared-code`) are one item,
    however many lines would change; its other findings keep their own."""
    source = textwrap.dedent('''
        import torch

        device = "mps" if torch.backends.mps.is_available() else "cpu"
        n = torch.cuda.device_count()
        x = torch.zeros(2, device="cuda")
        torch.cuda.synchronize()
        y = torch.zeros(2, dtype=torch.float64)
    ''').lstrip()
    result = port_source("tests/test_model.py", source.encode(), make_ruleset(), False)
    shared = [f for f in result.findings if f.kept == "shared-code"]
    assert len({f.line for f in shared}) == 3
    items = file_items(result.path, result.findings)
    holding = [item for item in items if any(f.kept == "shared-code" for f in item.findings)]
    assert len(holding) == 1 and {f.line for f in holding[0].findings} == {4, 5, 6}
    assert any(item.line == 7 for item in items)  # float64: an item of its own


def _result(path, source):
    return port_source(path, textwrap.dedent(source).lstrip().encode(), make_ruleset(), False)


SHARED_TEST = '''
    import torch

    device = "mps" if torch.backends.mps.is_available() else "cpu"
    n = torch.cuda.device_count()
'''


def test_the_tests_that_share_code_among_devices_are_one_item_for_their_tree():
    results = [_result(path, SHARED_TEST) for path in ("tests/a_test.py", "tests/unit/test_b.py", "train.py")]
    plan = make_plan(results)
    shared = [item for item in plan.items if item.lead.kept == "shared-code"]
    assert sorted(item.path for item in shared) == ["tests/a_test.py", "train.py"]
    assert tree_of_tests("tests/unit/test_b.py") == "tests" and tree_of_tests("pkg/test_x.py") == "pkg"


def test_a_rule_counted_per_repository_is_one_item_in_the_whole_tree():
    fsdp = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\nmodel = FSDP(model)\n"
    results = [_result(path, fsdp) for path in ("a.py", "b/c.py")]
    items = [item for item in make_plan(results).items if "HPU206" in item.codes]
    assert len(items) == 1 and items[0].lead.item_scope == "per-repository"


def test_the_float16_values_tests_pass_join_the_test_tree_item():
    dtype_test = '''
        import torch

        device = "mps" if torch.backends.mps.is_available() else "cpu"
        n = torch.cuda.device_count()

        def test_half():
            assert run(dtype=torch.float16) == run(dtype=torch.float16)
    '''
    results = [_result("tests/test_a.py", dtype_test)]
    held = {f.kept for r in results for f in r.findings if f.kept}
    assert held == {"shared-code", "dtype-role"}
    manual = [item for item in make_plan(results).items if item.needs_person and item.severity == "blocker"]
    assert len(manual) == 1


def test_everything_a_person_does_in_a_test_tree_is_one_item():
    kernel_test = '''
        import torch
        import triton


        @triton.jit
        def add_kernel(x):
            pass


        def test_add():
            x = torch.ones(2, device="cuda")
            add_kernel[(1,)](x)
    '''
    results = [_result("tests/test_kernel.py", kernel_test), _result("tests/test_a.py", SHARED_TEST)]
    assert any(f.kept == "nvidia-only" for f in results[0].findings)
    manual = [item for item in make_plan(results).items if item.needs_person and item.severity == "blocker"]
    assert [item.path for item in manual] == ["tests/test_a.py"]
    elsewhere = make_plan([_result("kernels/add.py", kernel_test), *results]).items
    assert len([item for item in elsewhere if item.needs_person and item.severity == "blocker"]) == 2


def test_a_module_kept_whole_for_nvidia_is_one_item():
    module = '''
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kernel(x):
            tl.store(x, 1)

        def launch(x):
            torch.cuda.synchronize()
            return torch.empty(4, device="cuda", dtype=torch.float16)

        def other(x):
            return x.to("cuda")
    '''
    result = _result("kernels/ops.py", module)
    assert kept_whole(result)
    manual = [item for item in make_plan([result]).items if item.needs_person and item.severity == "blocker"]
    assert len(manual) == 1 and len(manual[0].findings) >= 4
    assert not kept_whole(_result("train.py", SHARED_TEST))


def test_fixes_held_for_the_same_nvidia_only_code_are_one_item():
    held = [
        Finding("HPU110", '"cuda" names a CUDA device', line, 4, line, 10, kept="nvidia-only",
                kept_evidence="torch.library.custom_op")
        for line in (10, 40, 90)
    ]
    other = Finding("HPU110", '"cuda" names a CUDA device', 120, 4, 120, 10, kept="nvidia-only",
                    kept_evidence="apex.amp")
    assert [len(item.findings) for item in file_items("ops.py", [*held, other])] == [3, 1]


def test_a_work_package_counts_every_file_its_folded_items_are_in():
    fsdp = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\nmodel = FSDP(model)\n"
    results = [_result(path, fsdp) for path in ("a.py", "b/c.py", "d.py")]
    package = [p for p in work_packages(make_plan(results)) if p.code == "HPU206"]
    assert [(p.items, p.files) for p in package] == [(1, 3)]


def test_a_folder_above_the_tree_named_test_makes_no_file_a_test():
    assert in_tests("tests/unit/a.py") and in_tests("pkg/test_a.py") and in_tests("conftest.py")
    assert not in_tests("train.py") and not in_tests("pkg/testing_utils.py")
