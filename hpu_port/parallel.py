"""Porting the files that need a parse, in this process or in a pool of workers.

Workers are started with `spawn` on every platform (no state inherited by
forking, the same behaviour on Linux, macOS and Windows). Each gets the rule
sets once, ports batches of files and sends back results without the
source bytes, which the caller already has. Results are pure functions of
(bytes, rule set), so the order in which workers finish changes nothing but
the progress display.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator, Optional

from hpu_port.results import FileResult

# Below this much source, starting workers (each imports libcst) costs more
# than it saves.
POOL_MIN_BYTES = 256 * 1024
# Above this much source not answered by the cache, the port itself decides
# which files need parsing at all (in the workers, or in this process at -j 1),
# rather than a screen of every file before it.
SCREEN_IN_POOL_BYTES = 4 * 1024 * 1024
BATCH_BYTES = 512 * 1024
BATCH_FILES = 8
# A worker's first batch, when it starts before the project facts are found:
# about what it screens and parses in the seconds they take on a large tree.
LEADING_BATCH_BYTES = 2 * 1024 * 1024
LEADING_BATCH_FILES = 64

_WORKER_RULESETS: list = []
# The digest of the project facts the worker's rule sets were given last.
_WORKER_FACTS: list = [None]
# The queue the parent sends the facts on, then the facts once received.
_FACTS_QUEUE: list = []


def _engine():
    # The engine brings libcst, whose import is most of a short run's time: it
    # is loaded only once some file turned out to need parsing.
    from hpu_port import engine

    return engine


def port_one(path: str, source: bytes, ruleset, apply: bool) -> FileResult:
    """Port one file's bytes in this process, whatever its type."""
    return _engine().port_bytes(path, source, ruleset, apply)


def default_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def port_all(
    tasks: list, apply: bool, jobs: int, pool: Optional["Pool"] = None, facts_later: Optional[Callable[[], None]] = None
) -> Iterator[tuple[object, FileResult]]:
    """(task, result) for every task, as each finishes; ``pool``: workers
    started earlier for these tasks' rule sets, closed when done;
    ``facts_later``: finds the project facts and gives them to the rule
    sets, called once the workers have their files to begin on."""
    if jobs <= 1 or len(tasks) < 2 or sum(len(t.source) for t in tasks) < POOL_MIN_BYTES:
        if pool is not None:
            pool.close()
        if facts_later is not None:
            facts_later()
        for task in tasks:
            yield task, port_one(task.path, task.source, task.ruleset, apply)
        return
    # While the facts are found, each worker screens and parses its first
    # batch (see _port_items): when only checking, one big enough to last
    # that long. A rewrite keeps the smaller batch: a file it changes is
    # parsed whole while the batch's trees are held (on transformers, a
    # fifth more memory at the peak for no time saved).
    batches = _batches(tasks, leading=jobs if facts_later is not None and not apply else 0)
    if pool is None:
        if facts_later is not None:
            facts_later()
            facts_later = None
        pool = Pool([t.ruleset for t in tasks], min(jobs, len(batches)))
    try:
        yield from pool.port(batches, apply, facts_later)
    finally:
        pool.close()


class Pool:
    """Worker processes for the files that need parsing, given their rule
    sets when they start. Started before the project facts are found (which
    takes seconds on a large tree), they load libcst and the rules meanwhile;
    the facts go with each batch, a worker reads them once."""

    def __init__(self, rulesets: list, jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.numbers: dict[int, int] = {}
        self.rulesets: list = []
        for ruleset in rulesets:
            if id(ruleset) not in self.numbers:
                self.numbers[id(ruleset)] = len(self.rulesets)
                self.rulesets.append(ruleset)
        context = multiprocessing.get_context("spawn")
        self.jobs = jobs
        # The project facts, for batches sent before they were found.
        self.facts_queue = context.Queue()
        self._facts_sent = False
        self.executor = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=context,
            initializer=_start_worker,
            # A rule set a worker cannot unpickle leaves the parent blocked on the
            # pipe it writes them to (multiprocessing's spawn): every part of a
            # rule, the rule cache's lazy patterns included, must pickle.
            initargs=(self.rulesets, self.facts_queue),
        )
        # Each warm-up starts a worker (they start on demand) and loads what ports.
        for _ in range(jobs):
            self.executor.submit(_warm_up)

    def port(
        self, batches: list[list], apply: bool, facts_later: Optional[Callable[[], None]] = None
    ) -> Iterator[tuple[object, FileResult]]:
        """(task, result) for each task of ``batches`` (see ``_batches``), as
        each finishes. With ``facts_later``, the workers begin on the files
        (screens, parses) while it finds the facts, and wait for them only
        where a port first reads them."""
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        facts = None if facts_later is not None else self._facts()
        futures = {
            self.executor.submit(_port_batch, [(t.path, t.source, self.numbers[id(t.ruleset)]) for t in batch], apply, facts): batch
            for batch in batches
        }
        if facts_later is not None:
            facts_later()
            self._send_facts(self._facts())
        for future in as_completed(futures):
            batch = futures[future]
            try:
                results = future.result()
            except BrokenProcessPool as exc:
                problem = f"internal error: a worker process stopped ({exc or 'killed'})"
                results = [FileResult(path=t.path, source=t.source, error=problem) for t in batch]
            yield from zip(batch, results)

    def _facts(self) -> tuple:
        found = [ruleset.facts for ruleset in self.rulesets]
        return ("\n".join(f.digest() for f in found), found)

    def _send_facts(self, facts: Optional[tuple]) -> None:
        """One copy for each worker (a worker takes one, the first time a port
        reads them); None tells a waiting worker that they will not come."""
        if self._facts_sent:
            return
        self._facts_sent = True
        for _ in range(self.jobs):
            self.facts_queue.put(facts)

    def close(self) -> None:
        # A worker waiting for facts that will never come would keep the
        # shutdown waiting for it.
        self._send_facts(None)
        self.executor.shutdown(wait=True, cancel_futures=True)
        # Copies no worker took stay behind: they must not keep this process
        # from exiting.
        self.facts_queue.cancel_join_thread()
        self.facts_queue.close()


