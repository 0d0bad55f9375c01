"""Finding, reading and safely writing source files."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

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
    # A symbolic link: the file it resolves to (it is never read or written
    # through; see _one_path_per_file).
    link_target: Optional[str] = None
    # Named on the command line, not met in a directory walk.
    named: bool = False


class Discovery(list):
    """The files to port, plus the files a directory walk passed over (by suffix)
    and the links it did not follow ("path: why", for warnings)."""

    passed_over: Counter
    links_not_followed: list
    # Files of a type hpu-port reads that `.gitignore` patterns hid, outside a
    # git checkout (inside one, git's own list decides, and says nothing is hidden).
    hidden_by_gitignore: int = 0


NAME_NOT_UTF8 = "its name is not valid UTF-8; not read (rename it to port it)"


def shown_path(path: str) -> str:
    """``path`` as it can be printed anywhere (a terminal, JSON, SARIF): bytes
    of its name that are not UTF-8 are written as escapes (``\\xff``)."""
    if _is_utf8(path):
        return path
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _is_utf8(path: str) -> bool:
    # Names that are not UTF-8 reach Python as lone surrogates.
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def discover(paths: list[str], respect_gitignore: bool = True) -> Discovery:
    """The files hpu-port reads under the given paths, sorted and without
    duplicates; the other files a walk saw are counted by suffix.

    A file named explicitly must be a regular file of a type hpu-port reads;
    every other path (missing, a link, a FIFO, a name that is not UTF-8) is
    reported as an error entry so that the run can go on with the others.
    """
    discovery = Discovery()
    discovery.passed_over = Counter()
    discovery.links_not_followed = []
    found: dict[str, Source] = {}
    for raw in paths:
        for source in _sources_at(raw, respect_gitignore, discovery):
            found.setdefault(source.path, source)
    discovery.extend(_one_path_per_file([found[key] for key in sorted(found)], discovery.links_not_followed))
    return discovery


def _sources_at(raw: str, respect_gitignore: bool, discovery: Discovery) -> Iterator[Source]:
    """What a path named on the command line gives: itself, or what a walk finds under it."""
    if not _is_utf8(raw):
        yield Source(shown_path(raw), NAME_NOT_UTF8)
        return
    path = Path(raw)
    try:
        info = os.lstat(path)
    except OSError as exc:
        missing = isinstance(exc, FileNotFoundError)
        yield Source(str(path), "no such file or directory" if missing else f"cannot read: {exc.strerror or exc}")
        return
    # A directory you name may be a link: what it holds is walked.
    if stat.S_ISDIR(info.st_mode) or (stat.S_ISLNK(info.st_mode) and os.path.isdir(path)):
        yield from _walk(path, respect_gitignore, discovery)
    else:
        yield _named_file(path, info.st_mode)


def _named_file(path: Path, mode: int) -> Source:
    if stat.S_ISLNK(mode):
        target = _link_target(path)
        if target is None:
            return Source(str(path), "broken symbolic link")
        return Source(str(path), link_target=target, named=True, file_type=_link_type(path, target) or filetypes.PYTHON)
    if not stat.S_ISREG(mode):
        return Source(str(path), f"{_special_kind(mode)}; not read")
    file_type = filetypes.detect(str(path))
    error = None if file_type else f"not a file hpu-port reads ({READ_TYPES})"
    return Source(str(path), error, file_type or filetypes.PYTHON)


def _link_target(path: Path) -> Optional[str]:
    """The file a symbolic link resolves to; None for a broken link or a loop."""
    try:
        return str(path.resolve(strict=True))
    except (OSError, RuntimeError):
        return None


def _link_type(path: Path, target: str) -> Optional[str]:
    """The type of file a link stands for: by its own name, else by its target."""
    return filetypes.by_name(str(path)) or (filetypes.detect(target) if os.path.isfile(target) else None)


def _special_kind(mode: int) -> str:
    """What a file that is neither regular, a directory nor a link is (opening
    a FIFO would wait for a writer for ever, so none of these is opened)."""
    if stat.S_ISFIFO(mode):
        return "is a FIFO"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    return "is not a regular file"


def _one_path_per_file(sources: list[Source], links_not_followed: list) -> list[Source]:
    """Each file once, by its own path. A file reached through several paths is
    ported through the first; a symbolic link is dropped when its target is
    ported by its own path, and otherwise not followed: an error when it was
    named, a warning when a walk met it. Writing through a link would change
    a file the run was not given (or one outside the repository)."""
    real_paths = {
        source.path: os.path.realpath(source.path) for source in sources if not source.error and source.link_target is None
    }
    first_by_real: dict[str, Source] = {}
    for source in sources:
        if source.path in real_paths:
            first_by_real.setdefault(real_paths[source.path], source)
    kept: list[Source] = []
    for source in sources:
        if source.error:
            kept.append(source)
        elif source.link_target is not None:
            if source.link_target in first_by_real:
                continue
            why = f"is a symbolic link to {shown_path(source.link_target)}; not followed"
            if source.named:
                kept.append(Source(source.path, f"{why} (name the file itself to port it)"))
            else:
                links_not_followed.append(f"{source.path}: {why}")
        elif first_by_real[real_paths[source.path]] is source:
            kept.append(source)
    return kept


READ_TYPES = (
    "Python, notebooks, shell and job scripts, YAML, JSON and TOML configs, Dockerfiles, CMake, CUDA sources, "
    "requirements files, pyproject.toml, setup.cfg"
)


def _walk(root: Path, respect_gitignore: bool, discovery: Discovery) -> Iterator[Source]:
    """Files hpu-port reads under ``root``, with their type, and the paths
    under it that cannot be read, with their error; symbolic links are
    entries of their own (never followed into a directory); what git does not
    list (`.gitignore` files, outside git) is skipped; other files are counted in ``passed_over`` by suffix."""
    from hpu_port.gitignore import ignore_rules

    real_root = root.resolve()
    ignore = ignore_rules(root) if respect_gitignore else None
    problems: list[OSError] = []
    for directory, dirnames, filenames in os.walk(root, onerror=problems.append):  # no linked dirs
        while problems:
            yield _unreadable_directory(problems.pop(), directory)
        refused = _search_refused(directory, dirnames + filenames)
        if refused is not None:
            # Its names can be listed, but none of them opened: one line for the folder.
            dirnames[:] = []
            yield _unreadable_directory(refused, directory)
            continue
        dirnames[:] = yield from _directories_to_enter(Path(directory), dirnames, ignore, real_root, discovery)
        for name in sorted(filenames):
            path = Path(directory) / name
            if ignore and ignore.ignored(path, is_dir=False):
                # By its name alone: an ignored file is never opened (it may be a FIFO).
                if not getattr(ignore, "AUTHORITATIVE", False) and filetypes.by_name(str(path)) is not None:
                    discovery.hidden_by_gitignore += 1
                continue
            source = _file_source(path, discovery.passed_over)
            if source is not None:
                yield source
    for problem in problems:
        yield _unreadable_directory(problem, str(root))


def _unreadable_directory(problem: OSError, directory: str) -> Source:
    return Source(shown_path(str(problem.filename or directory)), f"cannot read directory: {problem.strerror or problem}")


def _search_refused(directory: str, names: list[str]) -> Optional[PermissionError]:
    """The error of a folder whose names can be read but not looked up (read
    permission without search permission); None for any other folder."""
    if not names:
        return None
    try:
        os.lstat(os.path.join(directory, names[0]))
    except PermissionError as exc:
        exc.filename = directory
        return exc
    except OSError:  # gone meanwhile, or another problem its own read reports
        pass
    return None


def _directories_to_enter(directory: Path, dirnames: list[str], ignore, real_root: Path, discovery: Discovery):
    """The folders of ``directory`` the walk goes into (a generator that
    yields the errors of the others, and returns the names)."""
    entered = []
    for name in sorted(dirnames):
        path = directory / name
        # A folder git tracks files in is the project's, `build/` included;
        # tool folders and build output are otherwise passed over by their names.
        tracked = getattr(ignore, "AUTHORITATIVE", False) and ignore.tracks_folder(path)
        if _skipped_dir(path) and not tracked:
            continue
        link = os.path.islink(path)
        # Git lists a link to a folder as a file of its own.
        if ignore and ignore.ignored(path, is_dir=not (link and getattr(ignore, "AUTHORITATIVE", False))):
            continue
        if not _is_utf8(name):
            yield Source(shown_path(str(path)), NAME_NOT_UTF8)
        elif link:
            _note_linked_directory(path, real_root, discovery)
        else:
            entered.append(name)
    return entered


def _note_linked_directory(path: Path, real_root: Path, discovery: Discovery) -> None:
    """A link to a folder is never entered; one that leads out of the walk's root is worth a warning
    (one inside it is walked by its own path anyway)."""
    target = _link_target(path)
    if target is not None and not _within(target, str(real_root)):
        discovery.links_not_followed.append(
            f"{path}: is a symbolic link to {shown_path(target)}, outside {shown_path(str(real_root))}; not followed"
        )


def _file_source(path: Path, passed_over: Counter) -> Optional[Source]:
    """What a file a walk met is: a file to port, a problem, or (None) gone or not for hpu-port."""
    name = path.name
    if not _is_utf8(name):
        return Source(shown_path(str(path)), NAME_NOT_UTF8)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None  # deleted since the folder was listed
    except OSError as exc:
        return Source(str(path), f"cannot read: {exc.strerror or exc}")
    if stat.S_ISLNK(info.st_mode):
        return _link_source(path, passed_over)
    if not stat.S_ISREG(info.st_mode):
        if filetypes.by_name(name) is None and _name_tells_type(name):
            passed_over[_suffix(name)] += 1  # not a name hpu-port reads: passed over like any other
            return None
        return Source(str(path), f"{_special_kind(info.st_mode)}; not read")
    file_type = filetypes.detect(str(path))
    if file_type is None:
        passed_over[_suffix(name)] += 1
        return None
    return Source(str(path), None, file_type)


def _link_source(path: Path, passed_over: Counter) -> Optional[Source]:
    target = _link_target(path)
    if target is None:
        if filetypes.by_name(path.name) is None:
            passed_over[_suffix(path.name)] += 1
            return None
        return Source(str(path), "broken symbolic link")
    file_type = _link_type(path, target)
    if file_type is None:
        passed_over[_suffix(path.name)] += 1
        return None
    return Source(str(path), file_type=file_type, link_target=target)


def _name_tells_type(name: str) -> bool:
    """Whether the name alone decides the file type (a name without a suffix
    needs the file's first bytes, as filetypes.detect reads them)."""
    return "." in name.lstrip(".")


def _suffix(name: str) -> str:
    return os.path.splitext(name)[1].lower() or "(no suffix)"


def _skipped_dir(path: Path) -> bool:
    name = path.name
    if name in OUTPUT_DIRS:
        return not os.path.isfile(path / "__init__.py")
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def _within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it (both resolved)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


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
    """The bytes of the regular file at ``path``, never through a link at its
    end and never waiting on a FIFO (one may have taken the file's place since
    the walk)."""
    with _opened_file(None, path) as handle:
        return _read_all(handle)


_OPEN_NOT_FOLLOWING = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


@contextlib.contextmanager
def _opened_file(directory: Optional[int], name: str) -> Iterator[int]:
    """A descriptor of the regular file ``name`` (in the open folder
    ``directory``, if given); OSError when it is a link or not a regular file."""
    try:
        handle = os.open(name, _OPEN_NOT_FOLLOWING, dir_fd=directory)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "is a symbolic link", name) from None
        raise
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(mode, name)
        yield handle
    finally:
        os.close(handle)


