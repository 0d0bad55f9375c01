"""Direct probes of a device in code: an availability call or a comparison
with the device's name (or a device enum's member).

A test with a CUDA probe and a probe of another accelerator chooses among
devices; a project with such probes serves several devices. Plain text
patterns, so that the project facts can look for them without a parse.
"""

from __future__ import annotations

import re
from functools import lru_cache

CUDA_PROBE = re.compile(
    r"""cuda\w*\.is_available\(|is_\w*cuda\w*_available\(|==\s*["']cuda(?::\d+)?["']|["']cuda["']\s*=="""
    r"""|==\s*[\w.]*\bCUDA\b(?!\s*\()"""
)


def probes_of(devices) -> "re.Pattern":
    """Direct probes of any of ``devices`` (the device evidence's other accelerators)."""
    names = "|".join(sorted(map(re.escape, devices))) or "(?!)"
    members = "|".join(sorted(re.escape(d.upper()) for d in devices)) or "(?!)"
    return re.compile(
        rf"""(?:{names})\w*\.is_available\(|is_\w*(?:{names})\w*_available\(|==\s*["'](?:{names})(?::\d+)?["']|["'](?:{names})["']\s*=="""
        rf"""|==\s*[\w.]*\b(?:{members})\b(?!\s*\()"""
    )


def probed_in(source: bytes, devices) -> bool:
    """Whether ``source`` probes any of ``devices`` (``probes_of``, over bytes)."""
    devices = tuple(sorted(devices))
    # Every probe names a device: most files name none, and looking for a few
    # words costs a fraction of the search.
    if not any(word in source for word in _device_words(devices)):
        return False
    return _bytes_probes_of(devices).search(source) is not None


@lru_cache(maxsize=None)
def _device_words(devices: tuple) -> tuple:
    return tuple(word.encode() for device in devices for word in (device, device.upper()))


@lru_cache(maxsize=None)
def _bytes_probes_of(devices: tuple) -> "re.Pattern":
    return re.compile(probes_of(devices).pattern.encode())
