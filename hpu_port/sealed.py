"""The cache folder and its files: data only, sealed with a key that lives elsewhere.

The cache folder may be shared (a CI cache restored from another branch, a
container image, a virtual environment several users write to), so nothing
read from it is trusted:

- files hold JSON, never a format that can run code when it is read;
- each file carries a keyed digest (BLAKE2b) of its name and contents; the key
  lives outside the cache folder (``$HPU_PORT_CACHE_KEY``, else a file only the
  user can read in the user's state directory), so a planted or damaged file
  fails the check and is ignored: the results are computed again;
- the folder and its sub-folders are used only when they are real folders, not
  links, and every file is opened relative to its folder without following
  links, so a link planted in the cache makes hpu-port neither create nor
  delete anything at its target;
- the folder carries a ``CACHEDIR.TAG`` that names hpu-port, and `hpu-port
  clean` deletes only a folder that carries it.
"""

from __future__ import annotations

import hmac
import os
import stat
import sys
from pathlib import Path
from typing import Optional

from hpu_port import tempfiles
from hpu_port._compat import blake2b

KEY_ENV = "HPU_PORT_CACHE_KEY"
TAG_NAME = "CACHEDIR.TAG"
# The first line is the standard's signature (backup tools skip the folder);
# the second says whose cache it is: `clean` looks for both.
TAG_TEXT = b"Signature: 8a477f597d28d172789f06886806bc55\n# The hpu-port cache; safe to delete.\n"
_MAGIC = b"hpu-port-sealed 1 "
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_KEY_BYTES = 32

_key: Optional[bytes] = None
_key_read = False


def key() -> Optional[bytes]:
    """The key that seals cache files; None when there is none (no cache is used)."""
    global _key, _key_read
    if not _key_read:
        _key_read = True
        configured = os.environ.get(KEY_ENV)
        _key = blake2b(configured.encode("utf-8", "surrogateescape")).digest() if configured else _user_key()
    return _key


def forget_key() -> None:
    """Read the key again on next use (the environment changed)."""
    global _key, _key_read
    _key, _key_read = None, False


def key_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "hpu-port" / "cache-key"


def _user_key() -> Optional[bytes]:
    path = key_file()
    existing = _read_key(path)
    if existing is not None:
        return existing
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o600)
    except OSError:
        return _read_key(path)  # another run made it first, or the folder is not writable
    with os.fdopen(handle, "wb") as out:
        out.write(os.urandom(_KEY_BYTES))
    return _read_key(path)


def _read_key(path: Path) -> Optional[bytes]:
    """The key in ``path`` if it is a regular file of the user's that no one else can write."""
    try:
        handle = os.open(path, os.O_RDONLY | _NO_FOLLOW)
    except OSError:
        return None
    with os.fdopen(handle, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o022 or not _owned_by_user(info):
            return None
        data = source.read(_KEY_BYTES + 1)
    return data if len(data) == _KEY_BYTES else None


def _owned_by_user(info: os.stat_result) -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is None or info.st_uid == geteuid()


def seal(name: str, body: bytes, secret: bytes) -> bytes:
    return _MAGIC + _digest(name, body, secret).encode("ascii") + b"\n" + body


def unseal(name: str, data: bytes, secret: bytes) -> Optional[bytes]:
    """The body of a sealed file, or None when its seal does not match."""
    header, newline, body = data.partition(b"\n")
    if not newline or not header.startswith(_MAGIC):
        return None
    expected = _digest(name, body, secret).encode("ascii")
    return body if hmac.compare_digest(header[len(_MAGIC):], expected) else None


def _digest(name: str, body: bytes, secret: bytes) -> str:
    digest = blake2b(key=secret, digest_size=32)
    digest.update(name.encode("utf-8") + b"\0")
    digest.update(body)
    return digest.hexdigest()


class Folder:
    """A folder of the cache, opened without following a link at its last component."""

    def __init__(self, path: Path, create: bool) -> None:
        self.path = Path(path)
        self.fd: Optional[int] = None
        self._create = create

    def __enter__(self) -> Optional["Folder"]:
        try:
            if self._create:
                _make_real_folder(self.path)
            self.fd = os.open(self.path, os.O_RDONLY | _DIRECTORY | _NO_FOLLOW)
        except OSError:
            return None  # missing, a link, or not ours to write: no cache here
        if not stat.S_ISDIR(os.fstat(self.fd).st_mode):
            return None
        return self

    def __exit__(self, *exc_info) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def read(self, name: str, limit: int) -> Optional[bytes]:
        """A regular file's bytes (at most ``limit``), or None."""
        try:
            handle = os.open(name, os.O_RDONLY | _NO_FOLLOW, dir_fd=self.fd)
        except OSError:
            return None
        with os.fdopen(handle, "rb") as source:
            if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
                return None
            data = source.read(limit + 1)
        return data if len(data) <= limit else None

    def write(self, name: str, data: bytes) -> None:
        """Replace ``name`` with ``data``: written beside it, then renamed over it
        (a link planted under that name is replaced, never written through)."""
        handle, temporary = tempfiles.mkstemp_in(self.fd, ".tmp-", ".part")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            _unlink(temporary, self.fd)
            raise

    def ensure_tag(self) -> None:
        """Write the folder's CACHEDIR.TAG if it has none (never through a link)."""
        try:
            handle = os.open(TAG_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o644, dir_fd=self.fd)
        except OSError:
            return  # there already is one, or the folder is not writable
        with os.fdopen(handle, "wb") as out:
            out.write(TAG_TEXT)

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def modified(self, name: str) -> float:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mtime

    def remove(self, name: str) -> None:
        _unlink(name, self.fd)


def _unlink(name: str, fd: Optional[int]) -> None:
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass


def _make_real_folder(path: Path) -> None:
    """Create the cache folder (owner only) with its tag; refuse a link in its place."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(str(path))


def carries_tag(path: Path) -> bool:
    """Whether ``path`` is a real folder whose CACHEDIR.TAG hpu-port wrote."""
    with Folder(path, create=False) as folder:
        return folder is not None and folder.read(TAG_NAME, len(TAG_TEXT)) == TAG_TEXT
