"""The command-line options the project's own scripts define.

A launch line's `--fp16` becomes `--bf16` only where the script can take
it: a project whose argument parser defines `--fp16` and no `--bf16` would
stop with "unrecognized arguments". Options defined through dataclasses
(Hugging Face's `HfArgumentParser`) are not seen here; a flag the project
does not define with `add_argument` is not judged.

The text defaults of those options are kept too (`--dp-backend`, default
`"nccl"`): where the port changes such a default in the Python, a launch
line that passes the old value explicitly must change with it.
"""

from __future__ import annotations

import re
from typing import Iterable

# `add_argument("--fp16", "--half", action="store_true")`: the option strings before the first keyword.
_ADD_ARGUMENT = re.compile(rb"add_argument\(\s*((?:[rbuRBU]?['\"]-{1,2}[\w.-]+['\"]\s*,?\s*)+)")
_OPTION = re.compile(rb"['\"](-{1,2}[\w.-]+)['\"]")


def cli_flags(sources: Iterable[bytes]) -> frozenset:
    """Every option string an `add_argument` call of the project names."""
    found = set()
    for source in sources:
        if not isinstance(source, bytes) or b"add_argument" not in source:
            continue
        for call in _ADD_ARGUMENT.finditer(source):
            found.update(option.decode("ascii", "replace") for option in _OPTION.findall(call.group(1)))
    return frozenset(found)


# `default="nccl"` inside the same `add_argument(...)` call (no nested parentheses before it).
_TEXT_DEFAULT = re.compile(rb"""\bdefault\s*=\s*[rbuRBU]?['"]([\w.:-]*)['"]""")
_CALL_END = re.compile(rb"[()]")


def flag_defaults(sources: Iterable[bytes]) -> tuple:
    """(option string, default) for every option an `add_argument` call
    defines with a text default; sorted."""
    found = set()
    for source in sources:
        if not isinstance(source, bytes) or b"default" not in source or b"add_argument" not in source:
            continue
        for call in _ADD_ARGUMENT.finditer(source):
            end = _CALL_END.search(source, call.end())
            arguments = source[call.end():end.start() if end else len(source)]
            default = _TEXT_DEFAULT.search(arguments)
            if default is None:
                continue
            value = default.group(1).decode("ascii", "replace")
            found.update((option.decode("ascii", "replace"), value) for option in _OPTION.findall(call.group(1)))
    return tuple(sorted(found))
