"""Byte fidelity of every file type that is not Python: random valid documents
of each format, with CUDA touchpoints the rules act on, come back with only the
touchpoints' known replacements made.

Each generated document is a list of ``Piece``s: filler that no rule may touch
(comments holding the tool's own marker texts, form feeds, U+2028/U+2029,
tabs, CUDA words where they are data) and touchpoints with the exact text a
rule writes over them. Per format, three properties:

1. the output is the input with each touchpoint's replacement made and
   nothing else (every byte outside the touchpoints identical; a touchpoint
   under a suppression comment stays as it was), and every touchpoint is
   reported on its own line;
2. the output parses with the format's own parser (bash -n, PyYAML, json,
   tomllib, configparser, packaging); Dockerfiles, CMake and CUDA sources have
   no parser here: for Dockerfiles the `RUN` scripts go through bash -n, and
   no rule writes CMake or CUDA sources, so their output is the input;
3. a second run changes nothing.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
import subprocess
from dataclasses import dataclass, replace
from typing import Callable, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpu_port.engine import port_bytes
from tests.conftest import make_ruleset

RULES = make_ruleset(["ALL"], unsafe_fixes=True, fp16_to_bf16=True)
# HPU_PORT_FIDELITY_EXAMPLES=2000 searches longer.
SETTINGS = settings(max_examples=int(os.environ.get("HPU_PORT_FIDELITY_EXAMPLES", "100")), deadline=None,
                    suppress_health_check=list(HealthCheck))
BOM = codecs.BOM_UTF8


# -- documents as pieces ---------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """Text of a generated document. ``after``: what a rule writes over it
    (None: no rule may change it); ``code``: the rule that must report it."""

    before: str
    after: Optional[str] = None
    code: str = ""
    quiet: bool = False  # under a suppression comment: ``code`` must not report it

    @property
    def expected(self) -> str:
        return self.before if self.after is None else self.after


def filler(text: str) -> Piece:
    return Piece(text)


def touch(before: str, after: Optional[str], code: str) -> Piece:
    return Piece(before, after, code)


def flatten(parts) -> list[Piece]:
    """Pieces from nested lists of pieces and plain strings (filler)."""
    found = []
    for part in parts:
        if isinstance(part, Piece):
            found.append(part)
        elif isinstance(part, str):
            if part:
                found.append(Piece(part))
        else:
            found += flatten(part)
    return found


def silenced(pieces: list[Piece]) -> list[Piece]:
    """The pieces of a line under a suppression comment: nothing changes,
    nothing is reported."""
    return [Piece(p.before, None, p.code, quiet=bool(p.code)) for p in pieces]


LF = re.compile("\n")
CR_LF = re.compile("\r\n|[\r\n]")  # universal newlines


def _line_of(text: str, offset: int, line_break: re.Pattern) -> int:
    return len(line_break.findall(text, 0, offset)) + 1


def _differences(want: bytes, got: bytes) -> str:
    matcher = difflib.SequenceMatcher(None, want, got, autojunk=False)
    return "; ".join(
        f"{tag} expected[{i1}:{i2}]={want[i1:i2]!r} got[{j1}:{j2}]={got[j1:j2]!r}"
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )


def check(path: str, parts, bom: bool = False, parses: Optional[Callable[[bytes], None]] = None,
          line_break: re.Pattern = LF):
    """Port the document; assert the three properties (lines are counted as
    the format counts them: ``line_break``). Returns the result."""
    pieces = flatten(parts)
    text = "".join(p.before for p in pieces)
    head = BOM if bom else b""
    source = head + text.encode("utf-8")
    expected = head + "".join(p.expected for p in pieces).encode("utf-8")
    if parses is not None:
        parses(source)  # the generator makes valid documents
    result = port_bytes(path, source, RULES, True)
    assert result.error is None, result.error
    output = result.new_source if result.new_source is not None else source
    # 1. only the touchpoints changed, each to its known replacement
    assert output == expected, _differences(expected, output)
    reported = {(f.code, f.line) for f in result.findings}
    offset = 0
    for piece in pieces:
        if piece.code:
            place = (piece.code, _line_of(text, offset, line_break))
            assert (place not in reported) if piece.quiet else (place in reported), (piece, sorted(reported))
        offset += len(piece.before)
    # 2. the output parses
    if parses is not None:
        parses(output)
    # 3. a second run changes nothing
    again = port_bytes(path, output, RULES, True)
    assert again.error is None, again.error
    assert again.new_source is None, _differences(output, again.new_source)
    return result


# -- text ------------------------------------------------------------------------

# The tool's own marker texts, with codes of rules that never read these files.
MARKERS = [
    "hpu-port: ignore[HPU110]",
    "hpu-port: file-ignore[HPU2]",
    "hpu-port:",
    "hpu-port: ignore[hpu1]",
    "noqa",
    "noqa: E501",
    "type: ignore",
]
# Marker texts that would switch every rule off, were they taken for comments:
# only where they are data (strings, quoted scalars, here-documents).
LIVE_MARKERS = ["# hpu-port: file-ignore", "# hpu-port: ignore", "#hpu-port:ignore", "// hpu-port: file-ignore"]
CUDA_WORDS = [
    "nvidia-smi",
    "CUDA_VISIBLE_DEVICES=0",
    "--fp16",
    "nccl",
    "cuda",
    "accelerator: gpu",
    "torch.cuda.is_available()",
    "nvidia/cuda:12.1.0-base",
    "flash-attn",
    "enable_language(CUDA)",
]
DATA_WORDS = MARKERS + LIVE_MARKERS + CUDA_WORDS
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789é漢🚀"
PUNCTUATION = " .,:;!?-_=+*/()[]{}<>@%^&|~"
SEPARATORS = "\f\u2028\u2029"


def phrase(alphabet: str, words=(), max_parts: int = 4):
    """Text from ``alphabet`` mixed with whole ``words``."""
    part = st.text(alphabet=alphabet, max_size=8)
    if words:
        part = st.one_of(part, st.sampled_from(list(words)))
    return st.lists(part, max_size=max_parts).map(" ".join)


def comment_text(extra: str = SEPARATORS):
    return phrase(LETTERS + PUNCTUATION + "\t#'\"" + extra, MARKERS + CUDA_WORDS)


def suppression(code: str):
    """A comment body that switches ``code`` off (prefixes and case vary)."""
    return st.sampled_from(["hpu-port: ignore", f"hpu-port: ignore[{code}]", f"hpu-port: ignore[{code[:4]}]",
                            f"hpu-port: ignore[HPU110,{code.lower()}]", f"hpu-port:ignore[ {code} ]"])


@st.composite
def commented(draw, pieces: list[Piece], extra: str = SEPARATORS, gaps=(" ", "  ", "\t")):
    """A touchpoint line, maybe followed by a `#` comment: one that suppresses
    it (nothing then changes) or one that does not."""
    pieces = flatten(pieces)
    code = ",".join(dict.fromkeys(p.code for p in pieces if p.code))  # every code the line gets
    choice = draw(st.sampled_from(["none", "none", "other", "suppress"]))
    if choice == "none" or not code:
        return pieces
    gap = draw(st.sampled_from(gaps))
    if choice == "other":
        return pieces + [filler(gap + "# " + draw(comment_text(extra)))]
    return silenced(pieces) + [filler(gap + "# " + draw(suppression(code)))]


@st.composite
def ended(draw, lines: list, endings) -> list:
    """The lines, each ended by what ``endings`` draws; the last one maybe by nothing."""
    parts = []
    for line in lines:
        parts += [line, draw(endings)]
    if draw(st.booleans()):
        parts[-1] = ""  # no final newline
    return parts


# -- shell scripts ----------------------------------------------------------------


def bash_parses(data: bytes) -> None:
    if data.startswith(BOM):
        data = data[len(BOM):]
    done = subprocess.run(["bash", "-n"], input=data, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")


SHELL_NAMES = ["OUT", "LOG_DIR", "SEED", "MODEL", "HL_LOGS"]
SHELL_VALUE = st.text(alphabet=LETTERS + "._-/:,", min_size=1, max_size=10)


def shell_touchpoints():
    """(pieces of one command line) that a rule rewrites or reports."""
    return st.one_of(
        st.just([touch("nvidia-smi", "hl-smi", "HPU805")]),
        st.just([touch("nvidia-smi", "hl-smi", "HPU805"), " -L"]),
        st.just(["/usr/bin/", touch("nvidia-smi", "hl-smi", "HPU805")]),
        st.sampled_from(["0", "0,1", "3,5,7", "all"]).map(
            lambda v: ["export ", touch("CUDA_VISIBLE_DEVICES", "HABANA_VISIBLE_MODULES", "HPU801"), "=" + v]),
        st.just([touch("NVIDIA_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES", "HPU801"), "=all python train.py"]),
        st.just(["export ", touch("CUDA_VISIBLE_DEVICES", "HABANA_VISIBLE_MODULES", "HPU801"), '="0,1"']),
        st.just(["env ", touch("CUDA_VISIBLE_DEVICES", "HABANA_VISIBLE_MODULES", "HPU801"), "=2 python t.py"]),
        st.just(["docker run -e ", touch("NVIDIA_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES", "HPU801"), "=all img"]),
        st.just(['echo "é 漢 🚀" && ', touch("nvidia-smi", "hl-smi", "HPU805")]),
        st.just(["{ ", touch("nvidia-smi", "hl-smi", "HPU805"), "; }; :"]),  # `}` before a CR is no keyword
        st.just(["( cd /tmp; ", touch("nvidia-smi", "hl-smi", "HPU805"), " ); :"]),
        st.just([touch("", "PT_HPU_LAZY_MODE=1 ", "HPU816"), "deepspeed run_clm.py \\\n    --output_dir out \\\n    ", touch("--fp16", "--bf16", "HPU807")]),
        st.just(["ARGS=(--output_dir out ", touch("--fp16", "--bf16", "HPU807"), ")"]),
        st.just([touch("", "PT_HPU_LAZY_MODE=1 ", "HPU816"), "deepspeed run_clm.py --output_dir out ", touch("--fp16", "--bf16", "HPU807"), " --deepspeed x.json"]),
        st.just(["python run.py --do_train ", touch("--fp16_full_eval", "--bf16_full_eval", "HPU807")]),
        st.just([touch("", "PT_HPU_LAZY_MODE=1 ", "HPU816"), "accelerate launch ", touch("--mixed_precision", None, "HPU808"), " ", touch("fp16", "bf16", ""),
                 " train.py"]),
        st.just([touch("", "PT_HPU_LAZY_MODE=1 ", "HPU816"), "accelerate launch ", touch("--mixed-precision=fp16", "--mixed-precision=bf16", "HPU808"), " t.py"]),
        st.just(["python train.py ", touch("--device", "--device", "HPU817"), " ", touch("cuda", "hpu", ""), " ",
                 touch("--ddp_backend=nccl", "--ddp_backend=hccl", "HPU817")]),
        # reported only
        st.just([touch("nvidia-smi", None, "HPU805"), " --query-gpu=name --format=csv"]),
        st.just(["export ", touch("NCCL_DEBUG", None, "HPU802"), "=INFO"]),
        st.just([touch("nvcc", None, "HPU806"), " -O3 -c kernel.cu"]),
        st.just(["#SBATCH ", touch("--gres=gpu:8", None, "HPU809")]),
        st.just(["if command -v nvidia-smi; then ", touch("nvidia-smi", None, "HPU805"), "; fi; :"]),
        st.just([touch("", "PT_HPU_LAZY_MODE=1 ", "HPU816"), "torchrun ", touch("--nproc_per_node", None, "HPU815"), " 8 train.py"]),
    )


@st.composite
def shell_filler_line(draw):
    kind = draw(st.sampled_from(["comment", "single", "double", "assign", "export", "blank", "capture", "pipe",
                                 "call"]))
    if kind == "comment":
        return ["#" + draw(comment_text())]
    if kind == "single":  # CUDA words in a single-quoted string are data
        return ["echo '" + draw(phrase(LETTERS + PUNCTUATION + '"$\t' + SEPARATORS, DATA_WORDS)) + "'"]
    if kind == "double":
        words = MARKERS + LIVE_MARKERS + ["nvidia-smi", "--fp16"]
        return ['echo "' + draw(phrase(LETTERS + PUNCTUATION + "'\t" + SEPARATORS, words)) + '"']
    if kind == "assign":
        return [draw(st.sampled_from(SHELL_NAMES)) + "=" + draw(SHELL_VALUE)]
    if kind == "export":
        return ["export " + draw(st.sampled_from(SHELL_NAMES)) + "=" + draw(SHELL_VALUE)]
    if kind == "blank":
        return [draw(st.sampled_from(["", " ", "\t"]))]
    if kind == "capture":  # output read: reported, never renamed
        return ["N=$(", touch("nvidia-smi", None, "HPU805"), " -L | wc -l)"]
    if kind == "pipe":
        return [touch("nvidia-smi", None, "HPU805"), " | grep MiB"]
    return ["cd /tmp && ls -la  # " + draw(comment_text())]


@st.composite
def shell_line(draw):
    """One line's pieces, without indentation and line ending."""
    if draw(st.booleans()):
        return draw(shell_filler_line())
    return draw(commented(flatten(draw(shell_touchpoints()))))