def _not_regular(mode: int, name: str) -> OSError:
    if stat.S_ISDIR(mode):
        return IsADirectoryError(errno.EISDIR, "is a directory", name)
    return OSError(errno.EINVAL, _special_kind(mode), name)


def _read_all(handle: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(handle, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class NotWritten(Exception):
    """A file hpu-port must not replace; the message says why, in a few words."""


class FileChangedError(NotWritten):
    """The file on disk is no longer the one that was read."""

    def __init__(self) -> None:
        super().__init__("changed on disk while it was being ported")


def replace_file(path: str, data: bytes, expected: bytes, roots: list[str]) -> None:
    """Replace the file at ``path`` with ``data`` so that it is never seen
    half-written, keeping its owner, group, mode and extended attributes.

    ``roots`` are the resolved paths the run was given: the file must lie
    inside one of them. NotWritten, when the file must not be replaced: a
    symbolic link, not a regular file, read-only, one of several hard links,
    outside the roots, or changed since it was read (its bytes are no longer
    ``expected``). The folder is opened once and every step works inside it,
    so that no link swapped in meanwhile can lead the write elsewhere.
    """
    directory, name = os.path.split(path)
    with _opened_directory(directory or os.curdir) as folder:
        _refuse_outside(folder, directory or os.curdir, name, roots)
        try:
            with _opened_file(folder, name) as existing:
                before = os.fstat(existing)
                _refuse_unsafe_to_replace(before, folder, name)
                if _read_all(existing) != expected:
                    raise FileChangedError()
                attributes = _extended_attributes(existing)
        except FileNotFoundError:
            raise NotWritten("no longer exists") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EINVAL, errno.EISDIR):
                raise NotWritten(exc.strerror) from None
            raise
        _write_replacement(folder, name, data, lambda new: _keep_metadata(new, before, attributes))


def write_into(output_dir: str, relative: str, data: bytes, mode: int) -> None:
    """Write ``data`` at ``relative`` under ``output_dir``, atomically and with
    ``mode``, creating the folders between. Nothing under ``output_dir`` is
    followed: a symbolic link (or any other non-regular file) where a folder or
    the file should be is NotWritten, naming it."""
    os.makedirs(output_dir, exist_ok=True)
    *folders, name = Path(relative).parts
    with _opened_directory(output_dir) as top:
        with _opened_subdirectories(top, output_dir, folders) as folder:
            _refuse_existing_non_file(folder, name, os.path.join(output_dir, relative))
            _write_replacement(folder, name, data, lambda new: os.fchmod(new, mode))


@contextlib.contextmanager
def _opened_directory(path: str, relative_to: Optional[int] = None, follow: bool = True) -> Iterator[int]:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    handle = os.open(path, flags, dir_fd=relative_to)
    try:
        yield handle
    finally:
        os.close(handle)


@contextlib.contextmanager
def _opened_subdirectories(top: int, top_path: str, names: list[str]) -> Iterator[int]:
    """The folder ``top/names[0]/names[1]/...``, each created when missing and
    none of them a link."""
    with contextlib.ExitStack() as opened:
        folder, shown = top, top_path
        for name in names:
            shown = os.path.join(shown, name)
            try:
                os.mkdir(name, dir_fd=folder)
            except FileExistsError:
                pass
            if stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode):
                raise NotWritten(f"{shown_path(shown)} is a symbolic link")
            folder = opened.enter_context(_opened_directory(name, relative_to=folder, follow=False))
        yield folder


