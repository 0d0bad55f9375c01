"""Code that already chooses the HPU keeps its branches for other devices."""

from tests.conftest import ported


def test_a_cuda_check_doing_for_cuda_what_an_hpu_check_beside_it_does_is_kept():
    code = ported(
        """
        import torch

        def save(states):
            if is_hpu_available():
                states["torch_hpu_manual_seed"] = torch.hpu.get_rng_state_all()
            if is_cuda_available():
                states["torch_cuda_manual_seed"] = torch.cuda.get_rng_state_all()
        """
    )
    assert 'states["torch_cuda_manual_seed"] = torch.cuda.get_rng_state_all()' in code


def test_a_cuda_check_beside_an_hpu_check_that_does_something_else_is_ported():
    code = ported(
        """
        import torch

        def to(device_type):
            if device_type == "hpu":
                setup_hpu()
            if device_type in ["cuda", "xpu"]:
                x = torch.zeros(1, device="cuda")
        """
    )
    assert 'if device_type in ["hpu", "xpu"]:\n        x = torch.zeros(1, device="hpu")' in code