@st.composite
def shell_block(draw, depth: int = 0):
    """Lines as (indent-free pieces, how it ends): True, a keyword line, ends
    in LF; None: a here-document line, never indented, ends in LF."""
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        form = draw(st.sampled_from(["line", "line", "line", "if", "for", "function", "heredoc", "suppressed"]))
        if form == "line" or (depth >= 2 and form in ("if", "for", "function")):
            lines.append((draw(shell_line()), False))
        elif form == "suppressed":  # a directive alone on its line covers the next
            pieces = flatten(draw(shell_touchpoints()))
            code = ",".join(dict.fromkeys(p.code for p in pieces if p.code))
            lines.append((["# " + draw(suppression(code))], False))
            lines.append((silenced(pieces), False))
        elif form == "heredoc":  # the body is data
            body = draw(st.lists(st.one_of(st.sampled_from(DATA_WORDS + ["export CUDA_VISIBLE_DEVICES=1"]),
                                           phrase(LETTERS + " \t#$'\"" + SEPARATORS)), max_size=3))
            lines.append((["cat > notes.txt <<'EOF'"], True))
            lines += [([line], None) for line in body if line.strip() != "EOF"]
            lines.append((["EOF"], None))
        else:
            head, tail = {"if": ('if [ -n "$HOME" ]; then', "fi"), "for": ("for i in 1 2; do", "done"),
                          "function": ("setup() {", "}")}[form]
            indent = draw(st.sampled_from(["  ", "    ", "\t"]))
            inner = draw(shell_block(depth + 1)) + [([":"], False)]  # a body is never empty
            lines.append(([head], True))
            lines += [([indent] + pieces if keyword is not None else pieces, keyword) for pieces, keyword in inner]
            lines.append(([tail], True))
    return lines


