"""Kinds ``command`` and ``command-flag``: programs run by scripts, and their flags.

Read in shell and job scripts, Dockerfile `RUN` lines, CI scripts (`run:`,
`script:`) and notebook `!` lines and `%%bash` cells. A program is named by its file name (`/usr/bin/nvidia-smi` is
`nvidia-smi`; `python3.10` is `python`), optionally followed by its
subcommand (`docker run`, `accelerate launch`); it may come after a wrapper
(`srun`, `env`, `time`).

``command``: ``programs`` to report; ``rename`` maps a program to its Gaudi
counterpart, a fix only for a *plain* invocation (a statement of its own,
nothing reading what it prints) whose arguments all fully match
``plain-args``. With ``project-cuda-builds = true`` a command of ``programs``
is reported only when it builds one of the project's CUDA extensions: it
runs a `setup.py` that the project facts know builds one (`python setup.py
build install`), or pip-installs the folder that holds it (`pip install -e .`).
With ``unless-flags`` each of ``programs`` may name a subcommand or a
module (`python -m venv`), and a command is reported only when it passes
none of those flags (`--system-site-packages`).

``command-flag``: ``flags`` (a table from flag to its Gaudi spelling, or
`""` to report only) on a command line that runs one of ``programs`` (any
command when not given). ``values`` narrows a flag to values matching a
pattern (`--runtime` = `nvidia`); ``replace-values`` rewrites the value
instead of the flag; ``fix-when`` lists flags of which one must be on the
same command line for the fix (the mark of a launcher known to accept the
new spelling).

A flag's value may be a variable the same script sets once to a literal
(`DEVICE=cuda` ... `--device $DEVICE`) or a read with a literal default
(`--device ${DEVICE:-cuda}`): the value is read through it. The fix then goes
on the literal, and for a variable only when every read of it is such a
flag's value (a variable the script uses elsewhere too is reported).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Iterator, Optional

from hpu_port import filetypes
from hpu_port.formats import Command, Edit, Span, Word, program_name
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_list, string_table
from hpu_port.kinds._patterns import compile_all, full_match
from hpu_port.kinds._project_files import project_file

FORMATS = ("shell", "dockerfile", "yaml", "notebook", "makefile", "apptainer", "json")


def runs(command: Command, spec: str) -> bool:
    """Whether ``command`` runs ``spec`` (`docker run`), after any wrapper;
    `python -m torch.distributed.run` also with Python's own options before
    `-m` (`python -u -m ...`)."""
    wanted = spec.split()
    names = [program_name(w.value) if i == 0 else w.value for i, w in enumerate(command.words)]
    for start in range(len(names)):
        if program_name(names[start]) != wanted[0]:
            continue
        rest = names[start + 1:]
        if wanted[0] == "python" and wanted[1:2] == ["-m"]:
            rest = _after_python_options(rest)
        if rest[: len(wanted) - 1] == wanted[1:]:
            return True
    return False


def _after_python_options(words: list) -> list:
    """The words after the interpreter's own options (`-u`, `-B`, `-W error`), from `-m` on."""
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] != "-m":
        index += 2 if words[index] in ("-W", "-X") else 1
    return words[index:]


