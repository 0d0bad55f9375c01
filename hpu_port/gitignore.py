"""Which files a directory walk passes over because they are not the project's.

In a git work tree, git says: the files it tracks (also those a `.gitignore`
would hide: they were added on purpose) and the untracked ones no ignore
rule hides, as `git ls-files --cached --others --exclude-standard` lists
them. Outside git, or where git cannot answer, the `.gitignore` files are
read here: every one from the walk's root up to the repository root (the
folder holding `.git`) and every one met below the root, each to the paths
under its own folder, as git reads them.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

# Long enough for the largest repositories; a git that hangs (a lock, a
# network file system) falls back to reading `.gitignore` files.
_GIT_TIMEOUT = 60


def ignore_rules(root: Path) -> Union["GitFiles", "GitIgnore"]:
    """What decides which files under ``root`` a walk passes over: git when
    ``root`` is in a work tree it can list, else the `.gitignore` files."""
    return GitFiles.at(root) or GitIgnore(root)


class GitFiles:
    """The files git lists under a folder of its work tree: tracked, or
    untracked and not ignored. A submodule is listed as one entry, so its
    files are left to its own run."""

    # What git tracks is the project's: a folder that holds tracked files is
    # walked whatever its name (`build/`); untracked tool folders (`venv/`)
    # are passed over by their names, as outside git.
    AUTHORITATIVE = True

    def __init__(self, root: Path, listed: list[str], tracked: list[str] = ()) -> None:
        self.root = root.absolute()
        self.files = frozenset(listed)
        self.folders = _with_parents(os.path.dirname(name) for name in listed)
        self.tracked_folders = _with_parents(os.path.dirname(name) for name in tracked)

    @classmethod
    def at(cls, root: Path) -> Optional["GitFiles"]:
        if _folders_above(root.resolve())[-1] == root.resolve() and not (root / ".git").exists():
            return None  # no `.git` here or above: not a work tree
        try:
            done = subprocess.run(
                ["git", "-C", str(root), "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"],
                stdin=subprocess.DEVNULL, capture_output=True, timeout=_GIT_TIMEOUT, check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None  # no git on this machine, or it hung
        if done.returncode != 0:
            return None  # not a work tree git accepts (a bare `.git` file, a safe.directory refusal)
        # `-t` tags each path: `? ` untracked, a letter and a space for a tracked one.
        entries = [os.fsdecode(entry) for entry in done.stdout.split(b"\0") if len(entry) > 2]
        listed = [os.path.normpath(entry[2:]) for entry in entries]
        tracked = [os.path.normpath(entry[2:]) for entry in entries if not entry.startswith("?")]
        return cls(root, listed, tracked)

    def tracks_folder(self, path: Path) -> bool:
        """Whether git tracks a file under ``path``."""
        return self._relative(path) in self.tracked_folders

    def ignored(self, path: Path, is_dir: bool) -> bool:
        relative = self._relative(path)
        return relative is not None and relative not in (self.folders if is_dir else self.files)

    def _relative(self, path: Path):
        try:
            relative = os.path.relpath(Path(path).absolute(), self.root)
        except ValueError:
            return None
        return "" if relative == "." else relative


def _with_parents(folders) -> frozenset:
    found = {""}
    for folder in folders:
        while folder:
            found.add(folder)
            folder = os.path.dirname(folder)
    return frozenset(found)

from pathspec import GitIgnoreSpec


@lru_cache(maxsize=None)
def _spec(folder: str) -> Optional[GitIgnoreSpec]:
    path = Path(folder) / ".gitignore"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return GitIgnoreSpec.from_lines(lines) if lines else None


def _folders_above(root: Path) -> list[Path]:
    """`root` and its parents up to the repository root (none outside a repository)."""
    chain = [root, *root.parents]
    for index, folder in enumerate(chain):
        if (folder / ".git").exists():
            return chain[: index + 1]
    return [root]


class GitIgnore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.above = _folders_above(self.root)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        real = Path(path).absolute()
        for folder in [*self.above, *self._folders_below(real)]:
            spec = _spec(str(folder))
            if spec is None:
                continue
            try:
                relative = real.relative_to(folder).as_posix()
            except ValueError:
                continue
            if spec.match_file(relative + ("/" if is_dir else "")):
                return True
        return False

    def _folders_below(self, path: Path) -> list[Path]:
        folders = []
        folder = path.parent
        while folder != self.root and self.root in folder.parents:
            folders.append(folder)
            folder = folder.parent
        return folders