@st.composite
def shell_script(draw):
    lines = draw(shell_block())
    if draw(st.booleans()):
        lines.insert(0, (["#!/bin/bash"], True))
    parts = []
    for pieces, keyword in lines:
        # bash reads a CR as part of a word: CRLF only where that changes nothing
        ending = "\n" if keyword is not False else draw(st.sampled_from(["\n", "\n", "\r\n"]))
        parts += [pieces, ending]
    if draw(st.booleans()):
        parts[-1] = ""  # no final newline
    pieces = flatten(parts)
    if any("command -v nvidia-smi" in p.before for p in pieces):
        # a script that looks for the program keeps every use of it
        pieces = [replace(p, after=None) if p.code == "HPU805" else p for p in pieces]
    return pieces


@SETTINGS
@given(shell_script(), st.booleans())
def test_shell_scripts_keep_every_byte_but_the_fixes(parts, bom):
    check("run.sh", parts, bom, bash_parses)


# -- YAML --------------------------------------------------------------------------


def yaml_parses(data: bytes) -> None:
    import yaml

    list(yaml.compose_all(data, Loader=yaml.SafeLoader))


# YAML allows CR, LF and CRLF line breaks, tabs in comments; not form feeds.
YAML_ENDINGS = st.sampled_from(["\n", "\n", "\r\n", "\r"])
YAML_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # PyYAML's line breaks
YAML_GAPS = (" ", "   ")  # PyYAML takes no tab between a plain scalar and its comment
YAML_KEYS = ["name", "seed", "epochs", "data", "notes", "tags", "output"]
YAML_PLAIN = st.text(alphabet=LETTERS + "._/-", min_size=1, max_size=10).filter(
    lambda s: s[0] not in "-" and s.lower() not in ("y", "n", "yes", "no", "on", "off", "true", "false", "null"))


def yaml_comment():
    # PyYAML ends a comment at U+2028, U+2029 and NEL too: one may follow only as another comment
    return phrase(LETTERS + PUNCTUATION + "\t#'\"", MARKERS + CUDA_WORDS + ["\u2028#", "\u2029 #", "\x85#"])


@st.composite
def yaml_scalar(draw):
    """A filler scalar: plain, single-quoted or double-quoted (CUDA words and
    marker texts inside quotes are data)."""
    style = draw(st.sampled_from(["plain", "single", "double", "number"]))
    if style == "plain":
        return draw(YAML_PLAIN)
    if style == "number":
        return str(draw(st.integers(-5, 100)))
    text = draw(phrase(LETTERS + PUNCTUATION + "\t#" + ("\"" if style == "single" else "'"),
                       DATA_WORDS + ["x\u2028y", "a\u2029b"]))  # PyYAML's line breaks, inside the quotes
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    escape = draw(st.sampled_from(["", "\\t", "\\u2028", "\\\\", '\\"', "\\x41"]))
    return '"' + text + escape + '"'


def yaml_value_touchpoints():
    """(key, value pieces) a config rule rewrites or reports."""
    def quoted(key, value, new, code):
        return st.sampled_from(["", "'", '"']).map(
            lambda q: (key, [touch(q + value + q, q + new + q if new else None, code)]))

    return st.one_of(
        quoted("accelerator", "gpu", "hpu", "HPU820"),
        quoted("accelerator", "cuda", "hpu", "HPU820"),
        quoted("device", "cuda", "hpu", "HPU821"),
        st.sampled_from(["'", '"']).map(lambda q: ("device", [touch(q + "cuda:0" + q, q + "hpu" + q, "HPU821")])),
        quoted("precision", "16-mixed", "bf16-mixed", "HPU822"),
        st.just(("precision", [touch("16", "bf16-mixed", "HPU822")])),
        quoted("mixed_precision", "fp16", "bf16", "HPU822"),
        quoted("distributed_type", "MULTI_GPU", "MULTI_HPU", "HPU823"),
        quoted("dist_backend", "nccl", "hccl", "HPU825"),
        # reported only
        quoted("device", "gpu", None, "HPU821"),
        st.just(("accelerator", [touch("&acc gpu", None, "HPU820")])),
        st.just(("image", [touch("nvidia/cuda:12.1.0-devel-ubuntu22.04", None, "HPU840")])),
        st.just(("runtime", [touch("nvidia", None, "HPU824")])),
    )


@st.composite
def yaml_entry_line(draw, indent: str):
    """A `key: value` line of pieces (no line ending)."""
    if draw(st.booleans()):
        key, value = draw(yaml_value_touchpoints())
        pieces = [indent + key + ":" + draw(st.sampled_from([" ", "  "]))] + value
        return draw(commented(flatten(pieces), extra="", gaps=YAML_GAPS))
    line = indent + draw(st.sampled_from(YAML_KEYS)) + ": " + draw(yaml_scalar())
    if draw(st.booleans()):
        line += draw(st.sampled_from(YAML_GAPS)) + "#" + draw(yaml_comment())
    return [line]


