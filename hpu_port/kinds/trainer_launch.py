"""Kind ``trainer-launch``: a launch line of a script that the Gaudi-trainer move changes.

A script that hands the trainer's arguments class to an argument parser
(`HfArgumentParser((..., TrainingArguments))`) reads them from its command
line; moved to the Gaudi trainer (the ``trainer-move`` kind, with
`--unsafe-fixes`), it needs ``flags`` there. Matched in shell and job scripts,
Makefiles, CI scripts and notebook `!` lines: a command with a `.py` word that
is such a script of the project (the project facts' ``parsing_scripts``), or,
for a script the facts do not know (no project, a path outside it), one whose
arguments include ``trainer-flags`` (`--output_dir` with `--do_train`, say).
A line that already passes ``flags``' first flag is left alone, and so is a
script inside a package that serves several devices (HPU521 holds the move
there); nothing is said unless `--unsafe-fixes` is on, since the plain
trainer needs no flags. Once every Python file of the run is ported, the
launch lines of the scripts the run moves (``ProjectFacts.moved_scripts``)
get ``flags`` after the script's name; the others stay reported.
"""

from __future__ import annotations

import os
from typing import Iterator, Optional

from hpu_port.formats import Edit, Span
from hpu_port.kinds import DocumentKind, Match, register_kind, string_list

FORMATS = ("shell", "notebook", "makefile", "apptainer", "yaml")


@register_kind
class TrainerLaunch(DocumentKind):
    name = "trainer-launch"
    KEYS = {"flags": (list, True), "trainer-flags": (list, True), "required-flag": (str, True)}
    MESSAGE_FIELDS = frozenset({"name", "flags"})
    FORMATS = FORMATS
    EXAMPLE_FILE = "train.sh"

    def build_params(self, table):
        flags = string_list(table["flags"], "flags")
        if not flags:
            raise ValueError("'flags' must not be empty")
        return {
            "flags": flags,
            "trainer-flags": frozenset(string_list(table["trainer-flags"], "trainer-flags")),
            "required-flag": table["required-flag"],
        }

    def needles(self, rule) -> tuple[str, ...]:
        return (".py",)

    def match(self, rule, document, options) -> Iterator[Match]:
        if not getattr(options, "unsafe_fixes", False):
            return
        params = rule.params
        for command in document.commands():
            values = [word.value for word in command.words]
            index = next((i for i, value in enumerate(values) if value.endswith(".py")), None)
            if index is None:
                continue
            arguments = {value.split("=", 1)[0] for value in values[index + 1:]}
            if params["flags"][0] in arguments:
                continue
            known = _parses_trainer_arguments(document.facts, values[index])
            if known is False or known is None and not (params["required-flag"] in arguments and arguments & params["trainer-flags"]):
                continue
            name = os.path.basename(values[index])
            message = rule.message.format(name=name, flags=" ".join(params["flags"]))
            if known and _moved_here(document.facts, values[index]):
                # The script moves in this run: its launch line gets the flags.
                at = command.words[index].span.end
                yield Match(command.words[index].span, message, (Edit(Span(at, at), " " + " ".join(params["flags"])),))
            else:
                yield Match(command.words[index].span, message)


def _moved_here(facts, script: str) -> bool:
    """Whether this run moves the project's script ``script`` (as a launch line names it)."""
    return _names_one_of(facts.moved_scripts, script) if facts is not None else False


def _names_one_of(paths, script: str) -> bool:
    tail = os.sep + os.path.normpath(script).lstrip(os.sep)
    name = os.path.basename(script)
    # `$ROOT/train.py`: a path the launch line builds is known by its name.
    return any(path.endswith(tail) or os.path.basename(path) == name for path in paths)


def _parses_trainer_arguments(facts, script: str) -> Optional[bool]:
    """Whether the project's script ``script`` (as a launch line names it)
    fills the trainer's arguments from its command line; None when the
    project facts do not know the script."""
    if facts is None or not facts.root:
        return None
    folders = os.path.normpath(script).split(os.sep)[:-1]
    if any(os.path.basename(top) in folders for top in facts.serves_several):
        # A script of a package that serves several devices: HPU521 holds
        # the move there, and the flags would be unknown options.
        return False
    if _names_one_of(facts.parsing_scripts, script):
        return True
    module = os.path.splitext(os.path.basename(script))[0]
    return False if module in facts.first_party else None
