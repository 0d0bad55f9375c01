"""Finding, reading and safely writing source files."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from hpu_port import filetypes, tempfiles

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
        "site-packages",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
    }
)
# Build output, skipped unless the folder is a Python package of its own
# (`mmengine/dist/` holds the distributed helpers, not wheels).
OUTPUT_DIRS = frozenset({"build", "dist"})
NOTEBOOK_SUFFIX = ".ipynb"


@dataclass(frozen=True)
class Source:
    """A path to port (with its file type), or a problem found while looking for paths."""

    path: str
    error: Optional[str] = None
    file_type: str = filetypes.PYTHON


class Discovery(list):
    """The files to port, plus the files a directory walk passed over (by suffix)."""

    passed_over: Counter


def discover(paths: list[str], respect_gitignore: bool = True) -> Discovery:
    """The files hpu-port reads under the given paths, sorted and without
    duplicates; the other files a walk saw are counted by suffix.

    A file named explicitly must be of a type hpu-port reads; a missing path
    is reported as an error entry so that the run can go on with the others.
    """
    found: dict[str, Source] = {}
    passed_over: Counter = Counter()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file, error, file_type in _walk(path, respect_gitignore, passed_over):
                found.setdefault(str(file), Source(str(file), error, file_type or filetypes.PYTHON))
        elif path.is_file():
            file_type = filetypes.detect(str(path))
            error = None if file_type else f"not a file hpu-port reads ({READ_TYPES})"
            found.setdefault(str(path), Source(str(path), error, file_type or filetypes.PYTHON))
        elif path.is_symlink():
            found[str(path)] = Source(str(path), "broken symbolic link")
        else:
            found[str(path)] = Source(str(path), "no such file or directory")
    discovery = Discovery(_one_path_per_file([found[key] for key in sorted(found)]))
    discovery.passed_over = passed_over
    return discovery


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


READ_TYPES = (
    "Python, notebooks, shell and job scripts, YAML, JSON, Dockerfiles, CMake, CUDA sources, "
    "requirements files, pyproject.toml, setup.cfg"
)


def _walk(root: Path, respect_gitignore: bool, passed_over: Counter) -> Iterator[tuple[Path, Optional[str], Optional[str]]]:
    """Files hpu-port reads under ``root``, with their type (and directories
    that cannot be read, with their error); symbolic links never lead outside
    ``root``; what `.gitignore` files hide is skipped; other files are counted
    in ``passed_over`` by suffix."""
    from hpu_port.gitignore import GitIgnore

    real_root = root.resolve()
    ignore = GitIgnore(root) if respect_gitignore else None
    problems: list[OSError] = []
    for directory, dirnames, filenames in os.walk(root, onerror=problems.append):  # no linked dirs
        while problems:
            problem = problems.pop()
            yield Path(problem.filename or directory), f"cannot read directory: {problem.strerror or problem}", None
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not _skipped_dir(Path(directory) / d)
            and not (ignore and ignore.ignored(Path(directory) / d, is_dir=True))
        )
        for name in sorted(filenames):
            path = Path(directory) / name
            if not _inside(path, real_root) or (ignore and ignore.ignored(path, is_dir=False)):
                continue
            file_type = filetypes.detect(str(path))
            if file_type is None:
                passed_over[os.path.splitext(name)[1].lower() or "(no suffix)"] += 1
                continue
            yield path, None, file_type
    for problem in problems:
        yield Path(problem.filename or root), f"cannot read directory: {problem.strerror or problem}", None


def _skipped_dir(path: Path) -> bool:
    name = path.name
    if name in OUTPUT_DIRS:
        return not (path / "__init__.py").is_file()
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def _inside(path: Path, real_root: Path) -> bool:
    if not path.is_symlink():
        return True
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return True  # a broken link or a loop: reading it reports the problem
    return target == real_root or real_root in target.parents


def text_problem(source: bytes, file_type: str) -> Optional[str]:
    """Why ``source`` is not text of ``file_type`` (a filetypes name), or None.

    Decided from the bytes alone, the same way whether or not the file holds
    anything a rule looks for. Python is read in the encoding it declares
    (UTF-8 by default), every other type in UTF-8. Cheap for the usual file:
    a search for NUL and an ASCII test, both in C; only a file with other
    bytes is decoded.
    """
    if b"\0" in source:
        return "not a text file: it holds NUL bytes"
    encoding = "utf-8-sig"  # UTF-8 with or without a BOM
    if file_type == filetypes.PYTHON:
        try:
            encoding = _declared_encoding(source)
        except SyntaxError as exc:  # an unknown encoding, or one the BOM contradicts
            return f"cannot decode: {exc.msg}"
    if source.isascii():
        return None
    try:
        source.decode(encoding)
    except UnicodeDecodeError as exc:
        line = source.count(b"\n", 0, exc.start) + 1
        name = "utf-8" if encoding == "utf-8-sig" else encoding
        return f"cannot decode as {name}: {exc.reason} (byte 0x{source[exc.start]:02x}, line {line})"
    return None


def _declared_encoding(source: bytes) -> str:
    """The encoding Python reads ``source`` in (PEP 263, with or without a BOM)."""
    first_two = source[:2048].split(b"\n", 2)[:2]
    if not any(b"coding" in line for line in first_two):
        return "utf-8-sig"
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return encoding


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
        handle, temporary = tempfiles.mkstemp(target.parent, f".{target.name}.", ".hpu-port")
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
