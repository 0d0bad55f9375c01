"""Shell and job scripts, parsed with tree-sitter's bash grammar.

tree-sitter gives every node its exact byte range and copes with what real
scripts hold (arrays, `$(...)`, `$((...))`, here-documents, `case`,
functions). A script it cannot parse without error is not ported (one line
says where); nothing is guessed from lines. Job-scheduler directives
(`#SBATCH --gres=gpu:4`) are comments to bash, so they are read here as
commands of their own, named after their marker.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from hpu_port.formats import Assignment, Command, Document, Entry, FormatError, Span, Word, program_name
from hpu_port.formats.shell_strings import CommandStrings

# A command with one of these above it is not a statement of its own: what it
# prints is read, or its status decides something.
_CAPTURING = frozenset({"command_substitution", "process_substitution", "pipeline", "test_command", "arithmetic_expansion"})
_DIRECTIVE = re.compile(r"#(SBATCH|PBS|BSUB|\$)[ \t]+(.*)")
_SIMPLE_WORD = frozenset({"word", "number"})
# Statements that a suppression comment covers as a whole (all their lines),
# unless they hold a compound statement, whose own statements count instead.
_STATEMENTS = frozenset({
    "command", "declaration_command", "unset_command", "variable_assignment", "variable_assignments", "pipeline",
    "list", "redirected_statement", "negated_command", "test_command",
})
_COMPOUND = frozenset({
    "if_statement", "for_statement", "c_style_for_statement", "while_statement", "case_statement",
    "compound_statement", "subshell", "function_definition",
})
# Children of a command that are not among its words.
_NOT_WORDS = frozenset({"variable_assignment", "file_redirect", "herestring_redirect", "heredoc_redirect", "comment"})


class ShellDocument(CommandStrings, Document):
    format = "shell"
    language = "sh"
    finds_comments = True

    def __init__(self, text: str, path: str, root, data: bytes, directives: bool = True) -> None:
        super().__init__(text, path)
        self._root = root
        self._data = data
        self._chars = _char_offsets(text, data)
        self._read_directives = directives
        self._commands: Optional[list[Command]] = None
        self._assignments: Optional[list[Assignment]] = None
        self._entries: Optional[list[Entry]] = None
        self._script_variables: Optional[list[Assignment]] = None
        self._references: Optional[list[Word]] = None
        self._argument_strings: Optional[list[Command]] = None
        self._comments: Optional[list[Span]] = None
        self._all: Optional[list[Span]] = None  # every comment node, job directives too
        self._directive_commands: Optional[list[Command]] = None
        self._directive_comments: list[Span] = []

    # -- views -----------------------------------------------------------------

    def commands(self) -> list[Command]:
        if self._commands is None:
            found = [self._command(node, plain) for node, plain in self._command_nodes()]
            found += [self._array(node) for node in self._nodes("array")]
            found += self._directives()[0]
            found += self._evaluated_strings(found)
            self._commands = sorted(found, key=lambda c: c.span.start)
        return self._commands

    def script_variables(self) -> list[Assignment]:
        if self._script_variables is None:
            self._script_variables = [self._assignment(node) for node in self._standalone_assignments()]
        return self._script_variables

    def _standalone_assignments(self) -> Iterator:
        """`X=...` and `export X=...` as statements, not a command's prefix."""
        for node in self._nodes("variable_assignment"):
            if node.parent is None or node.parent.type != "command":
                yield node

    def assignments(self) -> list[Assignment]:
        if self._assignments is None:
            found = [self._assignment(node) for node in self._nodes("variable_assignment")]
            found += [a for command in self.commands() for a in container_env(command) + env_prefix(command)]
            self._assignments = sorted(found, key=lambda a: a.name.span.start)
        return self._assignments

    def references(self) -> list[Word]:
        if self._references is None:
            found = []
            for node_type in ("simple_expansion", "expansion"):
                for node in self._nodes(node_type):
                    found += [self._word(c) for c in node.named_children if c.type == "variable_name"]
            self._references = found
        return self._references

    def requirements(self) -> list[Word]:
        return installed(self.commands())

    def images(self) -> list[Word]:
        return container_images(self.commands())

    def entries(self) -> list[Entry]:
        if self._entries is None:
            self._entries = override_entries(self.commands()) + self._written_configs()
        return self._entries

    def _written_configs(self) -> list[Entry]:
        """The entries of configs the script writes with a here-document (``formats.heredocs``)."""
        from hpu_port.formats.heredocs import config_entries, writes_a_file

        found = []
        for number, node in enumerate(self._nodes("heredoc_redirect")):
            statement = node.parent
            command = next((c for c in statement.children if c.type == "command"), None) if statement is not None else None
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            if command is None or body is None:
                continue
            redirects = [c for c in (*statement.children, *node.children) if c.type == "file_redirect"]
            targets = [self.text[self._span(r).start:self._span(r).end].lstrip(">| ") for r in redirects]
            words = [self._word(c).value for c in command.children if c.type not in _NOT_WORDS]
            target = writes_a_file(program_name(words[0]) if words else "", words[1:], targets)
            if target is None:
                continue
            expansions = [self._span(c) for c in body.children if c.type in ("simple_expansion", "expansion", "command_substitution")]
            found += config_entries(self.text, self._span(body), target, expansions, 1 + number)
        return found

    def comment_spans(self) -> list[Span]:
        """Comments; a job directive (`#SBATCH --gres=gpu:1`) is a command
        here, and only a comment after it (`# ...`) is one."""
        if self._comments is None:
            directives, after = self._directives()
            taken = {command.span for command in directives}
            found = [span for span in self._all_comments() if span not in taken]
            self._comments = sorted(found + after, key=lambda span: span.start)
        return self._comments

    def _all_comments(self) -> list[Span]:
        if self._all is None:
            self._all = [self._span(node) for node in self._nodes("comment")]
        return self._all

    def statements(self) -> list[Span]:
        found, stack = [], [self._root]
        while stack:
            node = stack.pop()
            if node.type in _STATEMENTS and not _holds_compound(node):
                if node.start_point[0] < node.end_point[0]:
                    found.append(self._span(node))
                continue
            stack.extend(node.children)
        return found

    # -- nodes -----------------------------------------------------------------

    def _nodes(self, node_type: str) -> Iterator:
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.type == node_type:
                yield node
            stack.extend(reversed(node.children))

    def _command_nodes(self) -> Iterator[tuple]:
        """Each command node, and whether it stands as a statement of its own.

        Told on the way down: asking each command's ancestors (`node.parent`,
        which tree-sitter finds from the root again) takes time that grows
        with the square of the depth, and `a && b && ...` nests one level
        per command (a minute for 1,400 of them)."""
        stack = [(self._root, True)]
        while stack:
            node, plain = stack.pop()
            if node.type == "command":
                yield node, plain
            stack.extend((child, plain and _plain_inside(node, child)) for child in reversed(node.children))

    def _span(self, node) -> Span:
        return Span(self._chars(node.start_byte), self._chars(node.end_byte))

    def _word(self, node) -> Word:
        span = self._span(node)
        raw = self.text[span.start:span.end]
        if node.type == "raw_string":
            return Word(raw[1:-1], span, "'")
        if node.type == "string" and all(c.type in ('"', "string_content") for c in node.children):
            return Word(raw[1:-1], span, '"')
        if node.type in _SIMPLE_WORD:
            return Word(re.sub(r"\\(.)", r"\1", raw), span)
        return Word(raw, span)  # expansions and concatenations: as written

    def _command(self, node, plain: bool) -> Command:
        words = [
            self._word(child.named_children[0] if child.type == "command_name" else child)
            for child in node.named_children
            if child.type not in _NOT_WORDS
        ]
        return Command(tuple(words), self._span(node), plain)

    def _array(self, node) -> Command:
        """A bash array (`ARGS=(--fp16 --output_dir out)`) read as the
        arguments of a command line whose program is not known (an empty first
        word): it is usually expanded into one later (`"${ARGS[@]}"`). Not
        plain: where it ends up is not known here."""
        span = self._span(node)
        program = Word("", Span(span.start, span.start))
        words = [self._word(child) for child in node.named_children if child.type != "comment"]
        return Command((program, *words), span, False)

    def _assignment(self, node) -> Assignment:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        return Assignment(self._word(name), self._word(value) if value is not None else None)

    def _directives(self) -> tuple[list[Command], list[Span]]:
        """The job directives, and the comments after them."""
        if not self._read_directives:
            return [], []
        if self._directive_commands is None:
            found, after = [], []
            for span in self._all_comments():
                match = _DIRECTIVE.match(self.text, span.start, span.end)
                if match is None:
                    continue
                words = [Word(match.group(0)[: len(match.group(1)) + 1], Span(span.start, span.start + len(match.group(1)) + 1))]
                for part in re.finditer(r"\S+", match.group(2)):
                    start = match.start(2) + part.start()
                    if part.group().startswith("#"):
                        after.append(Span(start, span.end))  # a comment after the directive
                        break
                    words.append(Word(part.group(), Span(start, start + len(part.group()))))
                found.append(Command(tuple(words), span, True))
            self._directive_commands, self._directive_comments = found, after
        return self._directive_commands, self._directive_comments


