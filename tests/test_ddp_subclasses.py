"""HPU403 and HPU408 follow the classes a file builds on DDP and FSDP."""

import pytest

from tests.conftest import port, ported

HEADER = "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"


def test_a_subclass_of_a_subclass_defined_after_its_use():
    code = HEADER + (
        "def wrap(model, rank):\n    return Outer(model, device_ids=[rank], output_device=rank)\n\n\n"
        "class Outer(Inner):\n    pass\n\n\nclass Inner(DDP):\n    pass\n"
    )
    assert "return Outer(model)\n" in ported(code, select=["HPU403"])


def test_a_subclass_defined_in_a_function():
    code = HEADER + (
        "def wrap(model, rank):\n    class Wrapper(DDP):\n        pass\n\n"
        "    return Wrapper(model, device_ids=[rank])\n"
    )
    assert "return Wrapper(model)\n" in ported(code, select=["HPU403"])


@pytest.mark.parametrize(
    "code",
    [
        # Not built on DDP.
        HEADER + "class Wrapper(Base):\n    pass\n\n\nmodel = Wrapper(model, device_ids=[rank])\n",
        # The name is a parameter here, not the class.
        HEADER + "class Wrapper(DDP):\n    pass\n\n\ndef wrap(Wrapper, model):\n    return Wrapper(model, device_ids=[0])\n",
    ],
    ids=["other-base", "shadowed"],
)
def test_left_alone(code):
    assert ported(code, select=["HPU403"]) == code


def test_check_reports_what_rewrite_fixes():
    # `check` stubs out classes no rule acts on; one built on DDP stays, since
    # it decides what the calls below it are.
    code = HEADER + (
        "class Wrapper(DDP):\n    def train_step(self, data):\n        return self.module(data)\n\n\n"
        "model = Wrapper(model, device_ids=[rank])\n"
    )
    reported = [(f.code, f.line) for f in port(code, select=["HPU403"], apply=False).findings]
    assert reported == [("HPU403", 9)]
