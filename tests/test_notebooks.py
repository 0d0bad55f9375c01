"""Jupyter notebooks: code cells ported, magics/markdown/outputs/metadata untouched."""

import json

import pytest
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
    assert "".join(cells[2]["source"]) == 'import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\ndevice = "hpu"'
    assert "".join(cells[3]["source"]) == "x = torch.randn(3).to(device)\ntorch.hpu.synchronize()\nx.sum()?"
    assert cells[3]["outputs"] == NOTEBOOK["cells"][3]["outputs"] and cells[3]["execution_count"] == 3
    assert cells[4] == {**NOTEBOOK["cells"][4], "source": ["%%bash\n", "hl-smi"]}  # shell, ported as shell
    assert cells[5] == NOTEBOOK["cells"][5]
    assert data["metadata"] == NOTEBOOK["metadata"]
    # Same layout: re-dumping the result with the notebook's own options gives the file back.
    assert path.read_text() == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert invoke("rewrite", "--check", path).stdout == ""


def test_the_import_comes_before_the_first_cell_that_uses_the_device(tmp_path):
    # torch is imported in a later cell, but an earlier one already moves a model.
    notebook = {
        **NOTEBOOK,
        "cells": [
            cell("code", ["!pip install -q mylib"]),
            cell("code", ["from mylib import build\n", "model = build().cuda()"]),
            cell("code", ["import torch\n", "x = torch.ones(2).cuda()"]),
        ],
    }
    path = tmp_path / "demo.ipynb"
    write(path, notebook)
    assert invoke("rewrite", tmp_path).exit_code == 0
    cells = json.loads(path.read_text())["cells"]
    assert "".join(cells[1]["source"]) == (
        'import habana_frameworks.torch.core as htcore  # noqa: F401\nfrom mylib import build\nmodel = build().to("hpu")'
    )
    assert "".join(cells[2]["source"]) == 'import torch\nx = torch.ones(2).to("hpu")'


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


def ported_cells(data):
    """NOTEBOOK's cells as the rewrite leaves them (see the first test)."""
    cells = [dict(c) for c in data["cells"]]
    cells[2]["source"] = ["import habana_frameworks.torch.core as htcore  # noqa: F401\n", "import torch\n", 'device = "hpu"']
    cells[3]["source"] = ["x = torch.randn(3).to(device)\n", "torch.hpu.synchronize()\n", "x.sum()?"]
    cells[4]["source"] = ["%%bash\n", "hl-smi"]
    return {**data, "cells": cells}


def test_any_json_layout_is_kept(tmp_path):
    # The file is never dumped again: only the changed cells' sources are
    # rewritten, so even a layout no writer makes stays as it was.
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps(NOTEBOOK, indent=3) + "\n\n")
    assert invoke("rewrite", path).exit_code == 0
    assert path.read_text() == json.dumps(ported_cells(NOTEBOOK), indent=3) + "\n\n"