def _batches(tasks: list, leading: int = 0) -> list[list]:
    """Big files first, so that no worker is left with one at the end; small
    ones grouped, so that sending them costs little. The first ``leading``
    batches are larger (see LEADING_BATCH_BYTES)."""
    batches: list[list] = []
    current: list = []
    size = 0
    for task in sorted(tasks, key=lambda t: len(t.source), reverse=True):
        limit, files = (LEADING_BATCH_BYTES, LEADING_BATCH_FILES) if len(batches) < leading else (BATCH_BYTES, BATCH_FILES)
        if current and (size + len(task.source) > limit or len(current) >= files):
            batches.append(current)
            current, size = [], 0
        current.append(task)
        size += len(task.source)
    if current:
        batches.append(current)
    return batches


def _start_worker(rulesets: list, facts_queue) -> None:
    import signal

    # The parent decides what an interrupt means; workers just stop with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_RULESETS[:] = rulesets
    _WORKER_FACTS[:] = [None]
    _FACTS_QUEUE[:] = [facts_queue]


class _FactsToCome:
    """A worker's rule set's project facts while the parent still finds them:
    the first port that reads them waits for them (``RuleSet.facts``)."""

    def __init__(self, number: int) -> None:
        self.number = number

    def wait(self):
        import multiprocessing
        import queue

        while _FACTS_QUEUE[1:] == []:
            try:
                _FACTS_QUEUE.append(_FACTS_QUEUE[0].get(timeout=1.0))
            except queue.Empty:
                parent = multiprocessing.parent_process()
                if parent is not None and not parent.is_alive():
                    raise RuntimeError("the process that started this worker stopped") from None
        facts = _FACTS_QUEUE[1]
        if facts is None:
            raise RuntimeError("the project facts were not found")
        digest, found = facts
        _use_facts(digest, found)
        return found[self.number]


def _use_facts(digest: str, found: list) -> None:
    if digest != _WORKER_FACTS[0]:
        for ruleset, project in zip(_WORKER_RULESETS, found):
            ruleset.facts = project
        _WORKER_FACTS[0] = digest


def _warm_up() -> None:
    """Load what porting a file needs: libcst, the kinds and how they match."""
    import importlib
    import pkgutil

    from hpu_port import visitors
    from hpu_port.kinds import kind_names

    _engine()
    kind_names()
    for module in pkgutil.iter_modules(visitors.__path__):
        importlib.import_module(f"{visitors.__name__}.{module.name}")


def _port_batch(items: list, apply: bool, facts: tuple) -> list[FileResult]:
    """``facts``: (their digest, the project facts of each rule set)."""
    from hpu_port import deep_stack

    if facts is None:  # sent before the parent found them
        if _WORKER_FACTS[0] is None:
            for number, ruleset in enumerate(_WORKER_RULESETS):
                ruleset.facts = _FactsToCome(number)
    else:
        _use_facts(*facts)
    # One hand-over to the deep-stack thread for the batch, not one per file.
    return deep_stack.call(_port_items, items, apply)


def _port_items(items: list, apply: bool) -> list[FileResult]:
    engine = _engine()
    ahead: list = [None] * len(items)
    if _facts_to_come():
        # Screening and parsing read no facts: the batch is parsed while the
        # parent still finds them, rather than after a first port waited.
        ahead = [engine.parse_ahead(path, source, _WORKER_RULESETS[number], apply) for path, source, number in items]
    results = []
    for (path, source, number), parsed in zip(items, ahead):
        result = engine.port_bytes(path, source, _WORKER_RULESETS[number], apply, parsed)
        result.source = b""  # the parent has it
        results.append(result)
    return results


def _facts_to_come() -> bool:
    """Whether this worker's rule sets still wait for the project facts."""
    return any(ruleset.facts_pending for ruleset in _WORKER_RULESETS)
