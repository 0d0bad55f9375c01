"""Run the engine over paths: discover, read, port, and (when asked) write back."""

from __future__ import annotations

import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

from hpu_port import __version__, filetypes, parallel
from hpu_port._compat import blake2b
from hpu_port.cache import Cache
from hpu_port.device.pins import CONDA_ENVIRONMENT_FILES
from hpu_port.launch_flags import flag_moved_launches
from hpu_port.files import (
    NotWritten,
    dependency_files_of_projects,
    discover,
    read_source,
    replace_file,
    shown_path,
    text_problem,
    write_into,
)
from hpu_port.results import FileResult
from hpu_port.settings import RuleSet
from hpu_port.suppressions import code_problems


@dataclass
class RunSummary:
    results: list[FileResult] = field(default_factory=list)
    # Advice codes that were selected by code (see RuleSetResolver).
    asked_advice: frozenset = frozenset()
    # Files found but not examined: of a type no selected rule reads (by
    # type), or of a type hpu-port does not read at all (by suffix).
    not_examined: Counter = field(default_factory=Counter)
    # Readable files that `.gitignore` patterns hid outside a git checkout.
    hidden_by_gitignore: int = 0

    @property
    def examined(self) -> Counter:
        """Files examined, by file type."""
        return Counter(r.file_type for r in self.results if not r.failed)
    # Paths given to the run under which nothing was examined, with the reason.
    empty_paths: list[tuple[str, str]] = field(default_factory=list)
    # Problems worth a warning that do not stop a file: "path:line: problem".
    warnings: list[str] = field(default_factory=list)
    # The paths the run was given, resolved: in place, only files inside them are written.
    roots: list[str] = field(default_factory=list)

    @property
    def blocking(self) -> int:
        """Findings that make `check` fail: all but advice nobody asked for."""
        return sum(
            1 for r in self.results for f in r.findings if f.category != "advice" or f.code in self.asked_advice
        )

    @property
    def scanned(self) -> int:
        return len(self.results)

    @property
    def changed(self) -> list[FileResult]:
        return [r for r in self.results if r.changed and not r.failed]

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.failed]

    @property
    def findings(self) -> int:
        return sum(len(r.findings) for r in self.results)

    @property
    def manual(self) -> int:
        return sum(1 for r in self.results for f in r.findings if f.needs_person)


# The files that pin the project's dependencies (see ``ProjectFacts.pins``).
DEPENDENCY_TYPES = frozenset({filetypes.REQUIREMENTS, filetypes.PYPROJECT, filetypes.SETUP_CFG})


def is_dependency_file(path: str, file_type: Optional[str]) -> bool:
    return file_type in DEPENDENCY_TYPES or os.path.basename(path) in CONDA_ENVIRONMENT_FILES


def _read(path: str) -> Union[bytes, FileResult]:
    try:
        return read_source(path)
    except IsADirectoryError:
        return FileResult(path=path, error="is a directory")
    except OSError as exc:
        return FileResult(path=path, error=f"cannot read: {exc.strerror or exc}")


RuleSetFor = Callable[[Path], Optional[RuleSet]]

# A run on this many Python files or fewer, each named (no folder), reads the
# project modules they import for its facts: a pre-commit hook's size.
SHORT_RUN_FILES = 50


Progress = Callable[[int, int, str], None]