def container_env(command: Command) -> list[Assignment]:
    """`-e NAME=value` / `--env NAME=value` of `docker run` and the like."""
    if command.program not in ("docker", "podman", "nvidia-docker"):
        return []
    found = []
    words = command.words
    for index, word in enumerate(words[:-1]):
        if word.value in ("-e", "--env") and "=" in words[index + 1].value and not words[index + 1].quote:
            given = words[index + 1]
            found.append(_split_assignment(given, given.value.index("=")))
    return found


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_ENV_TAKES_VALUE = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})


def env_prefix(command: Command) -> list[Assignment]:
    """`NAME=value` words that `env` sets for the program it runs
    (`env CUDA_VISIBLE_DEVICES=0 python train.py`)."""
    if command.program != "env":
        return []
    found, words, index = [], command.words, 1
    while index < len(words):
        word = words[index]
        if word.value in _ENV_TAKES_VALUE:
            index += 2
            continue
        if word.value.startswith("-"):
            index += 1
            continue
        match = _ENV_NAME.match(word.value)
        if match is None or word.quote:
            break
        found.append(_split_assignment(word, match.end() - 1))
        index += 1
    return found


def _split_assignment(word: Word, equals: int) -> Assignment:
    """`NAME=value` as a name and a value; the value keeps its quotes (`X="a b"`)."""
    start = word.span.start
    name = Word(word.value[:equals], Span(start, start + equals))
    raw_start = start + equals + 1
    value = word.value[equals + 1:]
    quote = value[0] if len(value) > 1 and value[0] in "'\"" and value[-1] == value[0] else ""
    return Assignment(name, Word(value[1:-1] if quote else value, Span(raw_start, word.span.end), quote))