@register_kind
class CommandKind(DocumentKind):
    name = "command"
    KEYS = {
        "programs": (list, True), "rename": (dict, False), "plain-args": (list, False), "project-cuda-builds": (bool, False),
        "unless-flags": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "replacement"})
    FORMATS = FORMATS
    EXAMPLE_FILE = "run.sh"

    def build_params(self, table):
        return {
            "programs": string_list(table["programs"], "programs"),
            "rename": string_table(table.get("rename", {}), "rename"),
            "plain-args": compile_all(string_list(table.get("plain-args", []), "plain-args"), "plain-args"),
            "project-cuda-builds": table.get("project-cuda-builds", False),
            "unless-flags": string_list(table.get("unless-flags", []), "unless-flags"),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return tuple(p.split()[0].lower() for p in rule.params["programs"])

    def describe(self, rule) -> str:
        rename = rule.params["rename"]
        return markdown_table(("program", "on Gaudi"), rename, code_values=True) if rename else ""

    def match(self, rule, document, options) -> Iterator[Match]:
        if rule.params["project-cuda-builds"]:
            yield from self._cuda_builds(rule, document)
            return
        if rule.params["unless-flags"]:
            yield from self._without_flags(rule, document)
            return
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

    def _cuda_builds(self, rule, document) -> Iterator[Match]:
        builders = document.facts.cuda_extension_builders if document.facts is not None else ()
        if not builders:
            return
        folder = ""  # where the script's last `cd` went, relative to its own folder
        for command in document.commands():
            word = command.words[0] if command.words else None
            if word is not None and word.value == "cd" and len(command.words) == 2:
                folder = command.words[1].value
                continue
            if word is None or program_name(word.value) not in rule.params["programs"]:
                continue
            built = next((w for w in command.words[1:] if _built_by(document, w.value, builders, folder)), None)
            if built is not None:
                yield Match(built.span, rule.message.format(name=built.value, replacement=""))

    def _without_flags(self, rule, document) -> Iterator[Match]:
        if filetypes.is_ci_file(document.path):
            return  # hosted CI runners are no Gaudi machines
        flags = rule.params["unless-flags"]
        for command in document.commands():
            named = _python_by_variable(command)
            spec = next((spec for spec in rule.params["programs"] if runs(named, spec)), None)
            if spec is None or any(_flag_of(word.value) in flags for word in command.words):
                continue
            word = next(w for w in named.words if program_name(w.value) == spec.split()[0])
            yield Match(word.span, rule.message.format(name=spec, replacement=""))

    def _fix(self, rule, command: Command, word: Word, replacement: str) -> tuple:
        if not replacement or not command.plain or word.quote:
            return ()
        if not all(full_match(rule.params["plain-args"], w.value) for w in command.words[1:]):
            return ()
        start = word.span.end - len(word.value.rsplit("/", 1)[-1])
        return (Edit(Span(start, word.span.end), replacement),)


def _python_by_variable(command: Command) -> Command:
    """``command``, its program read from a variable named for Python
    (`"${python_cmd}" -m venv`, launchers' usual spelling) read as `python`."""
    read = _READ.match(command.words[0].value) if command.words else None
    name = next((group for group in read.groups() if group), "") if read else ""
    if "python" not in name.lower():
        return command
    python = Word("python", command.words[0].span)
    return dataclasses.replace(command, words=(python, *command.words[1:]))


def _built_by(document, argument: str, builders, folder: str = "") -> Optional[str]:
    """The project's file that builds CUDA extensions which ``argument``
    names, from the document's folder or one above it; after the script's
    own `cd nms`, from that ``folder`` first."""
    setup = _setup_of(argument)
    if folder and setup and not os.path.isabs(folder):
        found = project_file(document, os.path.join(folder, setup), builders)
        if found is not None:
            return found
    return project_file(document, setup, builders)


def _setup_of(argument: str) -> str:
    """The setup script a command's argument names: itself (`setup.py`,
    `setup_linux.py`), or the `setup.py` in the folder it names (`pip
    install -e .`)."""
    if argument.endswith(".py"):
        return argument
    names_a_folder = argument in (".", "..") or argument.startswith(("./", "../")) or argument.endswith("/")
    return argument.rstrip("/") + "/setup.py" if names_a_folder and "=" not in argument else ""


@register_kind
class CommandFlag(DocumentKind):
    name = "command-flag"
    KEYS = {
        "flags": (dict, True),
        "programs": (list, False),
        "values": (dict, False),
        "replace-values": (dict, False),
        "fix-when": (list, False),
        "project-defaults": (list, False),
        "project-nvidia-values": (bool, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "value", "replacement", "reason"})
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
            "project-defaults": string_list(table.get("project-defaults", []), "project-defaults"),
            "project-nvidia-values": bool(table.get("project-nvidia-values", False)),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return tuple(flag.lstrip("-").lower() for flag in rule.params["flags"])

    def project_needles(self, rule, facts) -> tuple[str, ...]:
        flags = _project_flags(rule, facts)
        return self.needles(rule) + tuple(sorted(flag.lstrip("-").lower() for flag in flags))

    def describe(self, rule) -> str:
        shown = {flag: new or "(report only)" for flag, new in rule.params["flags"].items()}
        return markdown_table(("flag", "on Gaudi"), shown, code_values=False)

    def match(self, rule, document, options) -> Iterator[Match]:
        params = _with_project_flags(rule, document.facts)
        reads: Optional[_VariableReads] = None  # counted once, when a value comes through a variable
        for command in document.commands() + document.argument_strings():
            if params["programs"] and not any(runs(command, spec) for spec in params["programs"]):
                continue
            fixable = not params["fix-when"] or any(_flag_of(w.value) in params["fix-when"] for w in command.words)
            last = _scheduler_options_end(command) if _SCHEDULERS.issuperset(params["programs"] or ("-",)) else len(command.words)
            for index, word in enumerate(command.words[1:last], 1):
                flag = _flag_of(word.value)
                if flag not in params["flags"] or word.quote:
                    continue
                value = flag_value(command.words, index)
                if value is not None and value.value in _OFF and flag not in params["values"]:
                    continue  # `--fp16 False`: a switch given as off (HfArgumentParser's booleans take a value)
                shown = value.value if value else ""
                behind = _literal_behind(document, value) if value is not None else None
                if behind is not None:
                    how = "set to" if behind[1] else "default"
                    shown, value = f"{value.value} ({how} {behind[0].value})", behind[0]
                pattern = params["values"].get(flag)
                if pattern is not None and (value is None or not pattern.fullmatch(value.value)):
                    continue
                edits = self._fix(params, word, flag, value, document.facts) if fixable else ()
                changes_value = not params["flags"][flag]
                if behind is not None and behind[1] and changes_value:
                    reads = reads or _VariableReads(params, document)
                    if not reads.only_as_values(behind[1]):
                        edits = ()
                replacement = params["flags"][flag] or (params["replace-values"].get(value.value, "") if value else "")
                if params["flags"][flag] and document.facts is not None and not document.facts.takes_flag(flag, replacement):
                    # `--bf16` on a script that has none would stop at "unrecognized arguments".
                    replacement = f"{replacement} once the script has one (its parser defines {flag} and no {replacement})"
                reason = _nvidia_reason(rule, document.facts, flag, value.value if value else "", command)
                message = rule.message.format(name=flag, value=shown, replacement=replacement, reason=reason)
                if not shown:
                    message = message.replace(f"{flag}  ", f"{flag} ", 1)  # a switch given without a value
                yield Match(word.span, message, edits)

    def _fix(self, params, word: Word, flag: str, value: Optional[Word], facts=None) -> tuple:
        new_flag = params["flags"][flag]
        if new_flag:
            if facts is not None and not facts.takes_flag(flag, new_flag):
                return ()  # the project's script defines `--fp16` and no `--bf16`: a person adds it
            return (Edit(Span(word.span.start, word.span.start + len(flag)), new_flag),)
        new_value = params["replace-values"].get(value.value) if value is not None else None
        if not new_value:
            return ()
        if not value.quote:
            if value.span.end - value.span.start != len(value.value):
                return ()  # written with escapes (`cu\\da`): its text is not its value
            return (Edit(value.span, new_value),)
        inner = value.inner
        # Inside quotes only when the text is the value as written (no escapes).
        return (Edit(inner, new_value),) if inner.end - inner.start == len(value.value) else ()


def _project_flags(rule, facts) -> dict:
    """The project's own options the rule reads too (``project-defaults``):
    options named for a device or a backend whose default is a value the
    rule replaces (`--dp-backend` defaulting to "nccl", which the port
    changes in the Python, comparisons included): option -> the pattern of
    that value. An option of another kind (`--kernel-impl`, default "cuda")
    keeps its value in the Python too, so its launch lines keep theirs."""
    wanted = rule.params.get("project-defaults") or ()
    if facts is None or not (wanted or rule.params.get("project-nvidia-values")):
        return {}
    found = {
        flag: re.escape(default) for flag, default in facts.flags_defaulting_to(wanted).items()
        if _ROLE_WORD.search(flag)
    } if wanted else {}
    if rule.params.get("project-nvidia-values"):
        # `--sync_bn apex`: the values of an option that pick NVIDIA-only code.
        for flag, pattern, _ in facts.nvidia_flag_values:
            found[flag] = f"(?:{found[flag]})|(?:{pattern})" if flag in found and found[flag] and pattern else pattern
    return {flag: pattern for flag, pattern in found.items() if flag not in rule.params["flags"]}


def _nvidia_reason(rule, facts, flag: str, value: str, command: Command) -> str:
    """Why the project's option ``flag`` given ``value`` picks NVIDIA-only
    code (``project-nvidia-values``), from the script the command runs when
    several define the option; "" for any other flag."""
    if facts is None or not rule.params.get("project-nvidia-values"):
        return ""
    whys = [why for option, pattern, why in facts.nvidia_flag_values if option == flag and re.fullmatch(pattern, value)]
    scripts = {f"`{w.value.rsplit('/', 1)[-1]}:" for w in command.words if w.value.endswith(".py")}
    return next((why for why in whys if why.split(maxsplit=1)[0].rsplit(":", 1)[0] + ":" in scripts), whys[0] if whys else "")


_ROLE_WORD = re.compile(r"(?:^|[-_])(?:device|backend)(?:$|[-_])")


def _with_project_flags(rule, facts) -> dict:
    """The rule's parameters, with the project's options of ``_project_flags``."""
    extra = _project_flags(rule, facts)
    if not extra:
        return rule.params
    params = dict(rule.params)
    params["flags"] = {**rule.params["flags"], **{flag: "" for flag in extra}}
    # An empty pattern: a switch that takes no value, on wherever it is given.
    params["values"] = {**rule.params["values"], **{flag: re.compile(pattern) for flag, pattern in extra.items() if pattern}}
    return params


# A rule for the scheduler's own options reads them up to the program the job runs
# (`srun -p a100 python train.py -p t4`: the second `-p` is the script's).
_SCHEDULERS = frozenset({"srun", "sbatch", "salloc", "#SBATCH"})
# Slurm options that take no value.
_SLURM_SWITCHES = frozenset({
    "-u", "--unbuffered", "-l", "--label", "--exclusive", "--pty", "--overlap", "-Q", "--quiet", "-v", "--verbose",
    "-K", "--kill-on-bad-exit", "-W", "--wait", "-H", "--hold", "--requeue", "--no-requeue", "-O", "--overcommit",
    "-s", "--oversubscribe", "-X", "--disable-status", "-E", "--preserve-env", "--test-only", "--parsable",
})


def _scheduler_options_end(command: Command) -> int:
    """The index of the first word after the scheduler's own options: the
    program the job runs (the whole line for a `#SBATCH` directive)."""
    words = command.words
    start = next((i for i, w in enumerate(words) if program_name(w.value) in _SCHEDULERS), None)
    if start is None or words[start].value == "#SBATCH":
        return len(words)
    index = start + 1
    while index < len(words) and words[index].value.startswith("-"):
        option = words[index].value
        index += 1 if "=" in option or option in _SLURM_SWITCHES else 2
    return index


_OFF = frozenset({"False", "false", "FALSE", "no", "No"})
# `$NAME`, `${NAME}`, `"$NAME"` and Make's `$(NAME)`: a plain read, no default or slicing.
_READ = re.compile(r'^"?\$(?:\{(\w+)\}|\((\w+)\)|(\w+))"?$')
# `${NAME:-cuda}`, `"${NAME-nccl}"`: a read whose default is a literal.
_DEFAULTED = re.compile(r'^"?\$\{(\w+):?-([\w.:-]+)\}"?$')


def _variable(text: str) -> str:
    found = _READ.match(text)
    return next(name for name in found.groups() if name) if found else ""


def _default(word: Word) -> Optional[tuple[str, Word]]:
    """The variable and the literal default of a `${NAME:-literal}` word."""
    found = _DEFAULTED.match(word.value) if not word.quote else None
    if found is None:
        return None
    start = word.span.start + found.start(2)
    return found.group(1), Word(found.group(2), Span(start, start + len(found.group(2))))


def _literal_behind(document, value: Word) -> Optional[tuple[Word, str]]:
    """The literal a flag's value stands for, and the variable that carries
    it ("" when the literal is the value's own default): `${DEVICE:-cuda}`,
    or `$DEVICE` where the document sets DEVICE once, to `cuda` or to
    `${DEVICE:-cuda}`."""
    defaulted = _default(value)
    if defaulted is not None:
        return defaulted[1], ""
    name = _variable(value.value)
    assigned = [a for a in document.script_variables() if a.name.value == name] if name else []
    if len(assigned) != 1 or assigned[0].value is None:
        return None
    literal = assigned[0].value
    if "$" not in literal.value:
        return literal, name
    defaulted = _default(literal)
    return (defaulted[1], name) if defaulted is not None and defaulted[0] == name else None


class _VariableReads:
    """How a document reads its variables, counted once per document and
    rule: every read (`$X` anywhere), and the reads that are the value of
    one of the rule's flags."""

    def __init__(self, params, document) -> None:
        self.document = document
        self.all = {}
        for word in document.references():
            self.all.setdefault(word.value, []).append(word.span.start)
        self.as_values: dict[str, int] = {}
        for command in document.commands():
            for index, word in enumerate(command.words[1:], 1):
                if _flag_of(word.value) in params["flags"] and not word.quote:
                    value = flag_value(command.words, index)
                    name = _variable(value.value) if value is not None else ""
                    if name:
                        self.as_values[name] = self.as_values.get(name, 0) + 1

    def only_as_values(self, name: str) -> bool:
        """Whether every read of ``name`` (but the one in its own default)
        is such a flag's value, so that changing what it is set to changes
        nothing else."""
        setting = next(a.value.span for a in self.document.script_variables() if a.name.value == name)
        reads = sum(1 for start in self.all.get(name, ()) if not setting.start <= start < setting.end)
        return self.as_values.get(name, 0) == reads


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


def flag_value(words: tuple, index: int) -> Optional[Word]:
    """The value given to the flag at ``index``: after `=`, or the next word
    (a quoted one even if it starts with a dash: `--config-settings
    "--build-option=--cuda_ext"`)."""
    word = words[index]
    if "=" in word.value:
        flag, value = word.value.split("=", 1)
        end = word.span.end
        # A word written with escapes cannot be cut by its value's length: never edited.
        exact = word.span.end - word.span.start == len(word.value) and not word.quote
        return Word(value, Span(end - len(value), end), "" if exact else "?")
    if index + 1 < len(words) and (not words[index + 1].value.startswith("-") or words[index + 1].quote):
        return words[index + 1]
    return None