@st.composite
def yaml_mapping(draw, indent: str = "", depth: int = 0):
    """Lines (lists of pieces) of a block mapping at ``indent``."""
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        form = draw(st.sampled_from(["entry", "entry", "entry", "comment", "blank", "map", "seq", "flow", "block",
                                     "env", "env-list", "steps", "suppressed"]))
        if depth >= 2 and form in ("map", "seq", "env", "env-list", "steps"):
            form = "entry"
        key = draw(st.sampled_from(YAML_KEYS))
        if form == "entry":
            lines.append(draw(yaml_entry_line(indent)))
        elif form == "comment":
            lines.append([draw(st.sampled_from(["", indent])) + "#" + draw(yaml_comment())])
        elif form == "blank":
            lines.append([draw(st.sampled_from(["", "  "]))])
        elif form == "map":
            lines.append([indent + key + ":"])
            lines += draw(yaml_mapping(indent + draw(st.sampled_from(["  ", "    "])), depth + 1))
        elif form == "seq":
            lines.append([indent + key + ":"])
            for _ in range(draw(st.integers(1, 3))):
                lines.append([indent + "  - " + draw(yaml_scalar())])
        elif form == "flow":
            first, second = draw(yaml_scalar()), draw(yaml_scalar())
            form = draw(st.sampled_from(["list", "map", "quoted-key"]))
            if form == "list":
                lines.append([indent + key + ": [" + first + ", " + second + "]"])
            elif form == "map":
                lines.append([f"{indent}{key}: {{accelerator: ", touch("gpu", "hpu", "HPU820"), f", devices: {first}}}"])
            else:  # a key holding a marker text is no comment
                marker = draw(st.sampled_from(MARKERS + LIVE_MARKERS)).replace("'", "''")
                lines.append([f"{indent}{key}: {{'a #{marker}': 1, device: ", touch("cuda", "hpu", "HPU821"), "}"])
        elif form == "block":
            style = draw(st.sampled_from(["|", ">", "|-", ">+"]))
            lines.append([indent + key + ": " + style])
            body = draw(st.lists(phrase(LETTERS + PUNCTUATION + "\t#'\"", DATA_WORDS), min_size=1, max_size=3))
            lines += [[indent + "  x" + line] for line in body]
        elif form == "env":  # an environment map: the variable's name is renamed
            lines.append([indent + "environment:"])
            value = draw(st.sampled_from(['"0,1"', "0", "'all'", "all"]))
            name = touch("CUDA_VISIBLE_DEVICES", "HABANA_VISIBLE_MODULES", "HPU801")
            lines.append(draw(commented([indent + "  ", name, ": " + value], extra="", gaps=YAML_GAPS)))
            lines.append([indent + "  OMP_NUM_THREADS: 4"])
        elif form == "env-list":
            lines.append([indent + "env:"])
            lines.append([indent + "  - ", touch("NVIDIA_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES", "HPU801"), "=all"])
        elif form == "steps":  # a CI job's steps: their scripts are shell
            lines.append([indent + "steps:"])
            lines.append([indent + "  - name: " + draw(YAML_PLAIN)])
            lines.append([indent + "    run: ", touch("nvidia-smi", "hl-smi", "HPU805")])
            lines.append([indent + "  - run: |"])
            lines.append([indent + "      echo start"])
            lines.append([indent + "      ", touch("nvidia-smi", "hl-smi", "HPU805")])
        else:  # a directive alone on its line covers the next
            key, value = draw(yaml_value_touchpoints())
            code = next(p.code for p in value if p.code)
            lines.append([indent + "# " + draw(suppression(code))])
            lines.append(silenced(flatten([indent + key + ": "] + value)))
    return lines


@st.composite
def yaml_document(draw):
    lines = draw(yaml_mapping())
    if draw(st.booleans()):
        lines.insert(0, ["---" + draw(st.sampled_from(["", " # config"]))])
    if draw(st.booleans()):
        lines += [["---"]] + draw(yaml_mapping())
    pieces = flatten(draw(ended(lines, YAML_ENDINGS)))
    anchors = iter(range(len(pieces)))  # each anchor once in a document
    return [replace(p, before=p.before.replace("&acc", f"&a{next(anchors)}")) if "&acc" in p.before else p
            for p in pieces]


@SETTINGS
@given(yaml_document(), st.booleans())
def test_yaml_keeps_every_byte_but_the_fixes(parts, bom):
    check("config.yaml", parts, bom, yaml_parses, YAML_BREAK)


# -- JSON --------------------------------------------------------------------------


def json_parses(data: bytes) -> None:
    import json

    json.loads(data.decode("utf-8-sig"))


# JSON's whitespace is space, tab, CR and LF: any mix of line endings.
JSON_SPACE = st.lists(st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\r", "\n    "]), max_size=2).map("".join)


@st.composite
def json_string(draw):
    """A JSON string: escapes, raw U+2028/U+2029, marker texts, CUDA words."""
    import json

    text = draw(phrase(LETTERS + PUNCTUATION + "\t'#\\" + SEPARATORS, DATA_WORDS))
    return json.dumps(text, ensure_ascii=draw(st.booleans()))


@st.composite
def json_value(draw, depth: int = 0):
    """Filler pieces of a value (touchpoints inside objects too)."""
    forms = ["string", "number", "literal", "object", "array"] if depth < 3 else ["string", "number"]
    form = draw(st.sampled_from(forms))
    if form == "string":
        return [draw(json_string())]
    if form == "number":
        return [draw(st.sampled_from(["0", "-1", "16", "3.5e-4", "1E+2", "8"]))]
    if form == "literal":
        return [draw(st.sampled_from(["true", "false", "null"]))]
    if form == "array":
        items = draw(st.lists(json_value(depth + 1), max_size=3))
        return json_joined("[", items, "]", draw)
    return json_object(draw, depth + 1, draw(st.lists(json_member(depth + 1), max_size=4)))


def json_joined(opener: str, items: list, closer: str, draw) -> list:
    parts = [opener, draw(JSON_SPACE)]
    for index, item in enumerate(items):
        if index:
            parts += [draw(JSON_SPACE), ",", draw(JSON_SPACE)]
        parts.append(item)
    return parts + [draw(JSON_SPACE), closer]


def json_object(draw, depth: int, members: list) -> list:
    return json_joined("{", members, "}", draw)


JSON_KEYS = ["name", "lr", "steps", "notes", "tags", "gradient_clipping"]


@st.composite
def json_member(draw, depth: int = 0):
    import json

    if draw(st.integers(0, 3)) == 0:
        return draw(json_touchpoint())
    key = draw(st.one_of(st.sampled_from(JSON_KEYS), st.sampled_from(MARKERS)))
    return [json.dumps(key), draw(JSON_SPACE), ":", draw(JSON_SPACE), draw(json_value(depth))]


def json_touchpoint():
    def member(key, value, new, code):
        return st.just([f'"{key}"', ": ", touch(value, new, code)])

    return st.one_of(
        member("comm_backend_name", '"nccl"', '"hccl"', "HPU831"),
        member("dist_backend", '"nccl"', '"hccl"', "HPU825"),
        member("device", '"cuda"', '"hpu"', "HPU821"),
        member("device", '"cuda:0"', '"hpu"', "HPU821"),
        member("accelerator", '"gpu"', '"hpu"', "HPU820"),
        member("precision", "16", '"bf16-mixed"', "HPU822"),
        member("mixed_precision", '"fp16"', '"bf16"', "HPU822"),
        member("distributed_type", '"MULTI_GPU"', '"MULTI_HPU"', "HPU823"),
        member("device", '"gpu"', None, "HPU821"),  # reported only
        member("runtime", '"nvidia"', None, "HPU824"),
        # an escaped value is what it means: the whole string is replaced
        member("device", '"\\u0063uda"', '"hpu"', "HPU821"),
    )


# The fp16 section of a DeepSpeed config: the keys that go, and those that stay.
FP16_DROP = ["loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"]
FP16_KEEP = ["enabled", "immediate_grad_update"]


@st.composite
def fp16_section(draw):
    """`"fp16": {...}` as pieces: the key is renamed to bf16; the loss-scaling
    members go, each run of them with the commas after it (the last run of
    the section: with the commas before it), blanks and line ends included."""
    names = draw(st.lists(st.sampled_from(FP16_KEEP + FP16_DROP), unique=True, max_size=5))
    # `"enabled": "auto"` leaves fp16 to the Hugging Face trainer's flag: such a section is not changed.
    values = {"enabled": "true", "immediate_grad_update": "false"}
    gone = [name in FP16_DROP for name in names]
    comma_gone = [False] * len(names)  # the comma before each member
    index = 0
    while index < len(names):
        if not gone[index]:
            index += 1
            continue
        last = index
        while last + 1 < len(names) and gone[last + 1]:
            last += 1
        first_comma = index + 1 if last + 1 < len(names) or index == 0 else index
        for comma in range(first_comma, min(last + 2, len(names))):
            comma_gone[comma] = True
        index = last + 1
    pieces = ['"', touch("fp16", "bf16", "HPU830"), '"', draw(JSON_SPACE), ":", draw(JSON_SPACE), "{", draw(JSON_SPACE)]
    for index, name in enumerate(names):
        if index:
            comma = draw(JSON_SPACE) + "," + draw(JSON_SPACE)
            pieces.append(touch(comma, "", "") if comma_gone[index] else comma)
        member = f'"{name}"{draw(JSON_SPACE)}:{draw(JSON_SPACE)}{values.get(name, "0")}'
        pieces.append(touch(member, "", "") if gone[index] else member)
    return pieces + [draw(JSON_SPACE), "}"]


@st.composite
def json_document(draw):
    members = draw(st.lists(json_member(), max_size=6))
    if draw(st.booleans()):
        if draw(st.booleans()):  # a DeepSpeed config (its sections are at the top)
            members.insert(draw(st.integers(0, len(members))), draw(fp16_section()))
            size = ['"train_batch_size": ', draw(st.sampled_from(["8", "32"]))]
            members.insert(draw(st.integers(0, len(members))), size)
        document = json_object(draw, 0, members)
    else:  # a list of objects: config-value rules read them too
        document = json_joined("[", [json_object(draw, 1, members), draw(json_value(1))], "]", draw)
    return [draw(JSON_SPACE), document, draw(JSON_SPACE)]


@SETTINGS
@given(json_document(), st.booleans())
def test_json_keeps_every_byte_but_the_fixes(parts, bom):
    check("ds_config.json", parts, bom, json_parses)


# -- Dockerfiles -------------------------------------------------------------------


def dockerfile_parses(data: bytes) -> None:
    """No Dockerfile parser is installed: the shell of each `RUN` (continued
    lines joined, comment lines dropped, here-document bodies) must pass bash -n."""
    import json

    lines = data.decode("utf-8-sig").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index].rstrip("\r")
        index += 1
        if not re.match(r"\s*RUN\s", line, re.IGNORECASE):
            continue
        script = [re.sub(r"^\s*RUN\s+(--\S+\s+)*", "", line, flags=re.IGNORECASE)]
        while script[-1].rstrip().endswith("\\") and index < len(lines):
            script[-1] = script[-1].rstrip()[:-1]
            following = lines[index].rstrip("\r")
            index += 1
            if not following.lstrip().startswith("#"):
                script.append(following)
        command = " ".join(script)
        heredoc = re.search(r"<<-?'?(\w+)'?", command)
        if heredoc:
            body = []
            while index < len(lines) and lines[index].rstrip("\r").strip() != heredoc.group(1):
                body.append(lines[index])
                index += 1
            index += 1
            if command.strip().startswith("<<"):  # the body is the script
                command = "\n".join(body)
            else:
                command = "\n".join([command, *body, heredoc.group(1)])
        elif command.lstrip().startswith("["):
            words = json.loads(command)
            command = words[2] if words[:2] in (["bash", "-c"], ["/bin/sh", "-c"]) else ""
        bash_parses(command.encode())