def _holds_compound(node) -> bool:
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.type in _COMPOUND:
            return True
        stack.extend(child.children)
    return False


def _plain_inside(parent, child) -> bool:
    """Whether a command in ``child`` may stand on its own as far as
    ``parent`` tells: not when what it prints is read, its output redirected,
    or its status is a condition."""
    if parent.type in _CAPTURING or parent.type == "redirected_statement":
        return False
    return not (parent.type in ("if_statement", "while_statement") and child == parent.child_by_field_name("condition"))


def _char_offsets(text: str, data: bytes):
    """Byte offset -> character offset (the identity for ASCII text)."""
    if len(data) == len(text):
        return lambda offset: offset
    table, position = [], 0
    for char in text:
        table.extend([position] * len(char.encode("utf-8")))
        position += 1
    table.append(position)
    return lambda offset: table[offset]


def _parser():
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError as exc:  # pragma: no cover - the dependency is declared
        raise FormatError(f"the shell parser is not installed ({exc.name})") from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


_PARSER = None
# A backslash that continues the last line into the end of the file.
_CONTINUED_AT_END = re.compile(rb"\\(\r?\n)?[ \t\r\n]*\Z")


def parse(text: str, path: str = "", file_type: str = "shell", directives: bool = True) -> ShellDocument:
    """``directives``: read job-scheduler directives (`#SBATCH ...`) as commands
    (a script run by a job scheduler); else they are comments."""
    global _PARSER
    if _PARSER is None:
        _PARSER = _parser()
    data = text.encode("utf-8")
    read = data
    tree = _PARSER.parse(read)
    if tree.root_node.has_error and _CONTINUED_AT_END.search(read):
        # The shell reads a line continuation at the end of the file as the
        # end of the command; the parser needs the backslash gone (a space
        # in its place keeps every offset).
        end = _CONTINUED_AT_END.search(read).start()
        read = read[:end] + b" " + read[end + 1:]
        tree = _PARSER.parse(read)
    if tree.root_node.has_error and b"<<" in read:
        # `<<com ... com` with no command: bash reads it as a block comment,
        # the parser does not; blanked (newlines kept), every offset stays.
        blanked = _without_bare_heredocs(read)
        if blanked != read:
            read = blanked
            tree = _PARSER.parse(read)
    if tree.root_node.has_error and b"`#" in read:
        # `` `# a comment` \`` among a command's continued lines: bash runs a
        # command substitution that holds only a comment (nothing); the parser
        # reads the comment to the end of the line. Blanked, offsets kept.
        blanked = _COMMENT_SUBSTITUTION.sub(lambda m: b" " * len(m.group()), read)
        if blanked != read:
            read = blanked
            tree = _PARSER.parse(read)
    if tree.root_node.has_error:
        raise FormatError("syntax the shell parser does not understand", _first_error_line(tree.root_node))
    return ShellDocument(text, path, tree.root_node, data, directives)