def run(
    paths: list[str],
    rulesets: Union[RuleSet, RuleSetFor],
    apply: bool = True,
    progress: Optional[Progress] = None,
    jobs: int = 1,
    cache: Optional[Cache] = None,
) -> RunSummary:
    """Port every file under ``paths``; results come in a stable (sorted) order.

    ``rulesets`` is one RuleSet for every file, or a function giving each
    file's RuleSet from its configuration (None: the file is excluded). All
    of them are resolved before any file is read, so that a configuration or
    rule-file error stops the run before it starts. ``jobs`` > 1 ports the
    files that need parsing in that many processes; ``cache`` answers for
    files whose bytes and settings it has seen before.
    """
    ruleset_for = rulesets if callable(rulesets) else (lambda path: rulesets)
    # Resolved before anything is read: a link swapped in later cannot move them.
    roots = [os.path.realpath(path) for path in paths]
    planned = []
    found = discover(paths)
    not_examined = Counter(found.passed_over)
    # The dependency files, read for the project facts whatever rules are
    # selected: advice that depends on a pinned version must not change with them.
    dependency_paths = []
    for source in found:
        if is_dependency_file(source.path, source.file_type) and not source.error:
            dependency_paths.append(source.path)
        ruleset = None if source.error else ruleset_for(Path(source.path))
        if ruleset is not None and not ruleset.reads(source.file_type):
            not_examined[source.file_type] += 1
            continue  # no selected rule reads files of this type
        if source.error or ruleset is not None:
            planned.append((source, ruleset))
    # A run on a few files reads the pins of the project they belong to too.
    seen = {os.path.realpath(path) for path in dependency_paths}
    dependency_paths += [path for path in dependency_files_of_projects(paths, is_dependency_file) if os.path.realpath(path) not in seen]
    results: list[Optional[FileResult]] = [None] * len(planned)
    unanswered: list[Task] = []
    done = 0

    def answered(index: int, result: FileResult) -> None:
        nonlocal done
        results[index] = result
        done += 1
        if progress is not None:
            progress(done, len(planned), result.path)

    sources = [_read_planned(entry) for entry, _ in planned]
    pool = []

    def start_workers() -> bool:
        # A cold run over a large tree ports most of its files in workers:
        # they begin on them while the facts are found, not after.
        if jobs > 1 and sum(len(s) for s in sources if isinstance(s, bytes)) >= parallel.SCREEN_IN_POOL_BYTES:
            pool.append(parallel.Pool([ruleset for _, ruleset in planned if ruleset is not None], jobs))
        return bool(pool)

    try:
        imported = _imported_by_a_short_run(paths, planned, sources)
        facts_later = _attach_project_facts(planned, sources, cache, start_workers, dependency_paths, imported)
        # Results cached for this project are keyed by its facts: with the
        # facts still to find, there are none to look up.
        lookups = cache if facts_later is None else None
        for index, ((entry, ruleset), source) in enumerate(zip(planned, sources)):
            result = _answer(entry, source, ruleset, apply, lookups)
            if isinstance(result, FileResult):
                answered(index, result)
            else:
                unanswered.append(Task(index, entry.path, result, ruleset))
        # With many files left, the port screens them (in the workers, which
        # screening here would keep waiting): a second screen here would
        # read each file that needs a port twice.
        work = unanswered
        total = sum(len(t.source) for t in unanswered)
        if total < parallel.SCREEN_IN_POOL_BYTES:
            if facts_later is not None:  # results stored here are keyed by them
                facts_later()
                facts_later = None
            # In a short run (a pre-commit hook's few files) loading libcst costs
            # more than reading the code twice with the standard parser: the
            # screen then reads the code too, as the port would.
            deep = total < parallel.POOL_MIN_BYTES
            work = []
            for task in unanswered:
                if _needs_parsing(task, deep):
                    work.append(task)
                else:
                    result = FileResult(path=task.path, source=task.source)
                    if cache is not None:
                        cache.store(task.ruleset, apply, result)
                    answered(task.index, result)
        for task, result in parallel.port_all(work, apply, jobs, pool[0] if pool else None, facts_later):
            result.source = task.source
            results[task.index] = result
            if cache is not None:
                cache.store(task.ruleset, apply, result)
            done += 1
            if progress is not None:
                progress(done, len(planned), task.path)
    except BaseException:
        for workers in pool:
            workers.close()  # never left running
        raise
    flag_moved_launches(planned, results, sources, apply, cache)
    if cache is not None:
        cache.save()
    summary = RunSummary(
        not_examined=not_examined,
        hidden_by_gitignore=found.hidden_by_gitignore,
        empty_paths=paths_with_nothing(paths, [s.path for s in found], [s.path for s, _ in planned]),
        warnings=list(found.links_not_followed),
        roots=roots,
    )
    for result, (entry, ruleset) in zip(results, planned):
        if ruleset is not None:
            result.rules = tuple(ruleset.rules)
            result.mode = ruleset.options.mode
        result.file_type = entry.file_type
        summary.results.append(result)
    return summary


