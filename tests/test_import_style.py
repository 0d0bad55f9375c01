"""Gaudi's import follows the import order of the project's own ruff or isort
configuration: its first-party modules, a section of its own for torch,
force-sort-within-sections and lines-between-types. ruff, run with the
project's configuration, finds nothing to sort before or after the port."""

import shutil
import subprocess
import sys
import textwrap

import pytest

from hpu_port.lint_config import ImportStyle, import_style_for_directory

RUFF = shutil.which("ruff") or str(__import__("pathlib").Path(sys.executable).with_name("ruff"))

TORCH_SECTION = """
[lint.isort]
section-order = ["future", "standard-library", "third-party", "torch", "first-party", "local-folder"]
[lint.isort.sections]
torch = ["torch"]
"""

TORCH_FIRST = """
[lint.isort]
section-order = ["future", "standard-library", "torch", "third-party", "first-party", "local-folder"]
known-first-party = ["trainlib"]
[lint.isort.sections]
torch = ["torch"]
"""

CASES = {
    "torch's section before third-party, and no third-party module": (TORCH_FIRST, """
        import os

        import torch

        x = torch.zeros(3).cuda()
    """),
    "torch's section before third-party, then the project's modules": (TORCH_FIRST, """
        import os

        import torch
        from torch import nn

        import trainlib
        from trainlib import build

        x = torch.zeros(3).cuda()
    """),
    "torch's section before third-party, then other third-party modules": (TORCH_FIRST, """
        import os

        import torch

        import numpy as np
        import zarr

        from . import data

        x = torch.zeros(3).cuda()
    """),
    "torch's section before third-party, then a relative import": (TORCH_FIRST, """
        import os

        import torch

        from . import data

        x = torch.zeros(3).cuda()
    """),
    "torch in a section of its own, after other third-party modules": (TORCH_SECTION, """
        import os

        import numpy as np

        import torch
        from torch import nn

        x = torch.zeros(3).cuda()
    """),
    "torch in a section of its own, no other third-party module": (TORCH_SECTION, """
        import os

        import torch

        x = torch.zeros(3).cuda()
    """),
    "force-sort-within-sections, a section of plain imports": ("""
[lint.isort]
force-sort-within-sections = true
""", """
        import os

        from apex import amp
        import torch
        import zarr

        x = torch.zeros(3).cuda()
    """),
    "lines-between-types": ("""
[lint.isort]
lines-between-types = 1
""", """
        import os

        import numpy as np
        import torch

        from torch import nn

        x = torch.zeros(3).cuda()
    """),
}


def ruff_sort_violations(folder) -> str:
    result = subprocess.run([RUFF, "check", "--no-cache", "--select", "I", "--output-format", "concise", "."],
                            cwd=folder, capture_output=True, text=True)
    return result.stdout if result.returncode else ""


@pytest.mark.parametrize("name", list(CASES))
def test_ruff_with_the_projects_configuration_keeps_the_port_sorted(tmp_path, name):
    config, code = CASES[name]
    (tmp_path / "ruff.toml").write_text(config)
    source = tmp_path / "train.py"
    source.write_text(textwrap.dedent(code).lstrip())
    assert ruff_sort_violations(tmp_path) == ""  # the project is sorted by its own rules
    subprocess.run([sys.executable, "-m", "hpu_port", "rewrite", "--no-cache", "train.py"], cwd=tmp_path,
                   check=True, capture_output=True)
    ported = source.read_text()
    assert "import habana_frameworks.torch.core as htcore" in ported
    assert ruff_sort_violations(tmp_path) == "", ported


def test_known_first_party_is_not_where_a_third_party_import_goes():
    import libcst as cst

    from hpu_port.import_order import sorted_place

    body = cst.parse_module("import os\n\nimport trainlib\nfrom trainlib import build\n\nx = 1\n").body
    statement = "import habana_frameworks.torch.core as htcore"
    # Read from the file alone, trainlib's section looks third-party.
    assert sorted_place(body, 3, statement) == (1, True, False)
    # The project says trainlib is its own: a third-party section of its own, above it.
    assert sorted_place(body, 3, statement, ImportStyle(first_party=("trainlib",))) == (1, False, True)


def test_pyproject_ruff_table_is_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ruff.lint.isort]\nknown-first-party = ["b", "a"]\nforce-sort-within-sections = true\n'
    )
    (tmp_path / "pkg").mkdir()
    style = import_style_for_directory(str(tmp_path / "pkg"))
    assert style == ImportStyle(first_party=("a", "b"), force_sort=True)


def test_the_nearest_configuration_wins(tmp_path):
    (tmp_path / "ruff.toml").write_text('[lint.isort]\nknown-first-party = ["outer"]\n')
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / ".isort.cfg").write_text("[settings]\nknown_first_party = inner\n")
    assert import_style_for_directory(str(tmp_path / "inner")).first_party == ("inner",)
    assert import_style_for_directory(str(tmp_path)).first_party == ("outer",)


@pytest.mark.parametrize("file, text", [
    (".isort.cfg", "[settings]\nprofile = google\nknown_torch = torch\nsections = FUTURE,STDLIB,THIRDPARTY,TORCH\n"),
    ("setup.cfg", "[isort]\nforce_sort_within_sections = true\nknown_torch = torch,torchvision\n"),
    ("tox.ini", "[tool:isort]\nforce_sort_within_sections = 1\nknown_torch = torch\n"),
    ("pyproject.toml", '[tool.isort]\nforce_sort_within_sections = true\nknown_torch = ["torch"]\n'),
])
def test_isort_configurations_are_read(tmp_path, file, text):
    (tmp_path / file).write_text(text)
    style = import_style_for_directory(str(tmp_path))
    assert style.force_sort is True and style.torch_own_section
    assert style.torch_before_third_party is False


@pytest.mark.parametrize("file, text, first", [
    ("ruff.toml", TORCH_FIRST, True),
    ("ruff.toml", TORCH_SECTION, False),
    (".isort.cfg", "[settings]\nknown_torch = torch\nsections = FUTURE,STDLIB,TORCH,THIRDPARTY,FIRSTPARTY\n", True),
    ("setup.cfg", "[isort]\nknown_torch = torch\nsections =\n  FUTURE\n  STDLIB\n  THIRDPARTY\n  TORCH\n", False),
    ("tox.ini", "[isort]\nknown_torch = torch\n", False),
])
def test_the_section_order_says_where_torch_goes(tmp_path, file, text, first):
    (tmp_path / file).write_text(text)
    style = import_style_for_directory(str(tmp_path))
    assert style.torch_own_section and style.torch_before_third_party is first


def test_an_unreadable_configuration_leaves_the_order_to_the_module(tmp_path):
    (tmp_path / "ruff.toml").write_text("[lint.isort\nbroken")
    assert import_style_for_directory(str(tmp_path)) == ImportStyle()


def test_the_style_is_part_of_the_cache_key(tmp_path):
    from hpu_port.config import settings_for
    from hpu_port.selection import RuleSetResolver
    from hpu_port.options import overrides

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "ruff.toml").write_text('[lint.isort]\nknown-first-party = ["x"]\n')
    resolver = RuleSetResolver(overrides(None, None, None, (), (), (), (), None, (), None, None), "rewrite")
    assert settings_for(tmp_path / "b") != settings_for(tmp_path / "a")
    assert repr(resolver(tmp_path / "a" / "t.py").options) != repr(resolver(tmp_path / "b" / "t.py").options)
