"""Direct probes of a device in code: an availability call or a comparison
with the device's name (or a device enum's member).

A test with a CUDA probe and a probe of another accelerator chooses among
devices; a project with such probes serves several devices. Plain text
patterns, so that the project facts can look for them without a parse.
"""

from __future__ import annotations

import io
import re
import tokenize
from functools import lru_cache
from typing import Optional

from hpu_port.words import words_in

CUDA_PROBE = re.compile(
    r"""cuda\w*\.is_available\(|is_\w*cuda\w*_available\(|==\s*["']cuda(?::\d+)?["']|["']cuda["']\s*=="""
    r"""|["']cuda["']\s+in\s+[\w.(]|==\s*[\w.]*\bCUDA\b(?!\s*\()"""
)


def probes_of(devices) -> "re.Pattern":
    """Direct probes of any of ``devices`` (the device evidence's other accelerators)."""
    names = "|".join(sorted(map(re.escape, devices))) or "(?!)"
    members = "|".join(sorted(re.escape(d.upper()) for d in devices)) or "(?!)"
    return re.compile(
        rf"""(?:{names})\w*\.is_available\(|is_\w*(?:{names})\w*_available\(|==\s*["'](?:{names})(?::\d+)?["']|["'](?:{names})["']\s*=="""
        rf"""|["'](?:{names})["']\s+in\s+[\w.(]|==\s*[\w.]*\b(?:{members})\b(?!\s*\()"""
    )


def probed_in(source: bytes, devices, code: Optional[bytes] = None) -> bool:
    """Whether ``source`` probes any of ``devices`` (``probes_of``, over bytes);
    ``code``: ``source`` with its comments and docstrings blanked out, when
    the caller has it already (``CodeView.text``)."""
    devices = tuple(sorted(devices))
    anchors, pattern = _probe_anchors(devices), _bytes_probes_of(devices)
    # A comment or a docstring that shows a probe (`# if is_torch_xla_available():`)
    # does not choose a device: only a hit that is still there in the code counts.
    if code is None:
        if not _search_near_anchors(pattern, source, anchors):
            return False  # no need to find the prose
        code = _without_prose(source)
    return _search_near_anchors(pattern, code, anchors)


# How far from a device's name a probe may reach (`is_torch_npu_available(`,
# `device.type == "npu"`): the search looks that far on each side.
_PROBE_REACH = 256


def _search_near_anchors(pattern: "re.Pattern", text: bytes, anchors: tuple) -> bool:
    """Whether ``pattern`` matches ``text`` near one of ``anchors`` (each
    probe holds one, see ``_probe_anchors``). Plain byte searches for them
    cost a fraction of running the pattern, or any pattern with as many
    alternatives, over the whole text."""
    names = tuple(word for word, found in anchors if word != _AVAILABLE and word.islower())
    # A word of identifier characters occurs in the text exactly when it is
    # part of one of its distinct words, which joined are a fraction of it.
    words = b" ".join(words_in(text))
    for word, found in anchors:
        if word.rstrip(b"(") not in words:
            continue
        for anchor in found:
            at = text.find(anchor)
            while at != -1:
                if (anchor != _AVAILABLE or _names_a_device_before(text, at, names)) and _matches_within(
                    pattern, text, max(0, at - _PROBE_REACH), at + len(anchor) + _PROBE_REACH
                ):
                    return True
                at = text.find(anchor, at + 1)
    return False


_AVAILABLE = b"available("
_CHAIN_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


def _names_a_device_before(text: bytes, at: int, names: tuple) -> bool:
    """Whether the dotted name that ends in the `available(` at ``at`` holds
    a device's name: every availability probe does (`torch.npu.is_available(`,
    `is_torch_npu_available(`), and most such calls in a file probe none
    (`is_torch_available(`), so the pattern is not run around them."""
    start, limit = at, max(0, at - _PROBE_REACH)
    while start > limit and text[start - 1] in _CHAIN_BYTES:
        start -= 1
    chain = text[start:at]
    return any(name in chain for name in names)


def _matches_within(pattern: "re.Pattern", text: bytes, start: int, end: int) -> bool:
    """Whether a match of ``pattern`` starts in ``text[start:end]`` and holds
    in the whole text (the window's end would pass `\\b` and lookaheads)."""
    at = start
    while True:
        found = pattern.search(text, at, end)
        if found is None:
            return False
        if pattern.match(text, found.start()) is not None:
            return True
        at = found.start() + 1


def _without_prose(source: bytes) -> bytes:
    """``source`` with its comments and statement-level strings blanked out,
    every other byte in place; ``source`` itself when it does not tokenize."""
    # Lines as tokenize reads them (through readline: ended by LF only).
    lines = source.split(b"\n")
    lines = [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    blanked = bytearray(source)
    previous = tokenize.NEWLINE
    encoding = "utf-8"
    try:
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            if token.type == tokenize.ENCODING:
                encoding = token.string
            statement_string = token.type == tokenize.STRING and previous in _STATEMENT_STARTS
            if token.type == tokenize.COMMENT or statement_string:
                _blank(blanked, lines, starts, token, encoding)
            if token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING):
                previous = token.type
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return source
    return bytes(blanked)


_STATEMENT_STARTS = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def _blank(blanked: bytearray, lines, starts, token, encoding: str) -> None:
    """Blank out ``token``'s bytes in ``blanked``: columns are characters of
    the decoded lines, so they are mapped back to byte offsets."""
    (first, start_col), (last, end_col) = token.start, token.end
    begin = starts[first - 1] + _byte_column(lines[first - 1], start_col, encoding)
    end = starts[last - 1] + _byte_column(lines[last - 1], end_col, encoding)
    blanked[begin:end] = re.sub(rb"[^\r\n]", b" ", bytes(blanked[begin:end]))


def _byte_column(line: bytes, column: int, encoding: str) -> int:
    return len(line.decode(encoding, "replace")[:column].encode(encoding, "replace"))


@lru_cache(maxsize=None)
def _probe_anchors(devices: tuple) -> tuple:
    """(word, anchors) pairs: every probe of ``probes_of`` holds one of the
    anchors, `available(` (the availability calls), a device's name just after
    a quote (the comparisons with a string) or a device enum's member (upper
    case); a text without the word holds none of its anchors, and is
    searched for it once."""
    anchors = [(_AVAILABLE, (_AVAILABLE,))]
    for device in devices:
        name, member = device.encode(), device.upper().encode()
        anchors += [(name, (b'"' + name, b"'" + name)), (member, (member,))]
    return tuple(anchors)


@lru_cache(maxsize=None)
def _bytes_probes_of(devices: tuple) -> "re.Pattern":
    return re.compile(probes_of(devices).pattern.encode())