def test_other_layouts_are_kept(tmp_path):
    path = tmp_path / "two.ipynb"
    write(path, NOTEBOOK, indent=2, sort_keys=False)
    assert invoke("rewrite", path).exit_code == 0
    data = json.loads(path.read_text())
    assert path.read_text() == json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def code_notebook(*sources):
    return {"cells": [cell("code", source) for source in sources], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def rewrite_text(tmp_path, text):
    path = tmp_path / "n.ipynb"
    path.write_bytes(text.encode("utf-8"))
    result = invoke("rewrite", path)
    return result, path.read_bytes().decode("utf-8")


def rewrite_sources(tmp_path, sources, **layout):
    """Rewrite a notebook of these code cells: (its text, its new text, the new sources)."""
    text = json.dumps(code_notebook(*sources), indent=1, **layout) + "\n"
    result, new = rewrite_text(tmp_path, text)
    assert result.exit_code == 0, result.stderr
    return text, new, [c["source"] for c in json.loads(new)["cells"]]


def test_escapes_as_each_cell_spells_them_are_kept(tmp_path):
    # One cell escaped (\u00e9), the other not: no json.dumps option makes this
    # file. The changed cell stays escaped, the other one is not touched.
    notebook = code_notebook("s = 'caf\u00e9'\n", "import torch\nx = '\u00e9'\ndevice = 'cuda'\n")
    text = json.dumps(notebook, indent=1, ensure_ascii=False).replace("x = '\u00e9'", "x = '\\u00e9'")
    result, new = rewrite_text(tmp_path, text)
    assert result.exit_code == 0, result.stderr
    assert new == text.replace("device = 'cuda'", "device = 'hpu'").replace(
        "import torch\\n", "import habana_frameworks.torch.core as htcore  # noqa: F401\\nimport torch\\n"
    )
    assert "s = 'caf\u00e9'" in new and "x = '\\u00e9'" in new


def test_line_ends_and_form_feeds_of_cells_are_kept(tmp_path):
    sources = [
        "import torch\r\na = 1\r\n",  # gets the import: its new lines end in CRLF too
        "b = 2\r\nc = 3\r\n",
        "for i in range(3):\r    # page\fbreak\r    pass\r",
        "x = torch.randn(2).cuda()\r\ny = 1",
    ]
    text, new, cells = rewrite_sources(tmp_path, sources)
    assert cells == [
        "import habana_frameworks.torch.core as htcore  # noqa: F401\r\nimport torch\r\na = 1\r\n",
        sources[1],
        sources[2],
        'x = torch.randn(2).to("hpu")\r\ny = 1',
    ]
    assert new.split('"source"')[2:4] == text.split('"source"')[2:4]


def test_text_like_the_tools_own_markers_is_user_text(tmp_path):
    sources = [
        "!nvidia-smi\n",
        "pass  # hpu-port-magic:0\n# hpu-port-cell:0\n",
        "%%bash\n#@hpu-port cell\nnvidia-smi\n",
        "import torch\ns = 'a\u2028b'  # \u2029\nx = torch.randn(2).cuda()\n",
    ]
    _, _, cells = rewrite_sources(tmp_path, sources, ensure_ascii=False)
    assert cells == [
        "!hl-smi\n",
        sources[1],
        "%%bash\n#@hpu-port cell\nhl-smi\n",
        "import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\ns = 'a\u2028b'  # \u2029\nx = torch.randn(2).to('hpu')\n",
    ]


def test_a_changed_list_source_keeps_its_other_lines_as_they_were_written(tmp_path):
    notebook = code_notebook(["import torch\n", "name = 'caf\u00e9'\r\n", "x = torch.randn(2).cuda()"])
    text = json.dumps(notebook, indent=2).replace("caf\\u00e9", "caf\u00e9") + "\n"  # this line unescaped
    result, new = rewrite_text(tmp_path, text)
    assert result.exit_code == 0, result.stderr
    assert '\n        "import torch\\n",\n        "name = \'café\'\\r\\n",\n        "x = torch.randn(2).to(\'hpu\')"\n      ],\n' in new


def test_a_source_that_is_not_text_is_a_one_line_error(tmp_path):
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(code_notebook(["import torch\n", 1], "x = torch.randn(2).cuda()"), indent=1))
    before = path.read_bytes()
    result = invoke("rewrite", path)
    assert result.exit_code == 2
    message = [line for line in result.stderr.splitlines() if "bad.ipynb" in line]
    assert message == [f"{path}: error: not a valid notebook: cell 1 has a source that is not a string or a list of strings"]
    assert "Traceback" not in result.stderr and path.read_bytes() == before


def test_a_writefile_cell_with_crlf_line_ends(tmp_path):
    source = "%%writefile train.py\r\nimport torch\r\nx = torch.randn(2).cuda()\r\n"
    _, _, cells = rewrite_sources(tmp_path, [source])
    assert cells[0] == (
        "%%writefile train.py\r\nimport habana_frameworks.torch.core as htcore  # noqa: F401\r\nimport torch\r\n"
        'x = torch.randn(2).to("hpu")\r\n'
    )


@pytest.mark.parametrize("indent", [None, 0, 1, 2])
def test_an_empty_list_source_that_gets_code_is_laid_out_like_the_file(indent):
    # No rule adds lines to an empty cell today (the import goes below the
    # cell markers at the top), so the writer is tested on its own.
    from hpu_port import notebooks

    data = code_notebook([], ["x = 1\n"])
    notebook = notebooks.load(json.dumps(data, indent=indent).encode())
    new = notebooks.dumps(notebook, {0: "import os\r\n\r\nx = 2"})
    data["cells"][0]["source"] = ["import os\r\n", "\r\n", "x = 2"]
    assert new.decode() == json.dumps(data, indent=indent)


