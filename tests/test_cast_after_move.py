"""HPU114: a tensor made from NumPy moved before it is cast puts float64 on the device."""

import pytest

from tests.conftest import port


def reported(code):
    return [f.line for f in port(code, select=["HPU114"], apply=False).findings if f.code == "HPU114"]


@pytest.mark.parametrize(
    "line, found",
    [
        ("x = torch.from_numpy(a).to(device).float()", True),
        ("x = torch.from_numpy(a).cuda().half()", True),
        ("x = torch.as_tensor(a).to(device)[idx].long()", True),
        ("x = torch.tensor(a).to(device).contiguous().float()", True),
        ("x = torch.from_numpy(a).float().to(device)", False),  # cast first
        ("x = torch.from_numpy(a).to(device, dtype=torch.float32).float()", False),  # the move casts
        ("x = torch.from_numpy(a).to(torch.float32).to(device).float()", False),
        ("x = batch.to(device).float()", False),  # not made from an array here
        ("x = torch.from_numpy(a).to(device)", False),  # never cast: another rule's matter
    ],
)
def test_a_move_before_a_cast_of_an_array_tensor_is_reported(line, found):
    assert bool(reported(f"import torch\n{line}\n")) is found


def test_two_casts_of_one_chain_are_one_finding():
    assert reported("import torch\nx = torch.from_numpy(a).to(d).float().half()\n") == [2]


def test_files_without_such_a_chain_are_not_parsed_for_it():
    from tests.conftest import make_ruleset

    rules = make_ruleset(select=["HPU114"])
    common = b"import torch\nx = torch.tensor([1.0]).to(device)\ny = x.float()\n"
    # The words and `.float()` are there, but no cast of a call's result: the
    # bytes tell it, as the code does.
    assert rules.for_source(common) is None
    assert rules.for_code(common) is None
    assert rules.for_code(b"import torch\nx = torch.tensor(a).to(device).float()\n") is not None