def paths_with_nothing(paths: list[str], found: list[str], planned: list[str]) -> list[tuple[str, str]]:
    """The given paths under which no file was examined, each with why:
    nothing there hpu-port ports, or all of it excluded by the configuration."""
    empty = []
    for raw in map(shown_path, paths):  # discovery names a path that is not UTF-8 as it prints
        if _any_under(raw, planned):
            continue
        if _any_under(raw, found):
            empty.append((raw, "every file there is excluded by the configuration or no selected rule reads it"))
        else:
            empty.append((raw, "no file there that hpu-port ports"))
    return empty


def _any_under(raw: str, paths: list[str]) -> bool:
    """Whether one of ``paths`` (as discovery spells them) is ``raw`` or lies under it."""
    root = Path(raw)
    if str(root) in paths or raw in paths:
        return True
    if not root.is_dir():
        return False
    if str(root) == ".":  # walking "." gives paths relative to it
        return any(not os.path.isabs(path) for path in paths)
    prefix = str(root).rstrip("/\\") + os.sep
    return any(path.startswith(prefix) for path in paths)


@dataclass
class Task:
    """A file that has to be parsed: where its result goes, and what it needs."""

    index: int
    path: str
    source: bytes
    ruleset: RuleSet


def _read_planned(entry) -> Union[FileResult, bytes]:
    if entry.error:
        return FileResult(path=entry.path, error=entry.error)
    return _read(entry.path)


def _python_sources(planned: list, sources: list) -> dict:
    """path -> bytes of the run's Python files that a rule set reads."""
    return {
        entry.path: source
        for (entry, ruleset), source in zip(planned, sources)
        if ruleset is not None and isinstance(source, bytes) and entry.file_type == filetypes.PYTHON
    }


def _imported_by_a_short_run(paths: list, planned: list, sources: list) -> dict:
    """For a run on a few files (a pre-commit hook names each one), the
    project modules they import, read for the project facts only: the files
    are judged as a run on the whole tree judges them (see hpu_port.imported_modules)."""
    from hpu_port.files import project_root
    from hpu_port.imported_modules import imported_project_files

    python = _python_sources(planned, sources)
    if not python or len(python) > SHORT_RUN_FILES or any(os.path.isdir(path) for path in paths):
        return {}
    found: dict = {}
    for root in sorted({root for path in python if (root := project_root(path)) is not None}):
        found.update(imported_project_files({p: s for p, s in python.items() if os.path.abspath(p).startswith(root + os.sep)}, root))
    return found


def _attach_project_facts(
    planned: list, sources: list, cache: Optional[Cache] = None, start_workers: Callable[[], bool] = lambda: False,
    dependency_paths: list = (), imported: Optional[dict] = None,
) -> Optional[Callable[[], None]]:
    """Find the project facts once, from the Python files as read, and give
    them to every rule set of the run (they are part of each file's result).
    With a cache, facts found for the same files and settings are reused:
    finding them is most of a warm run. When they must be found for a
    project the cache has never seen, ``start_workers`` is called first; if
    it started a pool, the facts are not found yet: what finds and gives
    them is returned, for the pool to call once it has the files to begin on."""
    from hpu_port.project import find_facts

    python = _python_sources(planned, sources)
    if python and imported:
        # Read for the facts, not ported: modules the run's files import.
        known = {os.path.abspath(path) for path in python}
        python.update({path: source for path, source in imported.items() if path not in known})
    dependencies = {path: source for path in dependency_paths if isinstance(source := _read(path), bytes)}
    rulesets = list({id(ruleset): ruleset for _, ruleset in planned if ruleset is not None}.values())
    if not python or not rulesets:
        return None
    holds = {
        rule.code: rule.project_hold
        for ruleset in rulesets
        for rule in (ruleset.analysis or ruleset.rules)
        if rule.project_hold is not None
    }
    libraries, devices = _nvidia_only_libraries(rulesets), _other_devices(rulesets)
    bases, fields = _project_bases(rulesets), _argument_fields(rulesets)
    key, name = _facts_key({**python, **dependencies}, libraries, devices, holds, bases, fields)
    facts = cache.project_facts(key, name) if cache is not None else None

    def attach(facts) -> None:
        for ruleset in rulesets:
            ruleset.facts = facts

    def find_and_attach() -> None:
        found = find_facts(python, libraries, devices, holds, bases, dependencies, fields)
        if cache is not None:
            cache.store_project_facts(key, name, found)
        attach(found)

    if facts is not None:
        attach(facts)
        return None
    if (cache is None or not cache.knows_project(name)) and start_workers():
        return find_and_attach
    find_and_attach()
    return None


