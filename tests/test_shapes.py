"""The statement shapes looked for in a file's bytes (hpu_port.shapes): each
must find every place its kind's screen accepts, in the raw bytes as in the
code view, or a file the rules act on would never be parsed."""

import ast
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from hpu_port.engine import port_notebook
from hpu_port.shapes import ImportOf, TieOfMoved, cast_of_a_result, top_module
from hpu_port.triggers import Trigger, TriggerIndex, code_view

from tests.conftest import make_ruleset

IMPORTS_FLASH_ATTN = [
    b"import flash_attn\n",
    b"import flash_attn.flash_attn_interface as fa\n",
    b"import os, flash_attn\n",
    b"import os as o,\\\n    flash_attn\n",
    b"import os as o,\\\r\n    flash_attn\r\n",
    b"from flash_attn import flash_attn_func\n",
    b"from flash_attn.bert_padding import (\n    pad_input,  # padded\n    unpad_input,\n)\n",
    b"from \\\n  flash_attn import x\n",
    b"if ok: import flash_attn\n",
    b"x = 1; from flash_attn import y\n",
    b"from einops import *\n",  # a star import may bind anything
    b"from einops.layers import *\n",
    b"def f():\n    from flash_attn import y\n",
]

NOT_IMPORTING_FLASH_ATTN = [
    b"from .flash_attn import y\n",  # relative: not resolved
    b"from . import *\n",
    b"from .models import *\n",
    b"from x import flash_attn\n",  # `x.flash_attn`
    b"import x.flash_attn\n",
    b"flash_attn = None\nuse_flash_attn = True\n",
    b"import is_flash_attn_available\n",
]


@pytest.mark.parametrize("source", IMPORTS_FLASH_ATTN)
def test_an_import_of_the_module_is_found(source):
    assert ImportOf("flash_attn").search(source)


@pytest.mark.parametrize("source", NOT_IMPORTING_FLASH_ATTN)
def test_code_that_imports_no_name_under_the_module_is_passed_over(source):
    assert not ImportOf("flash_attn").search(source)
    view = code_view(source)
    assert view is None or not view.may_reference(frozenset({"flash_attn"}))


def test_only_a_plain_first_component_makes_a_shape():
    assert top_module("flash_attn.flash_attn_func") == "flash_attn"
    assert top_module("apex*.fused") is None


_MODULES = st.sampled_from(["flash_attn", "flash_attn.ops", "torch", "os.path", "einops"])
_NAMES = st.sampled_from(["y", "flash_attn", "a_b", "Z"])
_SPACE = st.sampled_from([" ", "  ", "\t", " \\\n  ", " \\\r\n ", " \\\r "])


@st.composite
def import_statements(draw) -> str:
    space = draw(_SPACE)
    if draw(st.booleans()):
        parts = draw(st.lists(st.tuples(_MODULES, st.sampled_from(["", "m", "flash_attn"])), min_size=1, max_size=3))
        return "import" + space + ", ".join(m + (f" as {alias}" if alias else "") for m, alias in parts)
    module = draw(st.sampled_from(["flash_attn", "flash_attn.ops", "torch", ".flash_attn", ".", "einops"]))
    names = draw(st.lists(_NAMES, min_size=1, max_size=3))
    listed = draw(st.sampled_from(["{}", "({})", "(\n    {},\n)", "*"]))
    return "from" + space + module + space + "import " + (listed if listed == "*" else listed.format(", ".join(names)))


@st.composite
def programs(draw) -> bytes:
    statements = draw(st.lists(import_statements(), min_size=1, max_size=4))
    body = draw(st.sampled_from(["", "x = flash_attn.ops.f(1)\n", "def g():\n    return y  # flash_attn\n"]))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))  # Python reads a lone carriage return as a line break
    return (ending.join(statements) + ending + body).encode()


@settings(max_examples=300, deadline=None)
@given(programs())
def test_every_import_the_screen_counts_is_found(source):
    view = code_view(source)
    if view is None:
        return  # not Python this interpreter reads: the full parser decides
    for top in ("flash_attn", "einops", "torch"):
        wanted = frozenset({top, f"{top}.ops.f"})
        if view.may_reference(wanted):
            assert ImportOf(top).search(source), (top, source)
            assert ImportOf(top).search(view.text), (top, view.text)


_ROOTS = st.sampled_from(["model", "m", "self", "modèle"])
_CHAINS = st.lists(st.sampled_from(["a", "weight", "b", "décodeur"]), min_size=1, max_size=3)
_BETWEEN = st.sampled_from([" ", "", "  ", " \\\n ", "\t"])


