"""Which files `.gitignore` files hide, for directory walks.

Every `.gitignore` from the walk's root up to the repository root (the folder
holding `.git`) applies, and so does every `.gitignore` met below the root,
each to the paths under its own folder, as git reads them.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

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
