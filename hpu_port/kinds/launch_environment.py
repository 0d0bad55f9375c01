"""Kind ``launch-environment``: launch lines that need a variable set for Gaudi.

Matches each command that runs one of ``programs`` (`torchrun`, `accelerate
launch`, `python -m torch.distributed.run`; after any wrapper such as `srun`
or `nohup`) in a shell script, a notebook's `!` line or a cluster job spec's
script (YAML: MosaicML `mcli` runs, SkyPilot tasks), or one of
``job-programs`` (`python`) run as the tasks of a job (`srun ... python
train.py`), when the document
neither sets nor mentions a variable of ``set-env``. The fix names the
variables in front of the command (`PT_HPU_LAZY_MODE=1 torchrun ...`), which
sets them for that command and every process it starts. A launch through
``forwarding-launchers`` (`mpirun`, which passes variables to its ranks only
when told to) is reported without a fix, and so is a launch given one of
``report-when``'s flags (a table from flag to the reason, added to the
message: `--fsdp` shards with FSDP, which Gaudi runs in eager mode only),
unless the flag's value turns it off (`--fsdp ""`, `--use_fsdp False`).
A launcher of ``script-launchers`` (`composer`, a name other programs share)
counts only on a line that names a Python script or module.
"""

from __future__ import annotations

from typing import Iterator

from hpu_port.formats import VARIABLE_ALONE, Edit, Span
from hpu_port.kinds import DocumentKind, Match, markdown_table, register_kind, string_list, string_table
from hpu_port.kinds._project_files import project_file
from hpu_port.kinds.command import flag_value, program_name, runs

# Programs that run the rest of their command line here, with this
# environment (`srun torchrun ...`, `nohup deepspeed ...`); a launch handed to
# anything else (a job submitter: `python mason.py -- accelerate launch ...`)
# runs where this script's variables do not go.
# Launchers that start the tasks of a job (`srun python train.py`).
_JOB_LAUNCHERS = frozenset({"srun", "mpirun", "mpiexec"})
_PASSING_WRAPPERS = frozenset({"srun", "nohup", "time", "exec", "env", "stdbuf", "numactl", "taskset", "nice", "ionice", "timeout", "xargs", "mpirun", "mpiexec"})


@register_kind
class LaunchEnvironment(DocumentKind):
    name = "launch-environment"
    KEYS = {"programs": (list, True), "set-env": (dict, True), "forwarding-launchers": (list, False), "job-programs": (list, False),
            "report-when": (dict, False), "script-launchers": (list, False), "report-when-sharding": (str, False)}
    MESSAGE_FIELDS = frozenset({"name", "variable", "value"})
    FORMATS = ("shell", "notebook", "makefile", "apptainer", "yaml")
    EXAMPLE_FILE = "train.sh"

    def build_params(self, table):
        return {
            "programs": string_list(table["programs"], "programs"),
            "set-env": string_table(table["set-env"], "set-env"),
            "forwarding-launchers": string_list(table.get("forwarding-launchers", ["mpirun", "mpiexec"]), "forwarding-launchers"),
            "job-programs": string_list(table.get("job-programs", []), "job-programs"),
            "report-when": string_table(table.get("report-when", {}), "report-when"),
            "script-launchers": string_list(table.get("script-launchers", []), "script-launchers"),
            "report-when-sharding": str(table.get("report-when-sharding", "")),
        }

    def needles(self, rule) -> tuple[str, ...]:
        specs = rule.params["programs"] + rule.params["job-programs"]
        return tuple(sorted({spec.split()[-1].lower() for spec in specs}))

    def describe(self, rule) -> str:
        return markdown_table(("variable", "value"), rule.params["set-env"], code_values=True)

    def match(self, rule, document, options) -> Iterator[Match]:
        variables = rule.params["set-env"]
        if any(name in document.text for name in variables):
            return  # set, exported or chosen already: the script's own way wins
        prefix = " ".join(f"{name}={value}" for name, value in variables.items())
        first, value = next(iter(variables.items()))
        for command in _training_commands(document):
            launcher = next((spec for spec in rule.params["programs"] if _launched_here(command, spec)), None)
            if launcher is None and command.words and program_name(command.words[0].value) in _JOB_LAUNCHERS:
                # `srun -N 4 python train.py`: each task a process of the job.
                launcher = next((spec for spec in rule.params["job-programs"] if _launched_here(command, spec)), None)
            if launcher is None or (launcher in rule.params["script-launchers"] and not _runs_python(command)):
                continue
            message = rule.message.format(name=launcher, variable=first, value=value)
            forwarding = any(runs(command, spec) for spec in rule.params["forwarding-launchers"])
            if forwarding:
                message += f" (MPI passes it to its ranks when told: `-x {first}={value}`)"
            reason = _reason_to_report(command, rule.params["report-when"]) or _sharding_reason(command, document, rule.params["report-when-sharding"])
            if reason:
                message += f"; but {reason}"
            at = _after_time_keyword(command)
            edits = () if forwarding or reason else (Edit(Span(at, at), prefix + " "),)
            yield Match(command.words[0].span, message, edits)