@st.composite
def ties_and_moves(draw) -> bytes:
    """Statements tying attributes and moving names, in the layouts Python allows."""
    space = draw(_BETWEEN)
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        target, value = draw(_ROOTS), draw(st.sampled_from([draw(_ROOTS), "other"]))
        left = target + "".join(f"{space}.{space}{part}" for part in draw(_CHAINS))
        right = value + "".join(f".{part}" for part in draw(_CHAINS))
        layout = draw(st.sampled_from(["{} = {}", "{}={}", "({}) = ({})", "{} = (\n    {}\n)", "{} = {}  # tied", "{} == {}", "{} += {}"]))
        lines.append(layout.format(left, right))
    for _ in range(draw(st.integers(0, 2))):
        name, method = draw(_ROOTS), draw(st.sampled_from(["to", "cuda", "hpu", "tolist"]))
        lines.append(draw(st.sampled_from(["{}.{}(d)", "{} .{}( d )", "x = {}.{}()", "y.{0}.{1}(d)"])).format(name, method))
    draw(st.randoms()).shuffle(lines)
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=400, deadline=None)
@given(ties_and_moves())
def test_every_tie_of_a_moved_name_the_screen_counts_is_found(source):
    from hpu_port.kinds import get_kind

    rule = next(r for r in make_ruleset(["HPU712"]).rules if r.code == "HPU712")
    view = code_view(source)
    if view is None:
        return
    shape = TieOfMoved(tuple(sorted(rule.params["move-methods"])))
    if get_kind(rule.kind).screen(rule, view):
        assert shape.search(source), source
        assert shape.search(view.text), view.text


def test_a_tie_of_a_name_never_moved_opens_no_file_for_the_tie_rule():
    rules = make_ruleset(["HPU712"])
    assert rules.for_source(b"model.to(d)\nself.head.weight = self.embed.weight\n") is None
    assert rules.for_source(b"model.to(d)\nmodel.head.weight = other.embed.weight\n") is None
    assert rules.for_source(b"model.to(d)\nmodel.head.weight = model.embed.weight\n") is not None


def test_a_cast_of_a_result_is_found_across_a_comment_in_the_raw_bytes():
    casts = frozenset({"float", "half"})
    assert not cast_of_a_result(casts).search(b"x = a.float()\n")
    assert cast_of_a_result(casts).search(b"x = torch.from_numpy(a).to(d)  # moved\n    .float()\n") is not None
    assert cast_of_a_result(casts).search(b"x = (torch.from_numpy(a).to(d)\n    .half( ))\n") is not None


def test_a_file_that_moves_and_casts_only_names_is_not_parsed_for_the_cast_rule():
    rules = make_ruleset(["HPU114"])
    assert rules.for_source(b"import torch\nx = torch.tensor(a)\ny = x.to(d)\nz = y.float()\n") is None
    assert rules.for_source(b"import torch\nz = torch.tensor(a).to(d).float()\n") is not None


def test_a_report_rule_opens_only_a_file_that_imports_its_module():
    rules = make_ruleset(["HPU611"])
    assert rules.for_source(b"mode = 'flash_attn'\nflash_attn = None\n") is None
    assert rules.for_source(b"import flash_attn\nflash_attn.flash_attn_func(q, k, v)\n") is not None


def test_without_shapes_patterns_count_as_found_and_words_are_still_asked():
    never = Trigger(pattern=_Never())
    index = TriggerIndex([("rule", [Trigger(words=frozenset({b"rsqrt"}), alongside=(never,))])])
    assert index.matching(b"y = torch.rsqrt(x)") == []
    assert index.matching(b"y = torch.rsqrt(x)", shapes=False) == ["rule"]
    assert index.matching(b"y = torch.sqrt(x)", shapes=False) == []


class _Never:
    def search(self, text):
        return None


def test_a_notebook_is_screened_by_its_code_not_by_the_lines_of_its_json():
    # The loop's pattern starts a line: in the notebook's JSON it never does.
    cell = ["import torch\n", "steps = torch.linspace(0, 1, 10)\n", "for i in range(10):\n", "    x = steps[i]\n"]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": cell}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    raw = json.dumps(notebook, indent=1).encode()
    result = port_notebook("loop.ipynb", raw, make_ruleset(["HPU711"]), apply=False)
    assert [f.code for f in result.findings] == ["HPU711"]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_a_screen_finds_its_lines_as_python_counts_them(ending):
    # The screens walk only the statements on the lines where what they look
    # for is written: a lone carriage return ends a line for the parser too.
    source = ending.join([b"a = 1", b"b = 2", b'device = "cuda"', b""])
    view = code_view(source)
    lines = view.lines_matching(re.compile(b"cuda"))
    assert lines == [3]
    assert [node.value for node in view.nodes_on_lines(ast.Constant, lines)] == ["cuda"]
    assert make_ruleset(["HPU110"]).for_code(source) is not None