DOCKER_ENDINGS = st.sampled_from(["\n", "\n", "\r\n"])


def docker_run_touchpoints():
    return st.one_of(
        st.just(["RUN ", touch("nvidia-smi", "hl-smi", "HPU805")]),
        st.just(["RUN apt-get update && ", touch("nvidia-smi", "hl-smi", "HPU805"), " -L"]),
        st.just(["RUN --mount=type=cache,target=/root/.cache ", touch("nvidia-smi", "hl-smi", "HPU805")]),
        st.just(['RUN ["bash", "-c", "', touch("nvidia-smi", "hl-smi", "HPU805"), '"]']),
        st.just(["RUN deepspeed train.py --output_dir out ", touch("--fp16", "--bf16", "HPU807")]),
        st.just(["RUN accelerate launch ", touch("--mixed_precision", None, "HPU808"), " ", touch("fp16", "bf16", ""),
                 " train.py"]),
        st.just(["RUN ", touch("nvidia-smi", None, "HPU805"), " | tee gpus.txt"]),
        st.just(["RUN ", touch("nvcc", None, "HPU806"), " -c kernel.cu"]),
    )


def docker_other_touchpoints():
    return st.one_of(
        st.just(["ENV ", touch("CUDA_VISIBLE_DEVICES", "HABANA_VISIBLE_MODULES", "HPU801"), "=0,1"]),
        st.just(["ENV A=1 ", touch("NVIDIA_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES", "HPU801"), "=all"]),
        st.just(["ENV ", touch("NVIDIA_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES", "HPU801"), " all"]),
        st.just(["FROM ", touch("nvidia/cuda:12.1.0-devel-ubuntu22.04", None, "HPU840")]),
        st.just(["ENV ", touch("NCCL_DEBUG", None, "HPU802"), "=INFO"]),
        st.just(["ARG ", touch("CUDA_VERSION", None, "HPU812"), "=12.1.0"]),
    )


@st.composite
def docker_filler(draw):
    """An instruction (as lines of pieces) no rule changes."""
    form = draw(st.sampled_from(["comment", "blank", "from", "env", "run", "cmd", "copy", "label"]))
    if form == "comment":
        return [["#" + draw(comment_text())]]
    if form == "blank":
        return [[draw(st.sampled_from(["", "  ", "\t"]))]]
    if form == "from":
        return [[draw(st.sampled_from(["FROM ubuntu:22.04", "FROM --platform=linux/amd64 python:3.11 AS build",
                                       "from vault.habana.ai/gaudi-docker/1.19.0/ubuntu22.04/habanalabs/"
                                       "pytorch-installer-2.5.1:latest"]))]]
    if form == "env":
        return [["ENV " + draw(st.sampled_from(["A=1 B=\"x y\"", "PATH=/opt/bin:$PATH", "LANG C.UTF-8"]))]]
    if form == "run":
        text = draw(phrase(LETTERS + PUNCTUATION.replace("!", "") + '"$\t' + SEPARATORS, DATA_WORDS))
        return [["RUN echo '" + text + "'" + draw(st.sampled_from(["", "  # " + draw(comment_text())]))]]
    if form == "cmd":  # not read: never changed
        return [[draw(st.sampled_from(['CMD ["nvidia-smi", "--fp16"]', "ENTRYPOINT nvidia-smi", "CMD python t.py"]))]]
    if form == "copy":
        return [["COPY --chown=1000 . /app"]]
    return [["LABEL maintainer=\"cuda # hpu-port: file-ignore\""]]  # no comment: a `#` inside a line


