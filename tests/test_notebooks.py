"""Jupyter notebooks: code cells ported, magics/markdown/outputs/metadata untouched."""

import json

from click.testing import CliRunner

from hpu_port.cli import main


def cell(kind, source, **extra):
    base = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        base.update({"execution_count": None, "outputs": []})
    base.update(extra)
    return base


NOTEBOOK = {
    "cells": [
        cell("markdown", ["# Train on a GPU\n", "Uses `cuda`."]),
        cell("code", ["!pip install -q timm\n", "%matplotlib inline"]),
        cell("code", ["import torch\n", "device = \"cuda\""]),
        cell("code", ["x = torch.randn(3).to(device)\n", "torch.cuda.synchronize()\n", "x.sum()?"],
             outputs=[{"name": "stdout", "output_type": "stream", "text": ["cuda ok\n"]}], execution_count=3),
        cell("code", ["%%bash\n", "nvidia-smi"]),
        cell("code", ["print('no cuda here')"]),
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def write(path, data, **layout):
    options = {"indent": 1, "sort_keys": True, "ensure_ascii": False, **layout}
    path.write_text(json.dumps(data, **options) + "\n", encoding="utf-8")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_code_cells_are_ported_and_the_rest_is_kept(tmp_path):
    path = tmp_path / "train.ipynb"
    write(path, NOTEBOOK)
    result = invoke("rewrite", tmp_path)
    assert result.exit_code == 0, result.stderr
    data = json.loads(path.read_text())
    cells = data["cells"]
    assert cells[0] == NOTEBOOK["cells"][0]  # markdown untouched (it mentions cuda)
    assert cells[1] == NOTEBOOK["cells"][1]  # shell line and magic kept exactly
    assert "".join(cells[2]["source"]) == 'import torch\nimport habana_frameworks.torch.core as htcore\n\ndevice = "hpu"'
    assert "".join(cells[3]["source"]) == "x = torch.randn(3).to(device)\ntorch.hpu.synchronize()\nx.sum()?"
    assert cells[3]["outputs"] == NOTEBOOK["cells"][3]["outputs"] and cells[3]["execution_count"] == 3
    assert cells[4] == {**NOTEBOOK["cells"][4], "source": ["%%bash\n", "hl-smi"]}  # shell, ported as shell
    assert cells[5] == NOTEBOOK["cells"][5]
    assert data["metadata"] == NOTEBOOK["metadata"]
    # Same layout: re-dumping the result with the notebook's own options gives the file back.
    assert path.read_text() == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert invoke("rewrite", "--check", path).stdout == ""


def test_findings_and_diffs_name_the_cell(tmp_path):
    path = tmp_path / "train.ipynb"
    write(path, NOTEBOOK)
    check = invoke("check", path)
    assert f"{path}:cell 3:2:10: HPU110" in check.stdout
    assert f"{path}:cell 4:2:1: HPU101" in check.stdout
    diff = invoke("rewrite", "--dry-run", path).stdout
    assert f"--- {path} (cell 4)\n+++ {path} (cell 4)\n" in diff
    assert "+torch.hpu.synchronize()" in diff
    assert f"--- {path} (cell 5)\n+++ {path} (cell 5)\n" in diff and "-nvidia-smi\n+hl-smi" in diff


def test_a_layout_that_cannot_be_reproduced_is_refused(tmp_path):
    path = tmp_path / "odd.ipynb"
    text = json.dumps(NOTEBOOK, indent=3) + "\n\n"
    path.write_text(text)
    result = invoke("rewrite", path)
    assert result.exit_code == 2
    assert "layout" in result.stderr
    assert path.read_text() == text


def test_other_layouts_are_kept(tmp_path):
    path = tmp_path / "two.ipynb"
    write(path, NOTEBOOK, indent=2, sort_keys=False)
    assert invoke("rewrite", path).exit_code == 0
    data = json.loads(path.read_text())
    assert path.read_text() == json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
