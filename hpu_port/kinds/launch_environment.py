"""Kind ``launch-environment``: launch lines that need a variable set for Gaudi.

Matches each command that runs one of ``programs`` (`torchrun`, `accelerate
launch`, `python -m torch.distributed.run`; after any wrapper such as `srun`
or `nohup`) in a shell script or a notebook's `!` line, when the document
neither sets nor mentions a variable of ``set-env``. The fix names the
variables in front of the command (`PT_HPU_LAZY_MODE=1 torchrun ...`), which
sets them for that command and every process it starts. A launch through
``forwarding-launchers`` (`mpirun`, which passes variables to its ranks only
when told to) is reported without a fix.
"""

from __future__ import annotations

from typing import Iterator

from hpu_port.formats import Edit, Span
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_list, string_table
from hpu_port.kinds.command import program_name, runs

# Programs that run the rest of their command line here, with this
# environment (`srun torchrun ...`, `nohup deepspeed ...`); a launch handed to
# anything else (a job submitter: `python mason.py -- accelerate launch ...`)
# runs where this script's variables do not go.
_PASSING_WRAPPERS = frozenset({"srun", "nohup", "time", "exec", "env", "stdbuf", "numactl", "taskset", "nice", "ionice", "timeout", "xargs", "mpirun", "mpiexec"})


@register_kind
class LaunchEnvironment(DocumentKind):
    name = "launch-environment"
    KEYS = {"programs": (list, True), "set-env": (dict, True), "forwarding-launchers": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "variable", "value"})
    FORMATS = ("shell", "notebook", "makefile", "apptainer")
    EXAMPLE_FILE = "train.sh"

    def build_params(self, table):
        return {
            "programs": string_list(table["programs"], "programs"),
            "set-env": string_table(table["set-env"], "set-env"),
            "forwarding-launchers": string_list(table.get("forwarding-launchers", ["mpirun", "mpiexec"]), "forwarding-launchers"),
        }

    def needles(self, rule) -> tuple[str, ...]:
        return tuple(sorted({spec.split()[-1].lower() for spec in rule.params["programs"]}))

    def describe(self, rule) -> str:
        return markdown_table(("variable", "value"), rule.params["set-env"], code_values=True)

    def match(self, rule, document, options) -> Iterator[Match]:
        variables = rule.params["set-env"]
        if any(name in document.text for name in variables):
            return  # set, exported or chosen already: the script's own way wins
        prefix = " ".join(f"{name}={value}" for name, value in variables.items())
        first, value = next(iter(variables.items()))
        for command in document.commands():
            launcher = next((spec for spec in rule.params["programs"] if _launched_here(command, spec)), None)
            if launcher is None:
                continue
            message = rule.message.format(name=launcher, variable=first, value=value)
            forwarding = any(runs(command, spec) for spec in rule.params["forwarding-launchers"])
            at = command.span.start
            edits = () if forwarding else (Edit(Span(at, at), prefix + " "),)
            yield Match(command.words[0].span, message, edits)


def _launched_here(command, spec: str) -> bool:
    """Whether ``command`` runs the launcher ``spec`` itself, or through
    wrappers that pass it this environment."""
    if not runs(command, spec):
        return False
    first = spec.split()[0]
    for word in command.words:
        name = program_name(word.value)
        if name == first or name.endswith("/" + first):
            return True
        if word.value.startswith("-") or "=" in word.value or word.value.isdigit():
            continue  # a wrapper's option (`srun -N 2`, `timeout 3600`)
        if name not in _PASSING_WRAPPERS:
            return False
    return False
