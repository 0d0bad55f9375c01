"""Kinds ``command`` and ``command-flag``: programs run by scripts, and their flags.

Read in shell and job scripts, Dockerfile `RUN` lines, CI scripts (`run:`,
`script:`) and notebook `!` lines and `%%bash` cells. A program is named by its file name (`/usr/bin/nvidia-smi` is
`nvidia-smi`; `python3.10` is `python`), optionally followed by its
subcommand (`docker run`, `accelerate launch`); it may come after a wrapper
(`srun`, `env`, `time`).

``command``: ``programs`` to report; ``rename`` maps a program to its Gaudi
counterpart, a fix only for a *plain* invocation (a statement of its own,
nothing reading what it prints) whose arguments all fully match
``plain-args``.

``command-flag``: ``flags`` (a table from flag to its Gaudi spelling, or
`""` to report only) on a command line that runs one of ``programs`` (any
command when not given). ``values`` narrows a flag to values matching a
pattern (`--runtime` = `nvidia`); ``replace-values`` rewrites the value
instead of the flag; ``fix-when`` lists flags of which one must be on the
same command line for the fix (the mark of a launcher known to accept the
new spelling).
"""

from __future__ import annotations

from typing import Iterator, Optional

from hpu_port.formats import Command, Edit, Span, Word, program_name
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_list, string_table
from hpu_port.kinds._patterns import compile_all, full_match

FORMATS = ("shell", "dockerfile", "yaml", "notebook", "makefile", "apptainer", "json")


def runs(command: Command, spec: str) -> bool:
    """Whether ``command`` runs ``spec`` (`docker run`), after any wrapper."""
    wanted = spec.split()
    names = [program_name(w.value) if i == 0 else w.value for i, w in enumerate(command.words)]
    for start in range(len(names)):
        if program_name(names[start]) == wanted[0] and names[start + 1: start + len(wanted)] == wanted[1:]:
            return True
    return False


@register_kind
class CommandKind(DocumentKind):
    name = "command"
    KEYS = {"programs": (list, True), "rename": (dict, False), "plain-args": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "replacement"})
    FORMATS = FORMATS
    EXAMPLE_FILE = "run.sh"

    def build_params(self, table):
        return {
            "programs": string_list(table["programs"], "programs"),
            "rename": string_table(table.get("rename", {}), "rename"),
            "plain-args": compile_all(string_list(table.get("plain-args", []), "plain-args"), "plain-args"),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return tuple(p.split()[0].lower() for p in rule.params["programs"])

    def describe(self, rule) -> str:
        rename = rule.params["rename"]
        return markdown_table(("program", "on Gaudi"), rename, code_values=True) if rename else ""

    def match(self, rule, document, options) -> Iterator[Match]:
        commands = document.commands()
        probed = set()
        for command in commands:
            for word in _probed_programs(command):
                name = program_name(word.value)
                if name in rule.params["programs"]:
                    probed.add(name)
                    replacement = rule.params["rename"].get(name, "")
                    yield Match(word.span, rule.message.format(name=name, replacement=replacement))
        for command in commands:
            word = command.words[0] if command.words else None
            if word is None or program_name(word.value) not in rule.params["programs"]:
                continue
            name = program_name(word.value)
            replacement = rule.params["rename"].get(name, "")
            message = rule.message.format(name=name, replacement=replacement)
            # A script that looks for the program (`command -v nvidia-smi`)
            # chooses its path by it: a person decides what Gaudi takes.
            fix = () if name in probed else self._fix(rule, command, word, replacement)
            yield Match(word.span, message, fix)

    def _fix(self, rule, command: Command, word: Word, replacement: str) -> tuple:
        if not replacement or not command.plain or word.quote:
            return ()
        if not all(full_match(rule.params["plain-args"], w.value) for w in command.words[1:]):
            return ()
        start = word.span.end - len(word.value.rsplit("/", 1)[-1])
        return (Edit(Span(start, word.span.end), replacement),)


@register_kind
class CommandFlag(DocumentKind):
    name = "command-flag"
    KEYS = {
        "flags": (dict, True),
        "programs": (list, False),
        "values": (dict, False),
        "replace-values": (dict, False),
        "fix-when": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "value", "replacement"})
    FORMATS = FORMATS
    EXAMPLE_FILE = "run.sh"

    def build_params(self, table):
        values = string_table(table.get("values", {}), "values")
        return {
            "flags": string_table(table["flags"], "flags"),
            "programs": string_list(table.get("programs", []), "programs"),
            "values": {flag: compile_all([p], "values")[0] for flag, p in values.items()},
            "replace-values": string_table(table.get("replace-values", {}), "replace-values"),
            "fix-when": string_list(table.get("fix-when", []), "fix-when"),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return tuple(flag.lstrip("-").lower() for flag in rule.params["flags"])

    def describe(self, rule) -> str:
        shown = {flag: new or "(report only)" for flag, new in rule.params["flags"].items()}
        return markdown_table(("flag", "on Gaudi"), shown, code_values=False)

    def match(self, rule, document, options) -> Iterator[Match]:
        params = rule.params
        for command in document.commands():
            if params["programs"] and not any(runs(command, spec) for spec in params["programs"]):
                continue
            fixable = not params["fix-when"] or any(_flag_of(w.value) in params["fix-when"] for w in command.words)
            for index, word in enumerate(command.words[1:], 1):
                flag = _flag_of(word.value)
                if flag not in params["flags"] or word.quote:
                    continue
                value = _value_of(command.words, index)
                pattern = params["values"].get(flag)
                if pattern is not None and (value is None or not pattern.fullmatch(value.value)):
                    continue
                edits = self._fix(rule, word, flag, value, document.facts) if fixable else ()
                replacement = params["flags"][flag] or (params["replace-values"].get(value.value, "") if value else "")
                message = rule.message.format(name=flag, value=value.value if value else "", replacement=replacement)
                yield Match(word.span, message, edits)

    def _fix(self, rule, word: Word, flag: str, value: Optional[Word], facts=None) -> tuple:
        new_flag = rule.params["flags"][flag]
        if new_flag:
            if facts is not None and not facts.takes_flag(flag, new_flag):
                return ()  # the project's script defines `--fp16` and no `--bf16`: a person adds it
            return (Edit(Span(word.span.start, word.span.start + len(flag)), new_flag),)
        new_value = rule.params["replace-values"].get(value.value) if value is not None else None
        if new_value and not value.quote:
            return (Edit(Span(value.span.end - len(value.value), value.span.end), new_value),)
        return ()


_PROBES = {"command": ("-v", "-V"), "which": (), "type": (), "hash": ()}


def _probed_programs(command: Command) -> list[Word]:
    """The programs a command looks for: `command -v X`, `which X`, `type X`."""
    options = _PROBES.get(command.program)
    if options is None:
        return []
    arguments = command.words[1:]
    if options and not any(w.value in options for w in arguments):
        return []
    return [w for w in arguments if not w.value.startswith("-")]


def _flag_of(text: str) -> str:
    return text.split("=", 1)[0] if text.startswith("-") else ""


def _value_of(words: tuple, index: int) -> Optional[Word]:
    """The value given to the flag at ``index``: after `=`, or the next word."""
    word = words[index]
    if "=" in word.value:
        flag, value = word.value.split("=", 1)
        end = word.span.end
        return Word(value, Span(end - len(value), end))
    if index + 1 < len(words) and not words[index + 1].value.startswith("-"):
        return words[index + 1]
    return None
