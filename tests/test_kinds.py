"""Behaviour of each rule kind, beyond the rules' own examples."""

import textwrap

import pytest

from tests.conftest import port, ported

DEVICE_STRINGS = [
    pytest.param('x.to("cuda")', 'x.to("hpu")', id="argument"),
    pytest.param("x.to('cuda:0')", "x.to('hpu:0')", id="single-quoted-index"),
    pytest.param('import torch\ntorch.device("cuda", i)', 'import torch\ntorch.device("hpu", 0)', id="device-with-index"),
    pytest.param(
        'import torch\ntorch.device("cuda" if ok else "cpu", rank)', 'import torch\ntorch.device("hpu" if ok else "cpu", 0)',
        id="chosen-device-with-index",
    ),
    pytest.param('x.to(f"cuda:{rank}")', 'x.to("hpu:0")', id="f-string"),
    pytest.param("x.to(F'cuda')", "x.to(F'hpu')", id="f-string-exact"),
    pytest.param('y = torch.zeros(3, device=r"cuda")', 'y = torch.zeros(3, device=r"hpu")', id="raw-prefix"),
    pytest.param('ok = "cuda" in device', 'ok = "hpu" in device', id="membership"),
    pytest.param('ok = dev.type != "cuda"', 'ok = dev.type != "hpu"', id="comparison"),
    pytest.param('def f(device="cuda"): pass', 'def f(device="hpu"): pass', id="parameter-default"),
    pytest.param('d = "cuda:{}".format(i)', 'd = "hpu:0"', id="format"),
    pytest.param('d = "cuda:{rank}".format(rank=r)', 'd = "hpu:0"', id="format-named"),
    pytest.param('d = "cuda:%d" % i', 'd = "hpu:0"', id="percent"),
    pytest.param('d = "cuda:" + str(i)', 'd = "hpu:0"', id="concatenation"),
    pytest.param('m = {"cuda:1": "cuda:0"}', 'm = {"cuda:1": "hpu:0"}', id="dict-map-location"),
    pytest.param('device = y if z else "cuda"', 'device = y if z else "hpu"', id="conditional"),
]


@pytest.mark.parametrize("before, after", DEVICE_STRINGS)
def test_device_strings(before, after):
    assert ported(before + "\n", select=["HPU110"]) == after + "\n"


UNTOUCHED_STRINGS = [
    pytest.param('"""Uses "cuda"."""\n', id="docstring"),
    pytest.param('def f():\n    "cuda"\n', id="bare-string-statement"),
    pytest.param('x = b"cuda"\n', id="bytes"),
    pytest.param('x = "cuda:0,1"\n', id="device-list"),
    pytest.param('x = "CUDA"\n', id="upper-case"),
    pytest.param('x = "cudnn"\n', id="other-word"),
    pytest.param('print("cuda:{}")\n', id="template-without-format-call"),
    pytest.param('x = f"{dev}:0"\n', id="f-string-without-device-text"),
    pytest.param('x = f"cuda:{a}{b}"\n', id="f-string-with-more-parts"),
    pytest.param('x = "cu" "da"\n', id="implicit-concatenation"),
    pytest.param('x = 1  # "cuda"\n', id="comment"),
]


@pytest.mark.parametrize("code", UNTOUCHED_STRINGS)
def test_strings_left_alone(code):
    assert ported(code, select=["HPU110"]) == code


METHOD_CALLS = [
    pytest.param("x.cuda()", 'x.to("hpu")', id="plain"),
    pytest.param("x.cuda(0)", 'x.to("hpu")', id="index"),
    pytest.param("x.cuda(non_blocking=True)", 'x.to("hpu", non_blocking=True)', id="keyword"),
    pytest.param("x.cuda(rank, True)", 'x.to("hpu", True)', id="positional-non-blocking"),
    pytest.param("x.cuda(device=rank, memory_format=fmt)", 'x.to("hpu", memory_format=fmt)', id="device-keyword"),
    pytest.param("self.model.cuda()", 'self.model.to("hpu")', id="attribute-receiver"),
    pytest.param("Net().cuda().train()", 'Net().to("hpu").train()', id="chained"),
    pytest.param("a.cuda().b.cuda()", 'a.to("hpu").b.to("hpu")', id="nested"),
]


@pytest.mark.parametrize("before, after", METHOD_CALLS)
def test_method_calls(before, after):
    assert ported(before + "\n", select=["HPU111"]) == after + "\n"


def test_method_call_uses_the_files_quote_style():
    code = "x = 'a'\ny = 'b'\nz = t.cuda()\n"
    assert ported(code, select=["HPU111"]).endswith("z = t.to('hpu')\n")