def _refuse_existing_non_file(folder: int, name: str, shown: str) -> None:
    try:
        mode = os.lstat(name, dir_fd=folder).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise NotWritten(f"{shown_path(shown)} is a symbolic link")
    if not stat.S_ISREG(mode):
        raise NotWritten(f"{shown_path(shown)} {_not_regular(mode, name).strerror}")


def _refuse_outside(folder: int, directory: str, name: str, roots: list[str]) -> None:
    """NotWritten unless ``directory/name`` lies inside one of ``roots`` (resolved),
    and ``folder`` is the very directory that was checked."""
    real_directory = os.path.realpath(directory)
    opened, checked = os.fstat(folder), os.stat(real_directory)
    if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
        raise NotWritten("its folder was moved or replaced while it was being ported")
    real = os.path.join(real_directory, name)
    if not any(_within(real, root) for root in roots):
        raise NotWritten("lies outside the paths given")


def _refuse_unsafe_to_replace(info: os.stat_result, folder: int, name: str) -> None:
    if not info.st_mode & 0o222 or not _writable_by_us(folder, name):
        raise NotWritten("is read-only")
    if info.st_nlink > 1:
        # A new file renamed over one name would leave the others with the
        # old text; writing into the shared file cannot be made atomic.
        raise NotWritten(f"has {info.st_nlink} hard links, and the others would keep the old text")


