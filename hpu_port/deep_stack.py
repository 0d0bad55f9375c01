"""Calling a function on a stack deep enough for deeply nested source.

libcst parses in native code that recurses once per level of nesting, and
builds, visits and prints trees in Python that recurse a few frames per level.
A right-nested chain (hundreds of implicitly concatenated strings, a long
`a + b + ...`) is thousands of levels deep: more than Python's default limit of
1000 frames, and more than the 8 MiB a main thread has for the native parser,
which then crashes the whole process instead of raising an error.

``call`` runs a function in one long-lived worker thread made with a large
stack, under a raised recursion limit (both restored afterwards). The limit is
kept well below what the stack holds, so that Python code that goes too deep
still ends in a RecursionError, not a crash; the native parser, which no
limit watches, gets room for hundreds of thousands of levels. The worker is
reused: handing it a call costs tens of microseconds, where starting a thread
with such a stack costs hundreds.
"""

from __future__ import annotations

import queue
import signal
import sys
import threading
from typing import Any, Callable, Optional, TypeVar

# Address space reserved for the worker's stack; the system gives it pages
# only as deep calls touch them. Smaller ones are tried where the system
# refuses it.
STACK_SIZES = (256 * 2**20, 64 * 2**20, 16 * 2**20)
# A Python frame that goes through native code takes under 1 KiB of stack;
# the recursion limit leaves five times that to each (about 50,000 frames on
# the largest stack), so that it is reached before the stack runs out.
STACK_BYTES_PER_FRAME = 5 * 1024

T = TypeVar("T")


class _Call:
    """One call handed to the worker, and its outcome."""

    __slots__ = ("function", "args", "result", "error", "finished")

    def __init__(self, function: Callable[..., Any], args: tuple) -> None:
        self.function = function
        self.args = args
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.finished = threading.Lock()
        self.finished.acquire()

    def run(self, recursion_limit: int) -> None:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, recursion_limit))
        try:
            self.result = self.function(*self.args)
        except BaseException as exc:  # handed back to the caller, who raises it
            self.error = exc
        finally:
            sys.setrecursionlimit(previous)
            self.finished.release()

    def outcome(self) -> Any:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.result


class _Worker:
    def __init__(self, stack_bytes: int) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        self.recursion_limit = stack_bytes // STACK_BYTES_PER_FRAME
        self.thread = threading.Thread(target=self._serve, name="hpu-port-deep-stack", daemon=True)

    def _serve(self) -> None:
        _leave_signals_to_the_main_thread()
        while True:
            self.calls.get().run(self.recursion_limit)


# Signals a fault raises in the thread that caused it; the others are sent to
# the process, which hands each to some thread that does not block it.
_FAULTS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "SIGABRT")


def _leave_signals_to_the_main_thread() -> None:
    # The main thread blocks SIGINT and SIGTERM while it replaces a file, so
    # that they arrive once the file is whole (hpu_port.files); were this
    # thread to take them meanwhile, the interrupt would reach the main
    # thread in the middle of the write.
    if not hasattr(signal, "pthread_sigmask"):  # no POSIX signal masks here
        return
    faults = {getattr(signal, name) for name in _FAULTS if hasattr(signal, name)}
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - faults)


_worker: Optional[_Worker] = None
_unavailable = False  # no thread with a large stack could be made here
_starting = threading.Lock()


def call(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``, run with a deep stack; exceptions propagate.

    Calls from several threads are served one at a time. Where no thread with
    a large stack can be made, the function runs in the calling thread.
    """
    worker = _running_worker()
    if worker is None or threading.current_thread() is worker.thread:
        return function(*args)
    job = _Call(function, args)
    worker.calls.put(job)
    # A timeout keeps the wait interruptible (Ctrl-C) on every platform.
    while not job.finished.acquire(timeout=0.5):
        pass
    return job.outcome()


def _running_worker() -> Optional[_Worker]:
    global _worker, _unavailable
    worker = _worker
    if (worker is not None and worker.thread.is_alive()) or _unavailable:
        return worker
    with _starting:
        # A forked child inherits the object but not the thread: start anew.
        if _worker is None or not _worker.thread.is_alive():
            _worker = _start_worker()
            _unavailable = _worker is None
        return _worker


def _start_worker() -> Optional[_Worker]:
    for size in STACK_SIZES:
        try:
            previous = threading.stack_size(size)
        except (ValueError, RuntimeError):
            continue
        try:
            worker = _Worker(size)
            worker.thread.start()
            return worker
        except RuntimeError:  # the system cannot give a thread that much
            continue
        finally:
            threading.stack_size(previous)
    return None