def test_method_call_on_an_imported_module_is_not_matched():
    code = "import numba\nnumba.cuda()\n"
    assert ported(code, select=["HPU111"]) == code


def test_edits_compose_inside_one_expression():
    code = "import torch\ny = torch.cuda.current_stream(x.cuda()).query('cuda:0')\n"
    out = ported(code, select=["HPU103", "HPU110", "HPU111"])
    assert out == "import torch\ny = torch.hpu.current_stream(x.to('hpu')).query('hpu:0')\n"


KWARG_RULE = '''
code = "HPU950"
name = "ddp-device-ids"
summary = "DDP picks the device itself."
why = "test"
kind = "keyword-args"
fix = "safe"
default = true
category = "distributed"
message = "`{name}`: {keywords}"
calls = ["torch.nn.parallel.DistributedDataParallel"]
drop = ["device_ids", "output_device"]
rename = {find_unused = "find_unused_parameters"}
set = {gradient_as_bucket_view = "True"}

[[examples.invalid]]
before = "from torch.nn.parallel import DistributedDataParallel as DDP\\nDDP(m, device_ids=[0])\\n"
after = "from torch.nn.parallel import DistributedDataParallel as DDP\\nDDP(m, gradient_as_bucket_view=True)\\n"

[[examples.valid]]
code = "DDP(m)\\n"
'''


@pytest.fixture
def kwarg_rule(tmp_path):
    path = tmp_path / "HPU950-ddp-device-ids.toml"
    path.write_text(KWARG_RULE)
    return path


@pytest.mark.parametrize(
    "before, after",
    [
        pytest.param(
            "DDP(model, device_ids=[rank], output_device=rank)",
            "DDP(model, gradient_as_bucket_view=True)",
            id="drop-two-then-set",
        ),
        pytest.param(
            "DDP(model, device_ids=[rank], find_unused=True, gradient_as_bucket_view=False)",
            "DDP(model, find_unused_parameters=True, gradient_as_bucket_view=True)",
            id="drop-rename-replace",
        ),
        pytest.param(
            "DDP(\n    model,\n    device_ids=[rank],\n    output_device=rank,\n)",
            "DDP(\n    model,\n    gradient_as_bucket_view=True,\n)",
            id="multi-line-trailing-comma",
        ),
    ],
)
def test_keyword_args(kwarg_rule, before, after):
    header = "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    out = ported(header + before + "\n", select=["HPU950"], extra_rules=[kwarg_rule])
    assert out == header + after + "\n"


def test_keyword_args_no_change_when_already_right(kwarg_rule):
    code = "import torch\ntorch.nn.parallel.DistributedDataParallel(m, gradient_as_bucket_view=True)\n"
    result = port(code, select=["HPU950"], extra_rules=[kwarg_rule])
    assert result.findings == [] and result.new_source is None


REPORT_RULE = '''
code = "HPU951"
name = "cuda-capability"
summary = "Capability checks mean nothing on Gaudi."
why = "test"
kind = "report"
fix = "none"
default = true
category = "unsupported"
message = "`{name}`: {advice}"

[names]
"torch.cuda.get_device_capability" = "remove the capability check"

[[examples.invalid]]
before = "import torch\\ntorch.cuda.get_device_capability()\\n"

[[examples.valid]]
code = "import torch\\n"
'''


def test_report_kind_reports_without_changing(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(REPORT_RULE)
    code = "from torch.cuda import get_device_capability as cap\nif cap()[0] >= 8:\n    pass\n"
    result = port(code, select=["HPU951"], extra_rules=[path])
    assert result.new_source is None
    [finding] = result.findings
    assert (finding.code, finding.line, finding.column, finding.fix) == ("HPU951", 2, 4, "none")
    assert finding.message == "`cap`: remove the capability check"
    assert finding.needs_person


def test_check_mode_plans_but_does_not_apply():
    result = port("import torch\ntorch.cuda.synchronize()\n", apply=False)
    assert result.new_source is None
    assert {(f.code, f.fixable, f.applied) for f in result.findings} == {("HPU001", True, False), ("HPU101", True, False)}


def test_finding_positions():
    code = textwrap.dedent(
        """
        import torch

        x = torch.zeros(2, device="cuda")
        """
    ).lstrip()
    result = port(code, apply=False)
    finding = next(f for f in result.findings if f.code == "HPU110")
    assert (finding.line, finding.column, finding.end_line, finding.end_column) == (3, 27, 3, 33)


def test_attribute_names_are_not_devices():
    code = 'if hasattr(torch, "cuda"):\n    f = getattr(model, "cuda")\n'
    assert ported(code, select=["HPU110"]) == code


def test_device_prefix_literal():
    assert ported('ok = dev.startswith("cuda:")\n', select=["HPU110"]) == 'ok = dev.startswith("hpu:")\n'
