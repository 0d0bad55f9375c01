"""Command lines a shell script keeps in strings: run through `eval` or
`bash -c`, or split into the arguments of another command (`ARGS="..."` then
`python train.py $ARGS`).

A mixin of ``ShellDocument``: it reads the document's commands, assignments
and variable references, and gives back the commands those strings hold,
their words placed in the file so that rules can edit them where they are
written. Only strings of plain words are read (no quotes, substitutions or
escapes inside): what a string with those runs is not known without running it.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from hpu_port.formats import VARIABLE_ALONE, Command, Span, Word, program_name


class CommandStrings:
    """The strings of a ``ShellDocument`` that hold command lines or arguments."""

    def _evaluated_strings(self, commands: list[Command]) -> list[Command]:
        """The command lines a script keeps in a string and runs through
        `eval` or `bash -c`: `CMD="torchrun train.py --device cuda"` then
        `eval $CMD`, or `eval "torchrun ..."` itself. Only strings of plain
        words (no quotes, substitutions or escapes inside) are read."""
        evaluated, inner, found = Counter(), set(), []
        for command in commands:
            for word in _evaluated_words(command):
                # `eval $CMD`, `eval "${LAUNCH} --deepspeed ds.json"`: the variable holds the program.
                variable = _LEADING_VARIABLE.match(word.value)
                if variable is not None and word.quote != "'":
                    evaluated[variable.group(1)] += 1
                elif word.quote:
                    if variable is not None:
                        inner.add(variable.group(1))  # `bash -c '$LAUNCHER ...'`: the inner shell expands it
                    found += _string_command(word)
        # A variable also run by word splitting (`$CMD` as a command) would take
        # an environment prefix for its program: only those read as command lines count.
        reads = Counter(word.value for word in self.references()) if evaluated or inner else Counter()
        if evaluated:
            # `echo ${run_cmd}` before `eval ${run_cmd}` only shows the line.
            reads.subtract(_printed(commands))
        names = {name for name, count in evaluated.items() if reads[name] == count}
        # Within single quotes only an exported variable reaches the inner shell (its reads there are not counted above).
        names |= {name for name in inner if reads[name] == evaluated[name] and name in self._exported()}
        for node in self._nodes("variable_assignment") if names else ():
            assignment = self._assignment(node)
            if assignment.name.value in names and assignment.value is not None:
                found += _string_command(_as_quoted(assignment.value))
        return found

    def _exported(self) -> set:
        """The variables `export` marks (`export X=...`, `export X`)."""
        found = set()
        for node in self._nodes("declaration_command"):
            if node.children and self.text[self._span(node.children[0]).start:self._span(node.children[0]).end] == "export":
                for child in node.children[1:]:
                    target = child.child_by_field_name("name") if child.type == "variable_assignment" else child
                    if target is not None and target.type == "variable_name":
                        found.add(self.text[self._span(target).start:self._span(target).end])
        return found

    def argument_strings(self) -> list[Command]:
        # Each command-flag rule asks: found once per document.
        if self._argument_strings is None:
            self._argument_strings = self._find_argument_strings()
        return self._argument_strings

    def _find_argument_strings(self) -> list[Command]:
        strings = self._argument_string_values()
        if not strings:
            return []
        # Variable -> the program its words are handed to (None: the string is a whole command line).
        programs: dict[str, Optional[Word]] = {}
        # Command lines in single quotes run by `bash -c`: read below, where only exported variables count.
        inner = [w.span for c in self.commands() for w in _evaluated_words(c) if w.quote == "'"]
        for command in self.commands():
            if command.program in _PRINTERS or any(s.start <= command.span.start < s.end for s in inner):
                continue  # `echo $CMD` shows the line; it is run elsewhere
            # `$LAUNCHER $CMD`: the program is the first word of the launcher's string.
            program = _command_program(command, strings)
            for index, word in enumerate(command.words):
                name = _split_read(word)
                if name in strings:
                    programs.setdefault(name, program if index else None)
        for program, names in self._evaluated_reads(strings):
            for name in names:
                if name in strings:
                    programs.setdefault(name, program)
        # `CMD="... $GPT_ARGS ..."`: a string spliced into one that is split is split too.
        pending = list(programs)
        while pending:
            outer = pending.pop()
            for word in strings[outer]:
                name = _split_read(word)
                if name in strings and name not in programs:
                    programs[name] = programs[outer] if programs[outer] is not None else _program_of(strings[outer])
                    pending.append(name)
        found = []
        for name, program in programs.items():
            words = strings[name]
            head = (program,) if program is not None else ()
            found.append(Command((*head, *words), Span(words[0].span.start, words[-1].span.end), False))
        return found

    def _argument_string_values(self) -> dict[str, tuple]:
        """Variable -> the words of the plain double-quoted string it is set to (set once)."""
        values: dict[str, list] = {}
        for node in self._standalone_assignments():
            assignment = self._assignment(node)
            if assignment.value is not None:
                values.setdefault(assignment.name.value, []).append(_argument_words(self.text, assignment.value))
        return {name: sets[0] for name, sets in values.items() if len(sets) == 1 and sets[0]}

    def _evaluated_reads(self, strings: dict) -> list[tuple]:
        """(program, variables) for each command line run through `bash -c`
        or `eval` (quoted either way: the inner shell splits what it expands):
        the variables it reads as words, and the program it runs (the first
        word of the variable it starts with: `bash -c '$LAUNCHER $CMD'`)."""
        found, exported = [], None
        for command in self.commands():
            for word in _evaluated_words(command):
                quoted = _as_quoted(word)
                parts = quoted.value.split()
                if not parts:
                    continue
                if quoted.quote == "'":
                    # Only an exported variable reaches a shell the outer one does not expand for.
                    exported = self._exported() if exported is None else exported
                    visible = lambda name: name in exported  # noqa: E731
                else:
                    visible = lambda name: True  # noqa: E731
                leading = _split_read(Word(parts[0], word.span))
                if leading:
                    program = _program_of(strings[leading]) if leading in strings and visible(leading) else None
                else:
                    program = Word(parts[0], word.span)  # `bash -c "python train.py $ARGS"`
                names = [_split_read(Word(part, word.span)) for part in parts[1:]]
                found.append((program, [name for name in names if name and visible(name)]))
        return found


# Programs that run the rest of their line as a command, here or as a job step.
_RUNNING_WRAPPERS = frozenset({"srun", "nohup", "env", "time", "exec", "timeout", "numactl", "taskset", "stdbuf", "nice"})
_LEADING_VARIABLE = re.compile(r"\"?\$\{?([A-Za-z_]\w*)\}?(?:\s|\"|$)")
# Inside a string read as a command line: anything that is not a plain word.
_NOT_PLAIN = re.compile(r"""['"`\\]|\$\(""")


def _program_of(words: tuple) -> Word:
    """The program a string of a command line runs: its first word that is
    not an assignment or a variable alone (`${OPTIONS_NCCL} deepspeed ...`,
    whose variable holds `NCCL_DEBUG=info ...`)."""
    return next((w for w in words if not (VARIABLE_ALONE.fullmatch(w.value) or _ASSIGNMENT.match(w.value))), words[0])


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


def _command_program(command: Command, strings: dict) -> Optional[Word]:
    """The program a command line runs, through the strings its leading
    variables hold: past those that only set variables (`$OPTIONS_NCCL
    deepspeed ...` where `OPTIONS_NCCL="NCCL_DEBUG=info"`)."""
    for word in command.words:
        name = _split_read(word)
        if name in strings:
            program = _program_of(strings[name])
            if not _ASSIGNMENT.match(program.value):
                return program
        elif not _ASSIGNMENT.match(word.value):
            return word
    return command.words[0] if command.words else None


def _printed(commands: list[Command]) -> Counter:
    """The variables `echo` and `printf` print, as often as they do."""
    printed = Counter()
    for command in commands:
        if command.words and program_name(command.words[0].value) in ("echo", "printf"):
            for word in command.words[1:]:
                printed.update(_ALL_VARIABLES.findall(word.value))
    return printed


_ALL_VARIABLES = re.compile(r"\$\{?([A-Za-z_]\w*)")


def _evaluated_words(command: Command) -> list[Word]:
    """The words ``command`` runs as a command line: `eval`'s arguments,
    the argument of `bash -c` / `sh -c`."""
    words = command.words
    if not words:
        return []
    name = program_name(words[0].value)
    if name == "eval":
        return list(words[1:2]) if len(words) == 2 else []
    if name in _RUNNING_WRAPPERS:
        # `srun $SRUN_ARGS -u bash -c "..."`: the shell the job step runs.
        at = next((i for i, w in enumerate(words) if program_name(w.value) in ("bash", "sh")), None)
        words = words[at:] if at is not None else ()
        name = "bash" if words else ""
    if name in ("bash", "sh") and len(words) >= 3 and words[1].value == "-c":
        return [words[2]]
    return []


# Programs that print a command line rather than run it.
_PRINTERS = frozenset({"echo", "printf"})


def _split_read(word: Word) -> str:
    """The variable a word reads for word splitting (`$ARGS`, `${ARGS}`,
    `$(echo ${ARGS})`, unquoted), or ""."""
    found = _SPLIT_READ.fullmatch(word.value) if not word.quote else None
    return (found.group(1) or found.group(2)) if found is not None else ""


# `$ARGS`, `${ARGS}` and `$(echo ${ARGS})` as a word of their own: split into arguments.
_SPLIT_READ = re.compile(r"\$\{?([A-Za-z_]\w*)\}?|\$\(echo \$\{?([A-Za-z_]\w*)\}?\)")
_BOUNDARY_QUOTE = re.compile(r'(?:(?<=\s)|^)"|"(?=\s|$)')
# Inside double quotes a backslash before a line break joins the lines.
_QUOTED_CONTINUATION = re.compile(r"\\\r?\n")


def _argument_words(text: str, value: Word) -> tuple[Word, ...]:
    """The words of a double-quoted string of plain arguments, placed in the
    file (continued over lines with `\\`); () for any other string."""
    span = value.span
    if span.end - span.start < 2 or text[span.start] != '"' or text[span.end - 1] != '"':
        return ()  # a string with expansions is a word as written: its quotes are in its span
    inner = Span(span.start + 1, span.end - 1)
    source = _QUOTED_CONTINUATION.sub(lambda m: " " * len(m.group()), text[inner.start:inner.end])
    # A quote that closes and reopens the string around a word (`\\n"${DATASETS}" \\`) parts words.
    source = _BOUNDARY_QUOTE.sub(" ", source)
    words = tuple(Word(m.group(), Span(inner.start + m.start(), inner.start + m.end())) for m in re.finditer(r"\S+", source))
    # A word may hold a substitution of its own (`` `pwd`/train.py ``), not quotes or escapes.
    if not words or any(re.search(r"""['"\\]""", w.value) or w.value.count("`") % 2 or w.value.count("$(") != w.value.count(")") for w in words):
        return ()
    return words


def _as_quoted(word: Word) -> Word:
    """A double-quoted string that holds expansions (a word as written, its
    quotes in its value) as the quoted string it is; other words as they are."""
    if not word.quote and len(word.value) >= 2 and word.value[0] == word.value[-1] == '"':
        return Word(word.value[1:-1], word.span, '"')
    return word


def _string_command(word: Word) -> list[Command]:
    """The command line a quoted string holds, its words placed in the file
    (continued over lines with `\\`, which the quotes join)."""
    inner = word.inner
    text = _QUOTED_CONTINUATION.sub(lambda m: " " * len(m.group()), word.value) if word.quote == '"' else word.value
    if not text.strip() or _NOT_PLAIN.search(text) or len(word.value) != inner.end - inner.start:
        return []
    words = tuple(Word(m.group(), Span(inner.start + m.start(), inner.start + m.end())) for m in re.finditer(r"\S+", text))
    return [Command(words, Span(words[0].span.start, words[-1].span.end), True)]
