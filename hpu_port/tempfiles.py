"""A new file to write before renaming it over another (atomic replacement).

The standard ``tempfile`` module does this too, but importing it (with
``shutil`` and ``random``) costs a pre-commit run more than the writes it
serves; only its ``mkstemp`` is needed, and that takes a few lines.
"""

from __future__ import annotations

import os

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
_ATTEMPTS = 100


def mkstemp(directory: "os.PathLike[str] | str", prefix: str, suffix: str, dir_fd: "int | None" = None) -> tuple[int, str]:
    """Create a file no one else can have opened, readable only by its owner:
    its open descriptor and its path (relative to the open folder ``dir_fd``
    when given, so that no link swapped in for the folder's path can move it)."""
    for _ in range(_ATTEMPTS):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, _FLAGS, 0o600, dir_fd=dir_fd), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {directory}")


def mkstemp_in(directory_fd: int, prefix: str, suffix: str) -> tuple[int, str]:
    """``mkstemp`` in the folder open as ``directory_fd``: its descriptor and its
    name in that folder (a link swapped in for the folder's path cannot redirect it)."""
    for _ in range(_ATTEMPTS):
        name = f"{prefix}{os.urandom(6).hex()}{suffix}"
        try:
            return os.open(name, _FLAGS, 0o600, dir_fd=directory_fd), name
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary file name in the cache folder")