_COMMENT_SUBSTITUTION = re.compile(rb"(?<=[ \t])`#[^`\r\n]*`(?=[ \t]*\\?\r?$)", re.MULTILINE)


# A line that opens a here-document with no command before it (`<<com`, `<<-'END'`).
_BARE_HEREDOC_START = re.compile(rb"[ \t]*<<(-?)[ \t]*(['\"]?)(\w+)\2[ \t]*\r?\n?\Z")


def _without_bare_heredocs(data: bytes) -> bytes:
    """``data`` with each command-less here-document, from its `<<word` line
    to its closing word, blanked but for line ends; one pass over the lines.
    An unclosed one is left as it is (the parser reports it)."""
    lines = data.splitlines(keepends=True)
    out, index = [], 0
    while index < len(lines):
        start = _BARE_HEREDOC_START.match(lines[index])
        if start is None:
            out.append(lines[index])
            index += 1
            continue
        word = start.group(3)
        end = next((i for i in range(index + 1, len(lines)) if lines[i].rstrip(b"\r\n").lstrip(b"\t").rstrip(b" \t") == word), None)
        if end is None:
            out.extend(lines[index:])
            break
        out.extend(re.sub(rb"[^\r\n]", b" ", line) for line in lines[index:end + 1])
        index = end + 1
    return b"".join(out)


# Whole statements: where the parser gives up on the file as a whole, the
# first child of its error node that is not one is where the problem starts.
_WHOLE_STATEMENTS = frozenset({
    "comment", "command", "declaration_command", "variable_assignment", "variable_assignments", "redirected_statement",
    "if_statement", "for_statement", "c_style_for_statement", "while_statement", "case_statement", "function_definition",
    "pipeline", "list", "subshell", "compound_statement", "negated_command", "test_command", "unset_command",
})


def _first_error_line(root) -> Optional[int]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" and node.parent is None:
            # The whole file failed (an unclosed `${` or quote): not line 1, but
            # where the first piece that is no statement starts.
            inside = next((c for c in node.children if c.type not in _WHOLE_STATEMENTS), node)
            return inside.start_point[0] + 1
        if node.type == "ERROR" or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.type == "ERROR" or c.is_missing]))
    return None


# `pip install` options that take a value (the next word, unless given with `=`).
_PIP_VALUED = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "-t", "--target", "--prefix", "--root", "--upgrade-strategy", "--python-version",
    "--platform", "--implementation", "--abi", "--no-binary", "--only-binary", "--trusted-host", "--cache-dir",
    "--src", "-C", "--config-settings", "--global-option", "--log", "--progress-bar", "--proxy", "--timeout",
    "--retries", "--exists-action", "--cert", "--client-cert", "--python", "--index", "--default-index",
})
_CONDA_VALUED = frozenset({"-c", "--channel", "-n", "--name", "-p", "--prefix", "--file"})
_INSTALLERS = {"pip": _PIP_VALUED, "conda": _CONDA_VALUED, "mamba": _CONDA_VALUED, "micromamba": _CONDA_VALUED}


def installed(commands: list[Command]) -> list[Word]:
    """The packages that `pip install`, `python -m pip install`, `uv pip
    install` and `conda install` commands name (options and their values,
    paths and URLs left out, but for `git+` ones, named by their repository)."""
    found = []
    for command in commands:
        words = command.words
        for index in range(len(words) - 1):
            tool = _installer(words[index].value)
            if tool is not None and words[index + 1].value == "install":
                found += _packages(words[index + 2:], _INSTALLERS[tool])
                break
    return found


def _installer(word: str) -> Optional[str]:
    name = word.rsplit("/", 1)[-1]
    if re.fullmatch(r"pip[0-9.]*", name):
        return "pip"
    return name if name in _INSTALLERS else None


