"""TOML configs: read with their spans, edited in place, refused with one line when not TOML."""

import pytest

from hpu_port._compat import toml
from hpu_port.engine import port_bytes
from hpu_port.filetypes import detect
from hpu_port.formats import FormatError, parse
from hpu_port.model import Options
from hpu_port.rules import load_rules
from hpu_port.settings import RuleSet

RULES = load_rules()

JOB = '''# a job config
[job]
description = """Llama "8B"
pretraining"""   # several lines

[training]
mixed_precision_param = 'float16'
dist_backend = "nccl"
start = 1979-05-27 07:32:00Z
devices = [ "cuda",  # the first
  'cpu', { device = "cuda:0" } ,
]
a.b."c d" = true

[[runs]]
device = "cuda"
[runs.env]
X = 1
[[runs]]
device = "cpu"
'''


def ruleset(**options):
    return RuleSet([r for r in RULES if r.code.startswith("HPU8")], Options(**options))


def test_toml_files_are_configs_and_pyproject_variants_are_dependency_lists():
    assert detect("train_configs/llama3_8b.toml") == "toml"
    assert detect("requirements/pyproject-flashattention.toml") == "pyproject"
    assert detect("pyproject.toml") == "pyproject"
    assert detect("requirements/base.txt") == "requirements"
    assert detect("requirement.txt") == "requirements"
    assert detect("gpu_requirement.txt") == "requirements"
    assert detect("requirement_notes.md") is None
    assert detect("docs/notes.txt") is None


def test_every_value_has_its_keys_its_meaning_and_its_exact_span():
    document = parse("toml", JOB)
    decoded = toml().loads(JOB)
    scalars = {entry.path: entry for entry in document.entries() if entry.kind == "scalar"}
    for path, entry in scalars.items():
        expected = decoded
        for part in path:
            expected = expected[part]
        assert entry.raw == expected, path
        source = JOB[entry.span.start:entry.span.end]
        assert toml().loads("v = " + source)["v"] == expected  # the span is the value's whole source
    assert scalars[("training", "devices", 2, "device")].value.value == "cuda:0"
    assert scalars[("runs", 0, "env", "X")].raw == 1 and scalars[("runs", 1, "device")].value.value == "cpu"
    assert scalars[("training", "a", "b", "c d")].key.value == "c d"
    comments = [JOB[span.start:span.end] for span in document.comment_spans()]
    assert comments == ["# a job config", "# several lines", "# the first"]


def test_values_are_rewritten_in_their_quotes_and_every_other_byte_stays():
    source = JOB.replace("\n", "\r\n").encode()
    result = port_bytes("job.toml", source, ruleset(fp16_to_bf16=True), True)
    expected = (
        source.replace(b"'float16'", b"'bfloat16'").replace(b'"nccl"', b'"hccl"')
        .replace(b'device = "cuda"', b'device = "hpu"').replace(b'"cuda:0"', b'"hpu"')
    )
    assert result.new_source == expected
    assert port_bytes("job.toml", result.new_source, ruleset(fp16_to_bf16=True), True).new_source is None


def test_a_suppression_comment_keeps_a_line():
    source = b'[comm]\ndist_backend = "nccl"  # hpu-port: ignore[HPU825]\nbackend = "nccl"\n'
    result = port_bytes("job.toml", source, ruleset(), True)
    assert result.new_source == source.replace(b'backend = "nccl"\n', b'backend = "hccl"\n')


@pytest.mark.parametrize("text", ['a = "unterminated\n', "[table\n", "a = 1\na = 2\n", "a = [1,,]\n"])
def test_what_the_toml_reader_rejects_is_one_line_and_nothing_is_written(text):
    with pytest.raises(FormatError):
        parse("toml", text)
    result = port_bytes("job.toml", ('dist_backend = "nccl"\n' + text).encode(), ruleset(), True)
    assert result.error.startswith("cannot parse as TOML: line ") and "\n" not in result.error
    assert result.new_source is None


def test_arrays_of_tables_are_counted_under_the_item_of_their_parent():
    text = '[[runs]]\n[[runs.stages]]\nx = 1\n[[runs]]\n[[runs.stages]]\ndevice = "cuda"\n[[t]]\n[[t.u]]\n[[t]]\n[t.u.v]\nq = 1\n'
    paths = [entry.path for entry in parse("toml", text).entries() if entry.kind == "scalar"]
    assert paths == [("runs", 0, "stages", 0, "x"), ("runs", 1, "stages", 0, "device"), ("t", 1, "u", "v", "q")]
