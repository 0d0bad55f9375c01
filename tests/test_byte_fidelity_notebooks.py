"""Property tests: a rewrite changes what rules change and not one byte more.

Random notebooks and Python files mix line ends (LF, CRLF, lone CR, none after
the last line), form feeds, U+2028/U+2029 and other characters that
``str.splitlines`` takes for line breaks, tabs, the tool's own marker texts and
IPython magics, around one CUDA touchpoint. The output must parse, a second
run must change nothing, and every line no rule touched must come back with
the same bytes (in a notebook, every cell no rule touched, JSON text and all).
"""

import json
import os
import re
import warnings

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from hpu_port.engine import port_bytes, port_source
from tests.conftest import make_ruleset, python_programs

RULES = make_ruleset()
# Each example takes a few milliseconds: these stay well under the quick suite's budget.
# HPU_PORT_FIDELITY_EXAMPLES=2000 searches longer.
SETTINGS = settings(
    max_examples=int(os.environ.get("HPU_PORT_FIDELITY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

LINE_ENDS = ["\n", "\r\n", "\r"]
# Units of Python lines that no rule acts on, each valid on its own at the top level.
PLAIN_UNITS = [
    ["a = 1"],
    [""],
    ["b = 'x\u2028y\u2029z'"],
    ["# page\fbreak"],
    ["\fc = 2"],
    ["if a:", "\tb = 'tab\there'"],
    ["v = 'vt\x0b fs\x1c gs\x1d rs\x1e nel\x85'"],
    ["e = 'caf\u00e9'  # \u00e9t\u00e9"],
    ["s = '''two", "lines'''"],
    ["def f():", "    return 1  # \u2028"],
    # The tool's own marker texts, and numbered variants of them.
    ["# hpu-port-cell:0"],
    ["pass  # hpu-port-magic:0"],
    ["pass  # hpu-port-1-magic:0"],
    ["#@hpu-port line"],
    ["#@hpu-port cell"],
]
MAGIC_UNITS = [["%pip install x"], ["!ls -la"], ["%matplotlib inline"], ["files = !ls"], ["%env A=1"], ["a?"]]
# (start, CUDA code, end) of the line a rule changes; the start and end stay.
TOUCHPOINTS = [("x = torch.randn(2)", ".cuda()", ""), ("device = ", '"cuda"', "")]
TOUCH_WORDS = ("cuda", "nvidia-smi")
# What the rules write in their place, and in the import they add.
NEW_WORDS = ("hpu", "hl-smi", "habana_frameworks")


def lines_of(text):
    """Each line with its line end; lines break only where Python breaks them."""
    pattern = r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z"
    return re.findall(pattern.encode() if isinstance(text, bytes) else pattern, text)


@st.composite
def joined(draw, lines):
    """``lines`` joined with random line ends; the last one may have none."""
    ends = draw(st.lists(st.sampled_from(LINE_ENDS), min_size=len(lines), max_size=len(lines)))
    ends[-1] = draw(st.sampled_from(LINE_ENDS + [""]))
    return "".join(line + end for line, end in zip(lines, ends))


@st.composite
def touchpoint_line(draw):
    start, code, end = draw(st.sampled_from(TOUCHPOINTS))
    prefix = draw(st.sampled_from(["", "\f"]))
    comment = draw(st.sampled_from(["", "  # page\fbreak \u2028"]))
    return prefix + start + code + end + comment


def flat(units):
    return [line for unit in units for line in unit]


@st.composite
def python_cell(draw):
    units = draw(st.lists(st.sampled_from(PLAIN_UNITS + MAGIC_UNITS), min_size=1, max_size=4))
    head = draw(st.sampled_from([[], [], ["%%time"]]))
    return draw(joined(head + flat(units)))


@st.composite
def shell_cell(draw):
    body = draw(st.lists(st.sampled_from(["nvidia-smi", "echo hi", "#@hpu-port cell", "ls\fx"]), min_size=1, max_size=3))
    return draw(joined(["%%bash"] + body))


@st.composite
def touchpoint_cell(draw):
    lines = ["import torch"] + draw(st.lists(st.sampled_from(flat(PLAIN_UNITS[:4])), max_size=2))
    return draw(joined(lines + [draw(touchpoint_line())]))


def piece_splitters():
    """How writers cut a source into a list: Jupyter at \\n, nbformat with
    str.splitlines (at form feeds and U+2028 too), or at any line break."""
    return st.sampled_from([
        lambda text: re.findall(r"[^\n]*\n|[^\n]+\Z", text),
        lambda text: text.splitlines(keepends=True),
        lines_of,
    ])


@st.composite
def notebook_text(draw):
    """(the file's text, the JSON text around the cells' sources, the cells'
    kinds and sources, the JSON text of each source)."""
    sources = draw(st.lists(st.one_of(python_cell(), shell_cell(), st.just("!nvidia-smi")), max_size=4))
    sources.insert(draw(st.integers(0, len(sources))), draw(touchpoint_cell()))
    cells = [("code", source) for source in sources]
    cells.insert(draw(st.integers(0, len(cells))), ("markdown", "# Uses `cuda`\r\nand \u00e9\f"))
    indent = draw(st.sampled_from([None, 1, 2, 4]))
    rendered = [draw(source_json(source, indent)) for _, source in cells]
    data = {
        "cells": [_cell(kind, f"@source{number}@") for number, (kind, _) in enumerate(cells)],
        "metadata": {"kernelspec": {"display_name": "Python 3 \u00e9", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    dumped = json.dumps(data, indent=indent, sort_keys=draw(st.booleans()), ensure_ascii=draw(st.booleans()))
    around = re.split(r'"@source\d+@"', dumped + draw(st.sampled_from(["", "\n"])))
    text = around[0] + "".join(value + after for value, after in zip(rendered, around[1:]))
    assert [_joined(c["source"]) for c in json.loads(text)["cells"]] == [source for _, source in cells]
    return text, around, cells, rendered


def _joined(source):
    return source if isinstance(source, str) else "".join(source)


def _cell(kind, source):
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=1, outputs=[{"name": "stdout", "output_type": "stream", "text": ["cuda\n"]}])
    return cell


@st.composite
def source_json(draw, source, indent):
    """A source's JSON text: a string or a list, each cell with its own escaping."""
    ensure_ascii = draw(st.booleans())
    if draw(st.booleans()):
        return json.dumps(source, ensure_ascii=ensure_ascii)
    pieces = draw(piece_splitters())(source)
    text = json.dumps(pieces, indent=indent, ensure_ascii=ensure_ascii)
    return text if indent is None else text.replace("\n", "\n" + " " * 3 * indent)


def source_texts(around, output):
    """The JSON text of each cell's source in ``output``; None unless
    everything around them is what it was."""
    match = re.fullmatch("(.*?)".join(map(re.escape, around)), output, re.DOTALL)
    return list(match.groups()) if match else None


def touched(line, words=TOUCH_WORDS):
    text = line.decode("utf-8") if isinstance(line, bytes) else line
    return any(word in text for word in words)


def assert_untouched_lines_kept(old, new):
    """Every line of ``old`` no rule acts on is in ``new``, in order, with its
    bytes and line end; the other lines of ``new`` are changed or added ones."""
    new_lines = lines_of(new)
    position = 0
    for line in lines_of(old):
        if touched(line):
            continue
        while position < len(new_lines) and new_lines[position] != line:
            extra = new_lines[position]
            assert touched(extra, TOUCH_WORDS + NEW_WORDS) or not extra.strip(), (line, extra)
            position += 1
        assert position < len(new_lines), f"lost or changed: {line!r}"
        position += 1


@SETTINGS
@given(notebook_text())
@example(
    example=(
        '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Uses `cuda`\\r\\n", "and é\\f"]}, {"cell_type": "code", "metadata": {}, "source": "import torch\\r\\n\\n\\rx = torch.randn(2).cuda()\\r", "execution_count": 1, "outputs": [{"name": "stdout", "output_type": "stream", "text": ["cuda\\n"]}]}], "metadata": {"kernelspec": {"display_name": "Python 3 é", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}',
        [
            '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ',
            '}, {"cell_type": "code", "metadata": {}, "source": ',
            ', "execution_count": 1, "outputs": [{"name": "stdout", "output_type": "stream", "text": ["cuda\\n"]}]}], "metadata": {"kernelspec": {"display_name": "Python 3 é", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}',
        ],
        [
            ("markdown", "# Uses `cuda`\r\nand é\x0c"),
            ("code", "import torch\r\n\n\rx = torch.randn(2).cuda()\r"),
        ],
        [
            '["# Uses `cuda`\\r\\n", "and é\\f"]',
            '"import torch\\r\\n\\n\\rx = torch.randn(2).cuda()\\r"',
        ],
    )
).via("discovered failure")
@example(
    example=(
        '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Uses `cuda`\\r\\n", "and é\\f"]}, {"cell_type": "code", "metadata": {}, "source": "import torch\\r\\n\\na = 1\\rx = torch.randn(2).cuda()\\r", "execution_count": 1, "outputs": [{"name": "stdout", "output_type": "stream", "text": ["cuda\\n"]}]}], "metadata": {"kernelspec": {"display_name": "Python 3 é", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}',
        [
            '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ',
            '}, {"cell_type": "code", "metadata": {}, "source": ',
            ', "execution_count": 1, "outputs": [{"name": "stdout", "output_type": "stream", "text": ["cuda\\n"]}]}], "metadata": {"kernelspec": {"display_name": "Python 3 é", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}',
        ],
        [
            ("markdown", "# Uses `cuda`\r\nand é\x0c"),
            ("code", "import torch\r\n\na = 1\rx = torch.randn(2).cuda()\r"),
        ],
        [
            '["# Uses `cuda`\\r\\n", "and é\\f"]',
            '"import torch\\r\\n\\na = 1\\rx = torch.randn(2).cuda()\\r"',
        ],
    )
).via("discovered failure")
def test_a_notebook_rewrite_changes_only_the_cells_rules_change(example):
    text, around, cells, rendered = example
    result = port_bytes("random.ipynb", text.encode("utf-8"), RULES, True)
    assert result.error is None, result.error
    output = result.new_source.decode("utf-8") if result.new_source is not None else text
    new_cells = json.loads(output)["cells"]
    values = source_texts(around, output)
    assert values is not None, "bytes outside the cells' sources changed"
    for (kind, old), old_json, new_json, new_cell in zip(cells, rendered, values, new_cells):
        if new_json == old_json:
            continue
        new = _joined(new_cell["source"])
        assert kind == "code" and new != old, "a cell rewritten without a change"
        assert touched(old) or touched(new, NEW_WORDS), (old, new)
        assert_untouched_lines_kept(old, new)
    again = port_bytes("random.ipynb", output.encode("utf-8"), RULES, True)
    assert again.error is None and again.new_source is None


@st.composite
def python_file(draw):
    units = draw(st.lists(st.sampled_from(PLAIN_UNITS), max_size=8))
    units.insert(draw(st.integers(0, len(units))), [draw(touchpoint_line())])
    return draw(joined(flat(units))).encode("utf-8")


def compiles(source):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "random.py", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def assert_python_rewrite_keeps_bytes(source):
    result = port_source("random.py", source, RULES)
    assert result.error is None, result.error
    output = result.new_source
    assert output is not None and compiles(output)
    assert_untouched_lines_kept(source, output)
    # The changed line keeps what the rule did not change: a leading form
    # feed, a comment with one, its own line end.
    old_line = next(line for line in lines_of(source) if b"cuda" in line)
    start, end = re.match(rb"(.*?=)(?:.*cuda\S*)(.*)", old_line, re.DOTALL).groups()
    assert any(line.startswith(start) and line.endswith(end) and b"hpu" in line for line in lines_of(output)), (old_line, output)
    assert port_source("random.py", output, RULES).new_source is None


@SETTINGS
@given(python_file())
def test_a_python_rewrite_keeps_every_byte_outside_the_changed_code(source):
    assume(compiles(source))
    assert_python_rewrite_keeps_bytes(source)


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@settings(SETTINGS, max_examples=100)
@given(python_programs(), st.data())
def test_random_programs_keep_their_bytes_around_a_changed_line(program, data):
    lines = [line for line, _ in re.findall(r"([^\n]*)(\n|\Z)", program.rstrip("\n"))]
    text = data.draw(joined(lines + [data.draw(touchpoint_line())]))
    source = text.encode("utf-8")
    assume(RULES.for_source(program.encode("utf-8")) is None and compiles(source))
    assert_python_rewrite_keeps_bytes(source)