def _packages(words: tuple, valued: frozenset) -> list[Word]:
    found, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word.value.startswith("-"):
            skip = word.value in valued
            continue
        if word.value[:1].isalnum() and "://" not in word.value and "/" not in word.value.split("@")[0]:
            found.append(word)
        elif word.value.startswith("git+"):
            found.append(word)  # `pip install git+https://github.com/NVlabs/nvdiffrast/`: the repository names it
    return found


# `docker run` flags that take no value: the word after them is not theirs.
_DOCKER_SWITCHES = frozenset({
    "--rm", "-d", "-i", "-t", "-it", "-ti", "-itd", "--privileged", "--init", "--detach", "--interactive", "--tty",
    "--read-only", "-P", "--publish-all", "--no-healthcheck", "--quiet", "-q", "--all-tags", "-a",
})
_DOCKER_IMAGE_VERBS = frozenset({"run", "pull", "create"})
_IMAGE_PREFIX = "docker://"
_IMAGE_FLAGS = ("--container-image", "--image")


def container_images(commands: list[Command]) -> list[Word]:
    """The images commands start or fetch: `docker run|pull|create IMAGE`,
    `--build-arg NAME=IMAGE`, `--container-image=IMAGE` (Slurm's pyxis),
    `docker://IMAGE` (Apptainer, Singularity, enroot)."""
    found = []
    for command in commands:
        words = command.words
        for index, word in enumerate(words):
            if word.value.startswith(_IMAGE_PREFIX):
                found.append(_tail(word, len(_IMAGE_PREFIX)))
            elif word.value.startswith(tuple(flag + "=" for flag in _IMAGE_FLAGS)):
                found.append(_tail(word, word.value.index("=") + 1))
            elif word.value in _IMAGE_FLAGS and index + 1 < len(words):
                found.append(words[index + 1])
            elif word.value == "--build-arg" and index + 1 < len(words) and "=" in words[index + 1].value:
                found.append(_tail(words[index + 1], words[index + 1].value.index("=") + 1))
        verb = next((i for i in range(1, len(words)) if words[i - 1].value.rsplit("/", 1)[-1] in ("docker", "podman")), None)
        if verb is not None and words[verb].value in _DOCKER_IMAGE_VERBS:
            image = _first_argument(words[verb + 1:])
            if image is not None:
                found.append(image)
    return found


def _first_argument(words: tuple) -> Optional[Word]:
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.value.startswith("-"):
            skip = "=" not in word.value and word.value not in _DOCKER_SWITCHES
        else:
            return word
    return None


def _tail(word: Word, cut: int) -> Word:
    """The part of ``word`` after its first ``cut`` characters (exact only when unquoted)."""
    value = word.value[cut:]
    if word.quote or word.span.end - word.span.start != len(word.value):
        return Word(value, word.span, "?")  # quoted or escaped: the source is not the value
    return Word(value, Span(word.span.end - len(value), word.span.end))


# A Hydra / OmegaConf override on a command line: `trainer.device=cuda`,
# `+model.attn_impl=flash`, `++optim.lr=1e-4`.
_OVERRIDE = re.compile(r"\+{0,2}([A-Za-z_][\w-]*(?:\.[A-Za-z_0-9][\w-]*)*)=(.*)", re.DOTALL)
_OVERRIDE_PROGRAMS = frozenset({"python", "torchrun", "deepspeed", "accelerate", "srun", "ray", "mpirun", "uv", "poetry"})


def override_entries(commands: list[Command]) -> list[Entry]:
    """The config overrides that training commands pass (`python -m
    verl.trainer.main_ppo trainer.device=cuda`), as entries of a config: the
    key's parts, and the value in its own span."""
    found = []
    for command in commands:
        if not command.words or program_name(command.words[0].value) not in _OVERRIDE_PROGRAMS:
            continue
        for word in command.words[1:]:
            match = _OVERRIDE.fullmatch(word.value)
            if match is None or word.quote or word.span.end - word.span.start != len(word.value):
                continue  # quoted or escaped: the source is not the value
            key, value = match.group(1), match.group(2)
            start = word.span.start
            name = key.rsplit(".", 1)[-1]
            key_start = start + match.start(1) + len(key) - len(name)
            value_span = Span(start + match.start(2), word.span.end)
            found.append(Entry(tuple(key.split(".")), Word(name, Span(key_start, key_start + len(name))),
                               Word(value, value_span), value_span, "scalar", value))
    return found