def _runs_python(command) -> bool:
    """Whether a launcher's line names a Python script or module to run
    (`composer -n 8 train.py`, not PHP's `composer install`)."""
    return any(w.value.endswith(".py") or w.value == "-m" for w in command.words[1:])


def _training_commands(document) -> list:
    """The commands that may launch training: in YAML only a cluster job's
    script (an `mcli` run's `command:`, a SkyPilot task's `run:`), not a CI
    step, whose runner is not a Gaudi machine."""
    if document.format != "yaml":
        return document.commands()
    regions = getattr(document, "job_regions", [])
    return [c for c in document.commands() if any(r.start <= c.span.start < r.end for r in regions)]


def _reason_to_report(command, flags: dict) -> str:
    """The reason of the first of ``flags`` the command gives, switched on."""
    for index, word in enumerate(command.words):
        flag = word.value.split("=", 1)[0]
        if flag in flags and not _switched_off(flag_value(command.words, index)):
            return flags[flag]
    return ""


def _sharding_reason(command, document, reason: str) -> str:
    """``reason``, naming the script, when the command runs a script of the
    project that shards its model with FSDP (``ProjectFacts.sharding_files``),
    found from the document's folder or one above it up to the project's root."""
    facts = document.facts
    if not reason or facts is None:
        return ""
    script = next((w.value for w in command.words[1:] if w.value.endswith(".py")), None)
    if script is None or project_file(document, script, facts.sharding_files) is None:
        return ""
    return reason.format(script=script)


def _switched_off(value) -> bool:
    return value is not None and value.value.strip().lower() in ("", "false", "no", "0")


def _after_time_keyword(command) -> int:
    """Where an environment prefix goes: after bash's `time` keyword (and
    `-p`), which times the whole pipeline; `X=1 time cmd` would run the
    external `/usr/bin/time` instead, which many containers lack."""
    words = list(command.words)
    index = 0
    if words and words[0].value == "time":
        index = 1
        while index < len(words) and words[index].value.startswith("-"):
            index += 1
    return words[index].span.start if 0 < index < len(words) else command.span.start


def _launched_here(command, spec: str) -> bool:
    """Whether ``command`` runs the launcher ``spec`` itself, or through
    wrappers that pass it this environment."""
    if not runs(command, spec):
        return False
    first = spec.split()[0]
    wrapped = False
    for word in command.words:
        name = program_name(word.value)
        if name == first or name.endswith("/" + first):
            return True
        if name in _PASSING_WRAPPERS:
            wrapped = True
        elif VARIABLE_ALONE.fullmatch(word.value) and not wrapped:
            pass  # `${OPTIONS_NCCL} deepspeed ...` in an evaluated string: variables set for the launch
        elif not (wrapped or word.value.startswith("-") or "=" in word.value or word.value.isdigit()):
            return False  # another program runs first (a job submitter): it decides what reaches the launch
        # else: a wrapper's option or its value (`srun -p ${PARTITION}`, `timeout 3600`)
    return False