def _facts_key(
    python: dict, libraries: set, devices: set, holds: dict, bases: frozenset = frozenset(), fields: Optional[dict] = None,
) -> tuple[str, str]:
    """(the digest of everything the project facts depend on: hpu-port's
    code, the evidence and each Python file's path and bytes; a name for the
    set of files, under which one entry is kept)."""
    from hpu_port.cache import code_stamp

    digest = blake2b(f"{__version__}\n{code_stamp()}\n{sorted(libraries)}\n{sorted(devices)}\n{sorted(bases)}\n".encode())
    digest.update(repr(sorted((code, repr(hold)) for code, hold in holds.items())).encode())
    digest.update(repr(sorted((name, sorted(options)) for name, options in (fields or {}).items())).encode())
    paths = sorted(python)
    for path in paths:
        digest.update(f"{os.path.abspath(path)}\0".encode())
        digest.update(blake2b(python[path], digest_size=16).digest())
    root = os.path.commonpath([os.path.abspath(path) for path in paths]) if paths else ""
    name = blake2b(root.encode(), digest_size=8).hexdigest()
    return digest.hexdigest()[:32], name


def _nvidia_only_libraries(rulesets: list) -> set:
    """The top-level modules of the NVIDIA-only libraries, by the device
    evidence each rule set is ported with (the project may add some)."""
    from hpu_port.device.evidence import of_options

    return {library for ruleset in rulesets for library in of_options(ruleset.options).libraries}


def _project_bases(rulesets: list) -> frozenset:
    """The library classes whose subclasses in the project some rule follows."""
    from hpu_port.kinds import screening

    return frozenset(
        base for ruleset in rulesets for rule in (ruleset.analysis or ruleset.rules) for base in screening(rule).project_bases
    )


def _argument_fields(rulesets: list) -> dict:
    """What the rules say of the fields of classes of arguments (``Kind.argument_fields``), merged."""
    from hpu_port.kinds import screening

    merged: dict = {}
    for ruleset in rulesets:
        for rule in ruleset.analysis or ruleset.rules:
            for name, options in screening(rule).argument_fields:
                merged[name] = merged.get(name, frozenset()) | frozenset(options)
    return merged


def _other_devices(rulesets: list) -> set:
    from hpu_port.device.evidence import of_options

    return {device for ruleset in rulesets for device in of_options(ruleset.options).other}


def _answer(entry, source, ruleset, apply: bool, cache: Optional[Cache]) -> Union[FileResult, bytes]:
    """The file's result when it needs no porting (an error, a cached
    result); otherwise its bytes."""
    if isinstance(source, FileResult):
        return source
    cached = cache.lookup(ruleset, apply, entry.path, source) if cache is not None else None
    if cached is not None:
        return cached
    return source


def _needs_parsing(task: "Task", deep: bool = False) -> bool:
    """False when no selected rule's trigger text occurs in the file (and
    it is text: the engine names the problem of a file that is not).
    ``deep``: also False when the code itself (comments and docstrings
    blanked, read by the standard parser) gives no rule anything to do,
    which is what the port would find first."""
    file_type = filetypes.detect(task.path, task.source[: filetypes.HEAD_SIZE]) or filetypes.PYTHON
    if file_type in filetypes.DOCUMENT_TYPES:
        return True  # documents are screened by their own engine
    if text_problem(task.source, file_type) is not None:
        return True
    if file_type == filetypes.NOTEBOOK and _shell_lines_could_match(task):
        return True
    rules = task.ruleset.python_rules
    if rules.for_source(task.source, shapes=file_type != filetypes.NOTEBOOK) is None:
        return False
    if not deep or file_type != filetypes.PYTHON or len(task.source) > rules.options.max_file_size:
        return True
    # What the port itself asks first (hpu_port.engine: every rule walks).
    walked = rules.walked.for_source(task.source)
    return walked is not None and walked.for_code(task.source) is not None


