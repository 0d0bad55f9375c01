"""Finding, reading and safely writing source files."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

# Directories that never hold the user's own source.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        "build",
        "dist",
        "site-packages",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
    }
)
NOTEBOOK_SUFFIX = ".ipynb"
PYTHON_SUFFIXES = (".py", ".pyi", NOTEBOOK_SUFFIX)
# Files that list the project's dependencies, read by the `dependency` rules.
_DEPENDENCY_FILE = re.compile(r"requirements[\w.-]*\.txt|pyproject\.toml")


def is_dependency_file(path: str) -> bool:
    return _DEPENDENCY_FILE.fullmatch(os.path.basename(path)) is not None


@dataclass(frozen=True)
class Source:
    """A path to port, or a problem found while looking for paths."""

    path: str
    error: Optional[str] = None


def discover(paths: list[str], respect_gitignore: bool = True) -> list[Source]:
    """Python files under the given paths, sorted and without duplicates.

    A file named explicitly is taken whatever its suffix; a missing path is
    reported as an error entry so that the run can go on with the others.
    """
    found: dict[str, Source] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file, error in _walk(path, respect_gitignore):
                found.setdefault(str(file), Source(str(file), error))
        elif path.is_file():
            error = None if _looks_like_python(path) else "not a Python file (expected .py, .pyi, .ipynb or a python #! line)"
            found.setdefault(str(path), Source(str(path), error))
        elif path.is_symlink():
            found[str(path)] = Source(str(path), "broken symbolic link")
        else:
            found[str(path)] = Source(str(path), "no such file or directory")
    return _one_path_per_file([found[key] for key in sorted(found)])


def _one_path_per_file(sources: list[Source]) -> list[Source]:
    """A file reached through several paths (a link and its target) is ported
    once, through the path that is not a link."""
    by_real: dict[str, Source] = {}
    kept: list[Source] = []
    for source in sources:
        if source.error:
            kept.append(source)
            continue
        real = os.path.realpath(source.path)
        other = by_real.get(real)
        if other is None:
            by_real[real] = source
            kept.append(source)
        elif Path(other.path).is_symlink() and not Path(source.path).is_symlink():
            kept[kept.index(other)] = source
            by_real[real] = source
    return kept


def _looks_like_python(path: Path) -> bool:
    if path.name.endswith(PYTHON_SUFFIXES) or is_dependency_file(path.name):
        return True
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return True  # reading it will report the problem
    return first.startswith(b"#!") and b"python" in first


def _walk(root: Path, respect_gitignore: bool = True) -> Iterator[tuple[Path, Optional[str]]]:
    """Python files under ``root`` (and directories that cannot be read, with
    their error); symbolic links never lead outside ``root``; what `.gitignore`
    files hide is skipped."""
    from hpu_port.gitignore import GitIgnore

    real_root = root.resolve()
    ignore = GitIgnore(root) if respect_gitignore else None
    problems: list[OSError] = []
    for directory, dirnames, filenames in os.walk(root, onerror=problems.append):  # no linked dirs
        while problems:
            problem = problems.pop()
            yield Path(problem.filename or directory), f"cannot read directory: {problem.strerror or problem}"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and not (ignore and ignore.ignored(Path(directory) / d, is_dir=True))
        )
        for name in sorted(filenames):
            path = Path(directory) / name
            if not (name.endswith(PYTHON_SUFFIXES) or is_dependency_file(name)) or not _inside(path, real_root):
                continue
            if ignore and ignore.ignored(path, is_dir=False):
                continue
            yield path, None
    for problem in problems:
        yield Path(problem.filename or root), f"cannot read directory: {problem.strerror or problem}"


def _inside(path: Path, real_root: Path) -> bool:
    if not path.is_symlink():
        return True
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return True  # a broken link or a loop: reading it reports the problem
    return target == real_root or real_root in target.parents


def read_source(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


class FileChangedError(Exception):
    """The file on disk is no longer the one that was read."""


def write_atomically(path: str, data: bytes, expected: Optional[bytes] = None, new_mode: Optional[int] = None) -> None:
    """Replace ``path`` with ``data`` so that it is never seen half-written.

    Writes a temporary file in the same directory, flushes it to disk and
    renames it over the original, keeping the original's permission bits.
    With ``expected``, refuses to write when the file changed since it was read.
    With ``new_mode``, ``path`` may not exist yet: it is created with that mode.
    """
    # Through a symbolic link, the file it points to is rewritten, not the link.
    target = Path(os.path.realpath(path))
    if expected is not None and read_source(path) != expected:
        raise FileChangedError(f"{path} changed on disk while it was being ported")
    mode = stat.S_IMODE(os.stat(target).st_mode) if new_mode is None or target.exists() else new_mode
    with _signals_deferred():
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".hpu-port")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, mode)
            os.replace(temporary, target)
        except BaseException:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
            raise


@contextlib.contextmanager
def _signals_deferred():
    """Hold SIGINT and SIGTERM while one file is written; they arrive right after.

    Without this, an interrupt between creating the temporary file and the
    cleanup that removes it would leave the temporary file behind.
    """
    deferred = {signal.SIGINT, signal.SIGTERM}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, deferred)
    except (AttributeError, ValueError, OSError):  # no POSIX signal masks here
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