@st.composite
def docker_instruction(draw):
    """An instruction as lines of pieces."""
    choice = draw(st.sampled_from(["filler", "filler", "run", "other", "continued", "heredoc", "suppressed"]))
    if choice == "filler":
        return draw(docker_filler())
    if choice == "run":
        pieces = flatten(draw(docker_run_touchpoints()))
        return [pieces if pieces[0].before.startswith("RUN [") else draw(commented(pieces))]
    if choice == "other":
        return [flatten(draw(docker_other_touchpoints()))]
    if choice == "continued":  # a comment line inside a continued RUN is dropped by Docker
        indent = draw(st.sampled_from(["    ", "\t", "  "]))
        lines = [["RUN apt-get update \\"]]
        if draw(st.booleans()):
            lines.append([indent + "# " + draw(comment_text())])
        tail = draw(st.sampled_from(["", " \\"]))
        lines.append([indent + "&& ", touch("nvidia-smi", "hl-smi", "HPU805"), tail])
        if tail:
            lines.append([indent + "&& echo done"])
        return lines
    if choice == "heredoc":
        return [["RUN <<EOF"], [touch("nvidia-smi", "hl-smi", "HPU805")], ["echo '--fp16 nvidia-smi'"], ["EOF"]]
    # a comment before an instruction covers all its lines
    lines = draw(st.one_of(st.just([flatten(draw(docker_other_touchpoints()))]),
                           st.builds(lambda t: [["RUN apt-get update \\"], ["    && "] + flatten(t)[1:]],
                                     docker_run_touchpoints().filter(lambda t: t[0] == "RUN "))))
    code = next(p.code for line in lines for p in flatten(line) if p.code)
    return [["# " + draw(suppression(code))]] + [silenced(flatten(line)) for line in lines]


@st.composite
def dockerfile(draw):
    lines = []
    if draw(st.booleans()):
        lines.append([draw(st.sampled_from(["# syntax=docker/dockerfile:1", "# check=skip=JSONArgsRecommended"]))])
    lines.append([draw(st.sampled_from(["FROM ubuntu:22.04", "FROM python:3.11-slim"]))])
    for _ in range(draw(st.integers(1, 6))):
        lines += draw(docker_instruction())
    return draw(ended(lines, DOCKER_ENDINGS))


@SETTINGS
@given(dockerfile(), st.booleans())
def test_dockerfiles_keep_every_byte_but_the_fixes(parts, bom):
    check("Dockerfile", parts, bom, dockerfile_parses)


# -- requirements files ---------------------------------------------------------------
# No rule writes dependency lists, CMake or CUDA sources: their output is their
# input, and what is checked is that they are read as their own tools read them
# (every requirement reported on its line, suppression comments obeyed).

# pip splits a requirements file with str.splitlines: these end a line too.
PIP_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def requirements_parses(data: bytes) -> None:
    """Each requirement, as pip reads the file, parses with packaging."""
    from packaging.requirements import Requirement

    joined, pending = [], ""
    for line in data.decode("utf-8-sig").splitlines():
        if line.endswith("\\") and not re.match(r"\s*#", line):
            pending += line[:-1]
            continue
        joined.append(pending + line)
        pending = ""
    for line in joined + [pending]:
        line = re.sub(r"(^|\s+)#.*$", "", line).strip()
        if line and not line.startswith("-"):
            Requirement(re.split(r"\s+--", line)[0])


REQUIREMENT_TOUCHPOINTS = [
    ("flash-attn==2.5.8", "HPU850"),
    ("nvidia-cublas-cu12", "HPU850"),
    ('bitsandbytes>=0.43 ; sys_platform == "linux"', "HPU850"),
    ("torch==2.1.0", "HPU713"),
    ("deepspeed==0.14.0", "HPU851"),
]
REQUIREMENT_FILLER = ["numpy>=1.24", 'transformers==4.40.0 ; python_version >= "3.9"', "requests[socks]~=2.31",
                      "-r base.txt", "--extra-index-url https://pypi.org/simple", "-c constraints.txt", "-e ."]


def requirements_comment():
    return comment_text(extra="\t")  # no form feed nor U+2028 here: pip ends a line at them


@st.composite
def requirements_line(draw):
    """A line (or lines, continued with `\\`) of pieces, without its line ending."""
    form = draw(st.sampled_from(["filler", "comment", "blank", "touch", "touch", "index", "continued", "broken",
                                 "suppressed"]))
    if form == "filler":
        return [draw(st.sampled_from(REQUIREMENT_FILLER))]
    if form == "comment":
        return ["#" + draw(requirements_comment())]
    if form == "blank":
        return [draw(st.sampled_from(["", "  ", "\t"]))]
    requirement, code = draw(st.sampled_from(REQUIREMENT_TOUCHPOINTS))
    if form == "index":
        return ["--extra-index-url ", touch("https://download.pytorch.org/whl/cu121", None, "HPU841")]
    if form == "touch":
        return draw(commented([touch(requirement, None, code)], extra="\t"))
    if form == "continued":  # pip joins the lines: a comment at its end covers them all
        hashed = [touch(requirement, None, code), filler(" \\\n    --hash=sha256:0123abcd")]
        return draw(commented(hashed, extra="\t"))
    if form == "broken":  # a line break of pip's inside what looks like one line
        before = draw(st.sampled_from(["# note", "numpy>=1.24", ""]))
        return [before + draw(st.sampled_from(["\f", "\u2028", "\u2029", "\x0b", "\x85", "\x1c", "\r"])),
                touch(requirement, None, code)]
    return ["# " + draw(suppression(code)) + "\n", Piece(requirement, None, code, quiet=True)]


@st.composite
def requirements_file(draw):
    lines = draw(st.lists(requirements_line(), min_size=1, max_size=8))
    return draw(ended(lines, st.sampled_from(["\n", "\n", "\r\n", "\r"])))


@SETTINGS
@given(requirements_file(), st.booleans())
def test_requirements_files_are_read_as_pip_reads_them(parts, bom):
    check("requirements.txt", parts, bom, requirements_parses, PIP_BREAK)


# -- pyproject.toml and setup.cfg --------------------------------------------------------


def toml_parses(data: bytes) -> None:
    from hpu_port._compat import toml

    toml().loads(data.decode("utf-8-sig"))


def setup_cfg_parses(data: bytes) -> None:
    import configparser
    import io

    # setuptools reads the file in text mode: universal newlines
    configparser.ConfigParser().read_file(io.StringIO(data.decode("utf-8-sig"), newline=None))


def toml_comment():
    return comment_text(extra="\t\u2028\u2029")  # TOML comments take any character but controls


@st.composite
def toml_string(draw):
    """A TOML string holding marker texts and `#`: never a comment."""
    text = draw(phrase(LETTERS + PUNCTUATION + "#\t", DATA_WORDS))
    form = draw(st.sampled_from(["basic", "literal", "multi"]))
    if form == "basic":
        return '"' + text + '"'
    if form == "literal":
        return "'" + text + "'"
    return '"""\n' + text + "\n# hpu-port: ignore\n" + text + '"""'


@st.composite
def pyproject_dependency(draw):
    """A line of a dependency array, without its line ending."""
    if draw(st.booleans()):
        return ['    "' + draw(st.sampled_from(["numpy>=1.24", "requests[socks]~=2.31"])) + '",']
    requirement, code = draw(st.sampled_from(REQUIREMENT_TOUCHPOINTS))
    requirement = requirement.replace('"', "'")
    return draw(commented(['    "', touch(requirement, None, code), '",'], extra="\t"))