def _shell_lines_could_match(task: "Task") -> bool:
    """Whether a rule that reads a notebook's shell lines (`!torchrun ...`)
    could match the notebook, whatever its code cells hold."""
    from hpu_port.documents import could_match, document_rules

    rules = document_rules(task.ruleset, filetypes.NOTEBOOK)
    return bool(rules) and could_match(rules, task.source.decode("utf-8", "replace"))


def interrupt_on_sigterm() -> None:
    """Turn SIGTERM into an interrupt, so that a write in progress is cleaned up
    (each file is replaced atomically: it is either as it was or fully ported)."""
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (embedded use)
        pass


def write_results(summary: RunSummary) -> None:
    """Write every changed file in place; a file that cannot or must not be
    written (see files.replace_file) gets an error, and the others are written."""
    for result in summary.changed:
        try:
            replace_file(result.path, result.new_source, result.source, summary.roots)
        except NotWritten as refusal:
            result.error = f"{refusal}; not written"
            continue
        except OSError as exc:
            result.error = f"cannot write: {exc.strerror or exc}"
            continue
        if result.output_findings is not None:
            result.findings = result.output_findings  # the file is now the new one


def write_results_to(summary: RunSummary, output_dir: str, base: Optional[str] = None) -> None:
    """Write every examined file under ``output_dir``, at its path relative to
    ``base`` (the working directory): ported, unchanged, or (when it could not
    be ported) as it was, so that the output tree is complete; the source tree
    is never written. A file outside ``base`` cannot be placed, and gets an error."""
    base = os.path.realpath(base or os.getcwd())
    for result in summary.results:
        relative = os.path.relpath(os.path.realpath(result.path), base)
        if relative.startswith(os.pardir) or os.path.isabs(relative):
            result.error = result.error or "lies outside the working directory; not written to the output directory"
            continue
        data = result.new_source if result.changed and not result.failed else result.source
        if result.failed and not data:
            continue  # it could not even be read: there is nothing to copy
        destination = Path(output_dir) / relative
        try:
            write_into(output_dir, relative, data, _mode_of(result.path))
        except NotWritten as refusal:
            result.error = f"{refusal}; not written to the output directory"
            continue
        except OSError as exc:
            result.error = f"cannot write {destination}: {exc.strerror or exc}"
            continue
        if result.changed and not result.failed and result.output_findings is not None:
            # What is left to do is in the written file, at its lines: name it.
            result.findings = result.output_findings
            result.path = str(destination)


def _mode_of(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o644


def suppression_warnings(results: list[FileResult], known_codes) -> list[str]:
    """Malformed or unknown codes in the suppression comments of ``results``."""
    warnings = []
    for result in results:
        if result.failed or not result.source:
            continue
        python = filetypes.detect(result.path, result.source[: filetypes.HEAD_SIZE]) not in filetypes.DOCUMENT_TYPES
        for line, problem in code_problems(result.source, result.encoding or "utf-8", known_codes, python):
            warnings.append(f"{result.path}:{line}: {problem}")
    return warnings


def run_stdin(source: bytes, name: Optional[str], ruleset_for: RuleSetFor, apply: bool) -> RunSummary:
    """Port source read from stdin; ``name`` picks the configuration and names it."""
    path = Path(name) if name else Path.cwd() / "-"
    ruleset = ruleset_for(path)
    summary = RunSummary()
    if ruleset is None:  # excluded by the configuration: nothing to do
        summary.results.append(FileResult(path=name or "-", source=source))
        return summary
    # The name decides the file type, as a path's would (a notebook, a
    # requirements file); errors come back as data, so the editor gets its text back.
    result = parallel.port_one(name or "-", source, ruleset, apply)
    result.source = source
    result.rules = tuple(ruleset.rules)
    result.mode = ruleset.options.mode
    summary.results.append(result)
    return summary
