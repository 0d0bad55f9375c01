"""PatternSet answers exactly as fnmatchcase over each pattern would."""

from fnmatch import fnmatchcase

import pytest

from hpu_port.patterns import PatternSet, matches_any

PATTERNS = ("triton", "flash_attn*", "torch.cuda.*", "a?b", "x[yz]*", "*_cuda", "nvidia*")
NAMES = ["triton", "triton.language", "flash_attn", "flash_attn_2", "torch.cuda", "torch.cuda.amp",
         "acb", "ab", "xy1", "xa", "fused_cuda", "cuda", "nvidia", "nv", ""]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("patterns", [PATTERNS, PATTERNS[:3], ("*",), (), ("a*b*",)])
def test_a_pattern_set_agrees_with_fnmatchcase(patterns, name):
    assert matches_any(name, patterns) == any(fnmatchcase(name, p) for p in patterns)


def test_plain_names_and_trailing_stars_need_no_regular_expression():
    patterns = PatternSet(("triton", "flash_attn*", "a?b"))
    assert patterns.exact == {"triton"}
    assert patterns.prefixes == ("flash_attn",)
    assert patterns.others == ("a?b",)