@st.composite
def pyproject(draw):
    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [["[project]"], ['name = "demo"'], ["description = " + draw(toml_string())]]
    if draw(st.booleans()):
        lines.insert(0, ["# " + draw(toml_comment())])
    lines.append(["dependencies = [" + draw(st.sampled_from(["", "  # " + draw(toml_comment())]))])
    for _ in range(draw(st.integers(0, 4))):
        lines.append(draw(pyproject_dependency()))
        if draw(st.booleans()):
            lines.append([draw(st.sampled_from(["", "    "])) + "#" + draw(toml_comment())])
    if draw(st.booleans()):
        requirement, code = draw(st.sampled_from(REQUIREMENT_TOUCHPOINTS))
        lines.append(["    # " + draw(suppression(code))])
        lines.append(['    "', Piece(requirement.replace('"', "'"), None, code, quiet=True), '",'])
    lines.append(["]"])
    if draw(st.booleans()):
        requirement, code = draw(st.sampled_from(REQUIREMENT_TOUCHPOINTS))
        lines += [[""], ["[project.optional-dependencies]"],
                  ['gpu = ["', touch(requirement.replace('"', "'"), None, code), '"]']]
    if draw(st.booleans()):
        lines += [[""], ["[tool.poetry.dependencies]"], ['python = "^3.10"'], [touch('torch = "==2.1.0"', None, "HPU713")]]
    return draw(ended(lines, st.just(end)))


@SETTINGS
@given(pyproject(), st.booleans())
def test_pyproject_is_read_as_toml(parts, bom):
    check("pyproject.toml", parts, bom, toml_parses)


@st.composite
def setup_cfg(draw):
    lines = [["[metadata]"], ["name = demo"], ["description = cuda " + draw(st.sampled_from(LIVE_MARKERS))]]
    lines += [[";" + draw(requirements_comment())], ["[options]"], ["install_requires ="]]
    for _ in range(draw(st.integers(1, 4))):
        form = draw(st.sampled_from(["filler", "touch", "comment", "suppressed"]))
        if form == "filler":
            lines.append(["    numpy>=1.24"])
        elif form == "comment":
            lines.append([draw(st.sampled_from(["#", ";", "    #"])) + draw(requirements_comment())])
        else:
            requirement, code = draw(st.sampled_from(REQUIREMENT_TOUCHPOINTS))
            if form == "touch":
                # setuptools drops what follows " #" (a space, not a tab)
                lines.append(draw(commented(["    ", touch(requirement, None, code)], extra="\t", gaps=(" ", "  "))))
            else:
                lines.append(["# " + draw(suppression(code))])
                lines.append(["    ", Piece(requirement, None, code, quiet=True)])
    requirement, code = draw(st.sampled_from(REQUIREMENT_TOUCHPOINTS))
    lines += [["[options.extras_require]"], ["gpu = ", touch(requirement, None, code)]]
    return draw(ended(lines, st.sampled_from(["\n", "\r\n", "\r"])))


@SETTINGS
@given(setup_cfg(), st.booleans())
def test_setup_cfg_is_read_as_setuptools_reads_it(parts, bom):
    check("setup.cfg", parts, bom, setup_cfg_parses, CR_LF)


# -- CMake and CUDA sources -----------------------------------------------------------


@st.composite
def cmake_file(draw):
    """CMake: comments (`#`, `#[[...]]`), quoted and bracket arguments that hold
    `#` and marker texts, and the places a project asks for CUDA (one finding:
    the first; the rest are not reported)."""
    end = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [["cmake_minimum_required(VERSION 3.18)"]]
    for _ in range(draw(st.integers(1, 8))):
        form = draw(st.sampled_from(["comment", "bracket-comment", "string", "bracket-argument", "escape", "touch",
                                     "touch", "set"]))
        if form == "comment":
            lines.append(["#" + draw(phrase(LETTERS + " \t:()\f\u2028", MARKERS + ["enable_language(CUDA)"]))])
        elif form == "bracket-comment":
            lines.append(["#[==[ enable_language(CUDA)" + end + "find_package(CUDA) ]] ]==]"])
        elif form == "string":
            lines.append(['message(STATUS "a ' + draw(st.sampled_from(LIVE_MARKERS)) + '")'])
        elif form == "bracket-argument":
            lines.append(['message(STATUS [[ a " ' + draw(st.sampled_from(LIVE_MARKERS)) + " ]])"])
        elif form == "escape":
            lines.append(['set(FLAGS a\\"b)  # ' + draw(st.sampled_from(MARKERS))])
        elif form == "set":
            lines.append(["set(CMAKE_CXX_STANDARD 17)"])
        else:
            text = draw(st.sampled_from(["enable_language(CUDA)", "find_package(CUDAToolkit REQUIRED)",
                                         "project(fused LANGUAGES CXX CUDA)"]))
            lines.append([touch(text, None, "HPU861")])
    pieces, seen = flatten(draw(ended(lines, st.just(end)))), False
    for index, piece in enumerate(pieces):
        if piece.code:  # only the first place is reported
            pieces[index] = replace(piece, code="") if seen else piece
            seen = True
    return pieces


@SETTINGS
@given(cmake_file(), st.booleans())
def test_cmake_files_are_read_not_written(parts, bom):
    check("CMakeLists.txt", parts, bom)


@st.composite
def cuda_source(draw):
    """A CUDA source: one finding at its top, unless a real `//` comment
    switches it off; marker texts in strings, char literals and block
    comments switch nothing off."""
    end = draw(st.sampled_from(["\n", "\r\n"]))
    quiet = False
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        form = draw(st.sampled_from(["code", "comment", "block", "string", "char", "raw", "include", "ignore"]))
        if form == "code":
            lines.append("__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; }")
        elif form == "comment":
            lines.append("// " + draw(phrase(LETTERS + PUNCTUATION + "\t\f" + "\u2028", ["cuda", "noqa"])))
        elif form == "block":
            lines.append("/* // " + draw(st.sampled_from(["hpu-port: file-ignore", "hpu-port: ignore"])) + " */")
        elif form == "string":
            lines.append('const char* s = "// ' + draw(st.sampled_from(["hpu-port: file-ignore", "x"])) + '";')
        elif form == "char":
            lines.append("char q = '\"'; const char* t = \" // hpu-port: file-ignore\";")
        elif form == "raw":
            lines.append('const char* r = R"x( // hpu-port: file-ignore )x";')
        elif form == "include":
            lines.append("#include <cuda_runtime.h>")
        else:
            quiet = True
            lines.append("// " + draw(st.sampled_from(["hpu-port: file-ignore", "hpu-port: file-ignore[HPU860]",
                                                      "hpu-port: file-ignore[hpu8]"])))
    return [Piece("", None, "HPU860", quiet=quiet)] + draw(ended(lines, st.just(end)))


@SETTINGS
@given(cuda_source(), st.booleans())
def test_cuda_sources_are_read_not_written(parts, bom):
    check("csrc/kernel.cu", parts, bom)


# -- what the properties found ---------------------------------------------------------


