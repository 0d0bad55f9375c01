"""Nothing that no rule touched changes: bytes, encoding, line endings, comments."""

import pytest

from hpu_port.engine import port_source
from tests.conftest import make_ruleset


def run(source: bytes):
    result = port_source("f.py", source, make_ruleset())
    assert result.error is None, result.error
    return result.new_source or source


def test_crlf_line_endings_are_kept():
    source = b'import torch\r\n\r\nx = t.to("cuda")  # move\r\n'
    assert run(source) == b'import habana_frameworks.torch.core as htcore  # noqa: F401\r\nimport torch\r\n\r\nx = t.to("hpu")  # move\r\n'


def test_mixed_line_endings_outside_edits_are_kept():
    source = b'a = 1\r\nb = 2\ny = t.cuda()\r\n'
    assert run(source) == b'import habana_frameworks.torch.core as htcore  # noqa: F401\r\n\r\na = 1\r\nb = 2\ny = t.to("hpu")\r\n'


def test_utf8_bom_is_kept():
    source = b'\xef\xbb\xbfimport torch\ndevice = "cuda"\n'
    out = run(source)
    assert out.startswith(b"\xef\xbb\xbfimport habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\n")
    assert out.endswith(b'device = "hpu"\n')


def test_latin1_encoding_cookie_is_kept():
    source = '# -*- coding: latin-1 -*-\nimport torch\nname = "café"\ndevice = "cuda"\n'.encode("latin-1")
    out = run(source)
    assert out.decode("latin-1").endswith('name = "café"\ndevice = "hpu"\n')
    assert b"caf\xe9" in out


def test_no_final_newline_and_tabs():
    source = b'import torch\nif x:\n\ty = t.cuda()'
    assert run(source) == b'import habana_frameworks.torch.core as htcore  # noqa: F401\nimport torch\nif x:\n\ty = t.to("hpu")'


def test_comments_quotes_and_layout_are_kept():
    source = b"""import torch  # the framework

# Pick a device.
device   =   'cuda'   # single quotes stay
values = [ 1,2 ,3 ]  # odd spacing stays
"""
    assert run(source) == b"""import habana_frameworks.torch.core as htcore  # noqa: F401
import torch  # the framework

# Pick a device.
device   =   'hpu'   # single quotes stay
values = [ 1,2 ,3 ]  # odd spacing stays
"""


@pytest.mark.parametrize(
    "source",
    [
        b"import os\nprint('no accelerator here')\n",
        b"# cuda is only mentioned in a comment\nx = 1\n",
        b'"""Docs about "cuda"."""\n',
        b"",
    ],
)
def test_files_without_matches_are_untouched(source):
    result = port_source("f.py", source, make_ruleset())
    assert result.new_source is None and result.findings == [] and result.error is None


@pytest.mark.parametrize(
    "source, expected",
    [
        pytest.param(
            b'x = 1\n\x0cy = t.cuda()\n\x0cz = 2\n',
            b'import habana_frameworks.torch.core as htcore  # noqa: F401\n\nx = 1\n\x0cy = t.to("hpu")\n\x0cz = 2\n',
            id="form-feeds",
        ),
        pytest.param(
            b'import torch\rx = t.cuda()\r',
            b'import habana_frameworks.torch.core as htcore  # noqa: F401\rimport torch\rx = t.to("hpu")\r',
            id="lone-cr-after-the-changed-last-line",
        ),
        pytest.param(
            b'x = 1\r\ny = t.cuda()\r',
            b'import habana_frameworks.torch.core as htcore  # noqa: F401\r\n\r\nx = 1\r\ny = t.to("hpu")\r',
            id="crlf-file-ending-in-a-lone-cr",
        ),
        pytest.param(
            b'x = 1\n\x0cy = t.cuda(); z = t.cuda()\r',
            b'import habana_frameworks.torch.core as htcore  # noqa: F401\n\nx = 1\n\x0cy = t.to("hpu"); z = t.to("hpu")\r',
            id="form-feed-and-lone-cr-on-one-changed-line",
        ),
        pytest.param(
            b'x = t.cuda()\n\r',
            b'import habana_frameworks.torch.core as htcore  # noqa: F401\n\nx = t.to("hpu")\n\r',
            id="an-empty-last-line-ending-in-a-lone-cr",
        ),
        pytest.param(
            b'x = 1\ry = t.cuda()\rz = 2\r',
            b'import habana_frameworks.torch.core as htcore  # noqa: F401\r\rx = 1\ry = t.to("hpu")\rz = 2\r',
            id="cr-only-line-endings",
        ),
    ],
)
def test_lines_libcst_would_normalise_stay_byte_identical(source, expected):
    assert run(source) == expected


def test_splice_puts_back_what_libcst_normalised_inside_changed_lines():
    from hpu_port.splice import splice

    original = b"\x0cx = t.cuda()  # a\x0cb\ny = 1\r"
    roundtrip = b"x = t.cuda()  # a\x0cb\ny = 1"
    new = b'import h\n\nx = t.to("hpu")  # a\x0cb\ny = 2'
    assert splice(original, roundtrip, new) == b'import h\n\n\x0cx = t.to("hpu")  # a\x0cb\ny = 2\r'


def test_splice_of_a_long_changed_block_goes_line_by_line():
    import time

    from hpu_port.splice import splice

    lines = [b"x%d = t.cuda(%d)  # note\n" % (i, i) for i in range(2000)]
    roundtrip = b"".join(lines)
    original = b"".join(b"\x0c" + line for line in lines)
    new = roundtrip.replace(b"t.cuda(", b't.to("hpu", ')
    started = time.perf_counter()
    assert splice(original, roundtrip, new) == b"".join(b"\x0c" + line for line in new.splitlines(keepends=True))
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    "source",
    [
        b"import os\rimport torch\n\nx = torch.randn(2).cuda()\n",
        b"import os\rimport torch\n\n\nx = torch.randn(2).cuda()\r",
        b"import torch\r\n\n\rx = torch.randn(2).cuda()\r",
    ],
)
def test_an_added_line_never_joins_the_empty_line_after_it(source):
    """A file whose first line ends in a lone CR: an added import that ended
    in CR too, before a kept empty LF line, would read as one CRLF line."""
    result = port_source("mixed.py", source, make_ruleset())
    assert result.error is None and result.new_source is not None
    kept = [line for line in source.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n") if b"cuda" not in line]
    out = result.new_source.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    assert out.count(b"") == kept.count(b"")
    assert port_source("mixed.py", result.new_source, make_ruleset()).new_source is None