@pytest.mark.parametrize("between", ["\n", "\na = 1"])
def test_a_new_line_never_joins_an_empty_line_below_it(tmp_path, between):
    # The cell's usual line end is a lone CR: the added import ending in one
    # would read as CRLF with the empty LF line below it, and that line would
    # be lost. It takes the line end of the line above it instead.
    source = f"import torch\r\n{between}\rx = torch.randn(2).cuda()\r"
    _, new, cells = rewrite_sources(tmp_path, [source])
    added = "import habana_frameworks.torch.core as htcore  # noqa: F401\r"
    assert cells == [f'{added}import torch\r\n{between}\rx = torch.randn(2).to("hpu")\r']
    assert rewrite_text(tmp_path, new)[1] == new


@pytest.mark.parametrize(
    ("lines", "written", "expected"),
    [
        # A written line ending in a lone CR above a kept empty LF line: the line above's end.
        (["a\r\n", "new\r", "\n", "b\r"], {1}, ["a\r\n", "new\r\n", "\n", "b\r"]),
        # ... and CRLF when the line above ends in a lone CR too.
        (["a\r", "new\r", "\n"], {1}, ["a\r", "new\r\n", "\n"]),
        # A written empty LF line below a kept lone CR: the lone CR of the line above.
        (["a\r", "\n", "b\n"], {1}, ["a\r", "\r", "b\n"]),
        # ... and CRLF when it is above an empty LF line as well.
        (["a\r", "\n", "\n"], {1}, ["a\r", "\r\n", "\n"]),
        # Neither written (a line between them was removed): the lower one changes.
        (["a\r", "\n", "b"], set(), ["a\r", "\r", "b"]),
        # The first line written: CRLF.
        (["new\r", "\n"], {0}, ["new\r\n", "\n"]),
        # Nothing joins: nothing changes.
        (["a\r", "\r\n", "\n", "b"], {0, 1, 2}, ["a\r", "\r\n", "\n", "b"]),
    ],
)
def test_line_ends_that_would_join_two_lines_are_changed(lines, written, expected):
    from hpu_port import notebooks

    contents = [line.rstrip("\r\n") for line in lines]
    ends = [line[len(content):] for line, content in zip(lines, contents)]
    new = notebooks._kept_apart(contents, ends, written)
    assert list(map(str.__add__, contents, new)) == expected
    assert len("".join(expected).splitlines()) == len(lines)


def test_a_shell_line_continued_over_a_backslash_is_one_command(tmp_path):
    sources = [
        "!pip install transformers \\\n    accelerate\n",
        "if True:\n    !torchrun --nproc_per_node 8 \\\n        train.py --device cuda\n    x = 1\n",
    ]
    _, _, new = rewrite_sources(tmp_path, sources)
    assert new[0] == sources[0]
    assert new[1] == (
        "if True:\n    !PT_HPU_LAZY_MODE=1 torchrun --nproc_per_node 8 \\\n        train.py --device hpu\n    x = 1\n"
    )


def test_a_notebook_whose_only_touchpoints_are_shell_lines_is_ported(tmp_path):
    # No code cell names anything a Python rule acts on: the launch line alone
    # must bring the notebook to the port, in `check` as in `rewrite`.
    notebook = {**NOTEBOOK, "cells": [cell("code", ["!torchrun --nproc_per_node 2 train.py --epochs 3\n"]), cell("code", ["print('done')"])]}
    path = tmp_path / "launch.ipynb"
    write(path, notebook)
    report = invoke("check", "--no-cache", "--select", "HPU816", path).stdout
    assert ":cell 1:1:2: HPU816" in report
    invoke("rewrite", "--no-cache", "--select", "HPU816", path)
    assert json.loads(path.read_text())["cells"][0]["source"] == ["!PT_HPU_LAZY_MODE=1 torchrun --nproc_per_node 2 train.py --epochs 3\n"]


def test_a_cell_that_is_not_python_is_left_alone_and_the_others_are_ported(tmp_path):
    # Jupyter runs each cell on its own: a cell of shell commands pasted
    # without `!` fails alone, so it is no reason to leave the notebook unported.
    sources = [
        "import torch\nx = torch.zeros(2).cuda()\n",
        "model=meta-llama/Llama-3-8B\ndocker run --gpus all -p 8080:80 tgi --model-id $model\n",
        "def f(:\n    pass\n",
        "y = x.to('cuda')\n",
    ]
    text, new, cells = rewrite_sources(tmp_path, sources)
    assert cells[1] == sources[1] and cells[2] == sources[2]  # byte for byte
    assert "hpu" in cells[0] and cells[3] == "y = x.to('hpu')\n"
    report = invoke("check", "--no-cache", tmp_path / "n.ipynb").stdout
    assert "cell 2:1:1: HPU870" in report  # it mentions GPUs: a person looks at it
    assert "cell 3:" not in report  # it mentions nothing of NVIDIA's