FOUND = [
    pytest.param(  # a comment above a command continued with `\` covers all its lines
        "run.sh", b"# hpu-port: ignore\ndeepspeed run_clm.py --output_dir out \\\n    --fp16\nnvidia-smi\n",
        b"# hpu-port: ignore\ndeepspeed run_clm.py --output_dir out \\\n    --fp16\nhl-smi\n", [("HPU805", 4)],
        id="shell-continued-command-under-a-comment"),
    pytest.param(  # ... and so does one at its end
        "run.sh", b"accelerate launch --mixed_precision fp16 \\\n    train.py  # hpu-port: ignore\n", None, [],
        id="shell-continued-command-with-a-comment"),
    pytest.param(
        "Dockerfile", b"FROM ubuntu:22.04\n# hpu-port: ignore\nRUN apt-get update \\\n    && nvidia-smi\nRUN nvidia-smi\n",
        b"FROM ubuntu:22.04\n# hpu-port: ignore\nRUN apt-get update \\\n    && nvidia-smi\nRUN hl-smi\n", [("HPU805", 5)],
        id="dockerfile-continued-instruction-under-a-comment"),
    pytest.param(  # job directives are commands, and take suppression comments
        "job.sbatch", b"#SBATCH --gres=gpu:8  # hpu-port: ignore[HPU809]\n# hpu-port: ignore\n#SBATCH --gpus-per-node=8\n",
        None, [], id="sbatch-directives-suppressed"),
    pytest.param(  # in a CI script such a line is a comment
        "ci.yml", b"steps:\n  - run: |\n      #SBATCH --gres=gpu:8\n      nvidia-smi\n",
        b"steps:\n  - run: |\n      #SBATCH --gres=gpu:8\n      hl-smi\n", [("HPU805", 4)], id="sbatch-line-in-a-ci-script"),
    pytest.param(  # a comment ends at a lone CR: the next line is its own
        "config.yaml", b"accelerator: gpu # hpu-port: ignore\rdevice: cuda\r",
        b"accelerator: gpu # hpu-port: ignore\rdevice: hpu\r", [("HPU821", 2)], id="yaml-cr-line-ends"),
    pytest.param(  # the lines of a literal block ended by CRs are found: its script is fixed in place
        "ci.yml", b"steps:\n  - run: |\r      echo start\r      nvidia-smi\r",
        b"steps:\n  - run: |\r      echo start\r      hl-smi\r", [("HPU805", 4)], id="yaml-cr-literal-block"),
    pytest.param(
        "config.yaml", b"trainer: {'a # hpu-port: ignore': 1, device: cuda}\n",
        b"trainer: {'a # hpu-port: ignore': 1, device: hpu}\n", [("HPU821", 1)], id="yaml-hash-in-a-quoted-key"),
    pytest.param(  # pip ends lines at form feeds, U+2028, lone CRs (str.splitlines)
        "requirements.txt", "# note\u2028flash-attn\n# a\fbitsandbytes\rtorch==2.1.0\n".encode(), None,
        [("HPU713", 5), ("HPU850", 2), ("HPU850", 4)], id="requirements-pip-line-breaks"),
    pytest.param(  # pip joins a line ending in `\`: a comment at the end covers it all
        "requirements.txt", b"flash-attn==2.5.8 \\\n    --hash=sha256:abc  # hpu-port: ignore\nflash-\\\nattn\n", None,
        [("HPU850", 3)], id="requirements-continued-lines"),
    pytest.param(
        "pyproject.toml",
        b'# deps\n[project]\nname = "x # hpu-port: ignore"\ndependencies = [\n  "torch>=2.1",  # hpu-port: ignore[HPU713]\n'
        b'  "flash-attn",\n]\n', None, [("HPU850", 6)], id="pyproject-comment-after-a-string"),
    pytest.param(
        "setup.cfg", b"[options]\rinstall_requires =\r    torch<2.3\r    flash-attn\r", None,
        [("HPU713", 3), ("HPU850", 4)], id="setup-cfg-cr-line-ends"),
    pytest.param(  # setuptools drops what follows ` #` in a requirement
        "setup.cfg", b"# c\n[options]\ninstall_requires =\n    torch>=2.1  # hpu-port: ignore\n    flash-attn\n", None,
        [("HPU850", 5)], id="setup-cfg-comment-after-a-requirement"),
    pytest.param(
        "CMakeLists.txt", b"cmake_minimum_required(VERSION 3.18)\nfind_package(CUDAToolkit REQUIRED)\nenable_language(CUDA)\n",
        None, [("HPU861", 2)], id="cmake-first-place-cuda-is-asked-for"),
    pytest.param(
        "CMakeLists.txt", b'message(STATUS [[ a " # hpu-port: file-ignore ]])\nenable_language(CUDA)\n', None,
        [("HPU861", 2)], id="cmake-marker-in-a-bracket-argument"),
    pytest.param(
        "kernel.cu", b'const char* s = " // hpu-port: file-ignore";\n__global__ void k() {}\n', None, [("HPU860", 1)],
        id="cuda-marker-in-a-string"),
    pytest.param(
        "kernel.cu", b"/* see // hpu-port: file-ignore */\n__global__ void k() {}\n", None, [("HPU860", 1)],
        id="cuda-marker-in-a-block-comment"),
    pytest.param(
        "kernel.cu", b"// hpu-port: file-ignore[HPU860]\n__global__ void k() {}\n", None, [], id="cuda-file-ignore"),
]


@pytest.mark.parametrize("path, source, output, findings", FOUND)
def test_what_the_properties_found(path, source, output, findings):
    """``output``: None, the input."""
    result = port_bytes(path, source, RULES, True)
    assert result.error is None, result.error
    assert (result.new_source or source) == (output or source)
    assert sorted((f.code, f.line) for f in result.findings) == findings


@pytest.mark.parametrize("codec, mark", [
    ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32-le", codecs.BOM_UTF32_LE), ("utf-32-be", codecs.BOM_UTF32_BE),
])
@pytest.mark.parametrize("name, text, expected", [
    ("ds.json", '{\r\n  "distributed_backend": "nccl",\r\n  "x": "caf\u00e9 \U0001f600"\r\n}\r\n', "hccl"),
    ("train.yaml", "dist:\n  backend: nccl  # \u00e9\n", "hccl"),
])
def test_json_and_yaml_in_utf16_or_utf32_are_ported_in_their_own_encoding(codec, mark, name, text, expected):
    # Their specifications allow it and Python's readers accept it: such a
    # file is neither an error nor written back in another encoding.
    source = mark + text.encode(codec)
    result = port_bytes(name, source, RULES, True)
    assert result.error is None
    assert result.new_source == mark + text.replace("nccl", expected).encode(codec)
    again = port_bytes(name, result.new_source, RULES, True)
    assert again.error is None and again.new_source is None


def test_a_utf16_data_file_with_nothing_to_port_is_no_error():
    source = codecs.BOM_UTF16_LE + '{"0": "\\t", "1": "\\n"}\n'.encode("utf-16-le")
    result = port_bytes("vocab.json", source, RULES, True)
    assert result.error is None and result.new_source is None


def test_broken_utf16_is_one_error_naming_the_encoding():
    result = port_bytes("bad.json", codecs.BOM_UTF16_LE + b'{\x00"\x00\x00\xd8', RULES, True)
    assert result.error.startswith("cannot decode as utf-16:")


def test_json_lines_under_a_json_name_is_data_not_an_error():
    # Datasets are often JSON Lines named `.json`: Python's json reads each line.
    source = b'{"text": "train on cuda with fp16"}\n{"text": "nccl"}\n'
    result = port_bytes("data/mmlu_val.json", source, RULES, True)
    assert result.error is None and result.new_source is None and result.findings == []
    # One broken document is still an error.
    broken = port_bytes("ds.json", b'{"backend": "nccl"}\n}\n', RULES, True)
    assert broken.error.startswith("cannot parse as JSON")