def _writable_by_us(folder: int, name: str) -> bool:
    """The effective user's own permission (root may write anything, so its
    answer is not asked: the mode bits decide for root)."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return True
    return os.access(name, os.W_OK, dir_fd=folder, effective_ids=os.access in os.supports_effective_ids)


def _extended_attributes(handle: int) -> dict[str, bytes]:
    if not hasattr(os, "listxattr"):
        return {}
    try:
        return {key: os.getxattr(handle, key) for key in os.listxattr(handle)}
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)):
            return {}
        raise


def _keep_metadata(new: int, before: os.stat_result, attributes: dict[str, bytes]) -> None:
    """Give the new file what the one it replaces had. Owner first: changing
    it clears set-id bits, which the mode set last restores."""
    current = os.fstat(new)
    if (current.st_uid, current.st_gid) != (before.st_uid, before.st_gid):
        try:
            os.fchown(new, before.st_uid, before.st_gid)
        except PermissionError:
            raise NotWritten("its owner and group could not be kept") from None
    for key, value in attributes.items():
        try:
            os.setxattr(new, key, value)
        except OSError as exc:
            raise NotWritten(f"its extended attribute {key} could not be kept: {exc.strerror or exc}") from None
    os.fchmod(new, stat.S_IMODE(before.st_mode))


def write_whole(path: Path, data: bytes) -> None:
    """Replace (or create) the file at ``path`` with ``data`` atomically: a
    temporary file beside it, created exclusively, flushed and renamed over
    it; an existing file keeps its permission bits. Raises OSError."""
    folder = os.open(path.parent if str(path.parent) else ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            mode = stat.S_IMODE(os.stat(path.name, dir_fd=folder, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            mode = None
        _write_replacement(folder, path.name, data, lambda fd: os.fchmod(fd, mode) if mode is not None else None)
    finally:
        os.close(folder)


def _write_replacement(folder: int, name: str, data: bytes, finish: Callable[[int], None]) -> None:
    """Write a temporary file beside ``name`` in the open ``folder``, let
    ``finish`` give it its owner and mode, flush it to disk and rename it over
    ``name``."""
    with _signals_deferred():
        handle, temporary = tempfiles.mkstemp("", f".{name}.", ".hpu-port", dir_fd=folder)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                finish(out.fileno())
                os.fsync(out.fileno())
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=folder)
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


# What marks the folder a project's dependency files sit in.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def dependency_files_of_projects(paths: list[str], wanted: Callable[[str, Optional[str]], bool]) -> list[str]:
    """The dependency files (``wanted(path, file type)``, and ``setup.py``)
    of the project each path lies in: those in the folders from the path up
    to the project's root, the nearest folder that holds a project marker
    (`pyproject.toml`, `setup.py`, `setup.cfg`, `.git`); outside any project,
    those of the nearest folder that holds one. A run on a few files (a
    pre-commit hook) reads the pins a run on the whole tree reads."""
    found: dict[str, str] = {}
    for raw in paths:
        for folder in _project_folders(Path(raw), wanted):
            for entry in sorted(os.listdir(folder)):
                candidate = os.path.join(folder, entry)
                if (entry == "setup.py" or wanted(candidate, filetypes.by_name(candidate))) and os.path.isfile(candidate) and not os.path.islink(candidate):
                    found.setdefault(os.path.realpath(candidate), candidate)
    return list(found.values())


def _project_folders(path: Path, wanted: Callable[[str, Optional[str]], bool]) -> list[str]:
    """The folders from ``path`` up to its project's root (see ``dependency_files_of_projects``)."""
    try:
        folder = path.resolve()
    except (OSError, RuntimeError):
        return []
    if not folder.is_dir():
        folder = folder.parent
    walked, nearest = [], None
    for candidate in (folder, *folder.parents):
        try:
            names = os.listdir(candidate)
        except OSError:
            break
        walked.append(str(candidate))
        if any(name in _PROJECT_MARKERS for name in names):
            return walked
        if nearest is None and any(wanted(name, filetypes.by_name(name)) for name in names):
            nearest = str(candidate)
    return [nearest] if nearest else []


def project_root(path: str) -> Optional[str]:
    """The nearest folder at or above ``path`` that holds a project marker
    (`pyproject.toml`, `setup.py`, `setup.cfg`, `.git`); None outside any."""
    try:
        folder = Path(path).resolve()
    except (OSError, RuntimeError):
        return None
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        try:
            names = os.listdir(candidate)
        except OSError:
            return None
        if any(name in _PROJECT_MARKERS for name in names):
            return str(candidate)
    return None
