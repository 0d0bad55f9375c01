"""Configs a shell script writes with a here-document.

Job scripts often write the DeepSpeed or accelerate config they launch with
(`cat << EOT > $DEEPSPEED_CONFIG_FILE` ... `EOT`). The body is read as the
config it is, JSON when it starts with `{`, YAML when the file written is
named as YAML, and its entries are placed in the script, so that the config
rules find and edit them there.

The shell expands `$NAME` in the body of an unquoted delimiter; in JSON
such an expansion is read as a number of the same length (it is a value the
script chooses), and an entry whose value holds one is reported, never edited.
A file written by `tee FILE <<EOF` is read as well as `cat > FILE <<EOF`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from hpu_port.formats import Entry, FormatError, Span, Word

# Names of the file written that say YAML (`ds.yaml`, `$ACCELERATE_CONFIG_FILE`).
_YAML_TARGET = re.compile(r"\.ya?ml\b|YAML|ACCELERATE", re.IGNORECASE)
# Programs that write their standard input to a file.
_WRITERS = frozenset({"cat", "tee"})


def config_entries(text: str, body: Span, target: str, expansions: list[Span], document: int) -> list[Entry]:
    """The entries of the config a here-document body holds, placed in
    ``text`` (the script), or [] when the body is no config read here."""
    source = text[body.start:body.end]
    stripped = source.lstrip()
    if stripped.startswith("{"):
        kind = "json"
    elif _YAML_TARGET.search(target):
        kind = "yaml"
    else:
        return []
    masked = _masked(source, [Span(s.start - body.start, s.end - body.start) for s in expansions], kind)
    try:
        entries = _parse(kind, masked)
    except FormatError:
        return []  # not a whole config once expanded: the script's business
    return [_placed(entry, body.start, expansions, document) for entry in entries]


def writes_a_file(program: str, arguments: list[str], redirect_targets: list[str]) -> Optional[str]:
    """The file a here-document's command writes (`cat > f`, `tee f`), or None."""
    if program not in _WRITERS:
        return None
    named = [a for a in arguments if not a.startswith("-")] if program == "tee" else []
    targets = redirect_targets + named
    return targets[0] if targets else None


def _parse(kind: str, text: str) -> list[Entry]:
    if kind == "json":
        from hpu_port.formats.json import parse
    else:
        from hpu_port.formats.yaml import parse
    return parse(text).entries()


def _masked(source: str, expansions: list[Span], kind: str) -> str:
    """JSON with each expansion read as one number of the same length
    (`$LOSS_SCALE` as `10000000000`), so that a value's span is the whole
    expansion and removing its member removes all of it."""
    if kind != "json" or not expansions:
        return source
    pieces, position = [], 0
    for span in sorted(expansions, key=lambda s: s.start):
        pieces += [source[position:span.start], "1" + "0" * (span.end - span.start - 1)]
        position = span.end
    return "".join(pieces) + source[position:]


def _placed(entry: Entry, offset: int, expansions: list[Span], document: int) -> Entry:
    def moved(span: Optional[Span]) -> Optional[Span]:
        return Span(span.start + offset, span.end + offset) if span is not None else None

    def word(w: Optional[Word]) -> Optional[Word]:
        if w is None:
            return None
        span = moved(w.span)
        # A value the shell fills in is the script's choice: never edited (see ``exact``).
        quote = "?" if any(e.start < span.end and span.start < e.end for e in expansions) else w.quote
        return Word(w.value, span, quote)

    return dataclasses.replace(
        entry, key=word(entry.key), value=word(entry.value), span=moved(entry.span), removal=None, document=document
    )