def test_a_notebook_of_cells_none_of_which_is_python_is_reported_cell_by_cell(tmp_path):
    sources = [f"def f{n}(:\n  torch.cuda.synchronize()\n" for n in range(12)]
    text = json.dumps(code_notebook(*sources), indent=1) + "\n"
    result, new = rewrite_text(tmp_path, text)
    assert result.exit_code != 2 and new == text
    report = invoke("check", "--no-cache", tmp_path / "n.ipynb").stdout
    assert report.count("HPU870") == 12


def test_a_cell_is_left_out_only_when_it_fails_on_its_own(tmp_path):
    # The cell after a broken one is where the joined module fails; it parses
    # alone, so it is ported, and only the broken cell is left as it is.
    sources = ["x = torch.zeros(2).cuda(\n", "import torch\ny = torch.ones(2).cuda()\n"]
    _, _, cells = rewrite_sources(tmp_path, sources)
    assert cells[0] == sources[0] and 'to("hpu")' in cells[1]


TRAINING_CELLS = (
    ["!pip install -q timm\n", "import os\n", "import torch\n", "from torch import nn\n"],
    ["model = nn.Linear(4, 2).to(\"cuda\")\n", "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
     "loss = model(torch.randn(8, 4, device=\"cuda\")).sum()\n", "loss.backward()\n", "opt.step()"],
)


def test_a_notebook_is_an_entry_point_of_a_lazy_mode_port(tmp_path):
    # Its kernel runs the cells as a program: the setting must come before
    # torch is imported, in the cell that imports it.
    path = tmp_path / "train.ipynb"
    write(path, code_notebook(*TRAINING_CELLS))
    report = invoke("check", "--output-format", "json", "--exit-zero", path)
    entry = [f for f in json.loads(report.stdout)["findings"] if f["code"] == "HPU205"]
    assert [(f["cell"], f["line"]) for f in entry] == [(1, 3)]
    assert "`import torch`" in entry[0]["message"] and "notebook's kernel" in entry[0]["message"]
    result = invoke("rewrite", "--unsafe-fixes", path)
    assert result.exit_code == 0, result.stderr
    first = "".join(json.loads(path.read_text())["cells"][0]["source"])
    assert first.startswith('!pip install -q timm\nimport os\nos.environ.setdefault("PT_HPU_LAZY_MODE", "1")\n')
    assert first.index("PT_HPU_LAZY_MODE") < first.index("habana_frameworks") < first.index("import torch")
    assert invoke("rewrite", "--unsafe-fixes", "--check", path).stdout == ""


def test_a_notebook_that_sets_the_mode_imports_no_torch_or_trains_nothing_is_not_reported(tmp_path):
    setting = ["import os\n", "os.environ[\"PT_HPU_LAZY_MODE\"] = \"1\"\n", *TRAINING_CELLS[0][2:]]
    write(tmp_path / "set.ipynb", code_notebook(setting, TRAINING_CELLS[1]))
    write(tmp_path / "plain.ipynb", code_notebook(["x = 'cuda'\n", "print(x)"]))
    # A demonstration: lazy or eager, its inference runs the same.
    write(tmp_path / "demo.ipynb", code_notebook(["import torch\n", "model = torch.load('m.pt').cuda().eval()\n", "model(x)"]))
    report = invoke("check", "--output-format", "json", "--exit-zero", tmp_path)
    assert [f for f in json.loads(report.stdout)["findings"] if f["code"] == "HPU205"] == []


def test_a_python_file_that_starts_like_a_notebooks_cells_is_no_notebook(tmp_path):
    path = tmp_path / "lib.py"
    path.write_text("# hpu-port-cell:0\nimport torch\nx = torch.ones(2).cuda()\n", encoding="utf-8")
    report = invoke("check", "--output-format", "json", "--exit-zero", path)
    assert [f for f in json.loads(report.stdout)["findings"] if f["code"] == "HPU205"] == []
