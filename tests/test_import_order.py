"""Gaudi's import goes where isort (and ruff's `I` rules) would put it."""

from tests.conftest import port


def _ported(code: str) -> str:
    return port(code).new_source.decode()


def test_a_sorted_section_gets_the_import_in_its_order():
    output = _ported("""
        import os
        import sys

        import numpy as np
        import torch
        from torch import nn

        x = torch.zeros(3).cuda()
    """)
    assert output.startswith(
        "import os\nimport sys\n\nimport habana_frameworks.torch.core as htcore  # noqa: F401\nimport numpy as np\nimport torch\n"
    )


def test_a_section_sorted_by_module_alone_keeps_that_order():
    # force-sort-within-sections: `import` and `from` lines sorted together.
    output = _ported("""
        import os

        from apex import amp
        import torch

        x = torch.zeros(3).cuda()
    """)
    assert "from apex import amp\nimport habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n" in output


def test_the_first_import_of_a_section_hands_over_its_blank_line():
    output = _ported("""
        import os

        import torch

        x = torch.zeros(3).cuda()
    """)
    assert output.startswith("import os\n\nimport habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n\nx =")


def test_code_right_after_the_imports_keeps_its_place_when_the_import_goes_among_them():
    # The import is placed inside the sorted block: the line after the block
    # (no blank line before it) is no rule's to space out.
    output = _ported("""
        import os
        import sys

        import torch
        from transformers import Trainer
        sys.path.append(os.path.dirname(__file__))

        x = torch.zeros(3).cuda()
    """)
    assert "from transformers import Trainer\nsys.path.append(" in output


def test_an_unsorted_block_keeps_the_import_after_it():
    output = _ported("""
        import torch
        import os
        x = torch.zeros(3).cuda()
    """)
    assert output.startswith("import torch\nimport os\nimport habana_frameworks.torch.core as htcore  # noqa: F401\n")


def test_an_environment_setting_after_the_section_stays_before_the_import():
    # Gaudi's modules read PT_HPU_* variables when they load.
    output = _ported("""
        import os

        import torch
        os.environ["PT_HPU_LAZY_MODE"] = "1"
        x = torch.zeros(3).cuda()
    """)
    assert output.index('os.environ["PT_HPU_LAZY_MODE"]') < output.index("import habana_frameworks")


def test_both_gaudi_imports_take_their_places():
    output = _ported("""
        import os

        import torch
        import torch.distributed as dist

        dist.init_process_group("nccl")
        x = torch.zeros(3).cuda()
    """)
    assert "\n\nimport habana_frameworks.torch.core as htcore  # noqa: F401\nimport habana_frameworks.torch.distributed.hccl  # noqa: F401\nimport torch\n" in output
