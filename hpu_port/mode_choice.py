"""Choosing the execution mode before the first rewrite (`hpu-port init`).

Lazy and eager ports differ: lazy mode gets `mark_step()` after every backward
pass and optimizer step and reports `torch.compile`; eager mode gets no
mark_step and compiles with `hpu_backend`. Switching later means reverting the
port and porting again, so the choice is made first, for this tree: what each
mode does to its diff, which Gaudi release the project targets, and whether
the tree already holds a port made for one mode. The choice is written into
`[tool.hpu-port]`; nothing here prints.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hpu_port._compat import toml

MODES = ("lazy", "eager")
# What a port made for each mode leaves in the code.
PORT_MARKS = {"lazy": b"mark_step(", "eager": b"hpu_backend"}
# The last release line whose bridge defaults to lazy mode (PT_HPU_LAZY_MODE=1
# in its sources); Intel's current documentation makes eager mode with
# torch.compile the default and calls lazy mode a legacy fallback.
LAST_LAZY_DEFAULT = (1, 19)

# Where a project names the Gaudi software it targets: a Gaudi Docker image,
# the PyTorch plug-in, optimum-habana's releases follow the software's.
_RELEASE = re.compile(
    rb"gaudi-docker/(\d+)\.(\d+)"
    rb"|habana[-_]torch[-_]plugin\s*[=~]=\s*(\d+)\.(\d+)"
    rb"|habana[-_]frameworks\S*\s*[=~]=\s*(\d+)\.(\d+)"
)
_DEPENDENCY_NAMES = re.compile(r"(requirements.*\.(txt|in)|pyproject\.toml|setup\.(cfg|py)|.*[Dd]ockerfile.*|Containerfile|.*\.ya?ml)$")


@dataclass
class ModeEffects:
    """What each mode would do to the tree's diff and findings, by rule code."""

    lazy: Counter = field(default_factory=Counter)
    eager: Counter = field(default_factory=Counter)
    files: int = 0


@dataclass
class Existing:
    """Signs of a port already made in a mode: files by sign."""

    mark_step_files: list[str] = field(default_factory=list)
    hpu_backend_files: list[str] = field(default_factory=list)
    lazy_env_files: list[str] = field(default_factory=list)

    @property
    def mode(self) -> Optional[str]:
        if self.mark_step_files and not self.hpu_backend_files:
            return "lazy"
        if self.hpu_backend_files and not self.mark_step_files:
            return "eager"
        return None


@dataclass
class Advice:
    mode: str
    why: str


def effects(summary_by_mode: dict) -> ModeEffects:
    """The findings of the rules that only one mode has (``mode`` in a rule
    file), from a `check` of the tree in each mode."""
    found = ModeEffects()
    for mode, summary in summary_by_mode.items():
        counts = getattr(found, mode)
        for result in summary.results:
            only = {rule.code for rule in result.rules if rule.mode == mode}
            counts.update(f.code for f in result.findings if f.code in only)
        found.files = max(found.files, summary.scanned)
    return found


def existing_port(root: Path) -> Existing:
    """Python files that already carry a mode's marks: `mark_step()` calls,
    `backend="hpu_backend"`, a `PT_HPU_LAZY_MODE` setting."""
    found = Existing()
    for path in _files(root, lambda name: name.endswith((".py", ".ipynb"))):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        shown = str(path.relative_to(root))
        if PORT_MARKS["lazy"] in data:
            found.mark_step_files.append(shown)
        if PORT_MARKS["eager"] in data:
            found.hpu_backend_files.append(shown)
        if b"PT_HPU_LAZY_MODE" in data:
            found.lazy_env_files.append(shown)
    return found


def targeted_release(root: Path) -> Optional[tuple[int, int]]:
    """The newest Gaudi software release (major, minor) the project's
    dependency files, images or workflows name; None when none does."""
    releases = []
    for path in _files(root, lambda name: bool(_DEPENDENCY_NAMES.match(name))):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for match in _RELEASE.finditer(data):
            numbers = [int(n) for n in match.groups() if n is not None]
            releases.append((numbers[0], numbers[1]))
    return max(releases) if releases else None


def advise(effects_found: ModeEffects, release: Optional[tuple[int, int]], existing: Existing) -> Advice:
    """The mode this tree is best ported for, and why in one sentence."""
    if existing.mode is not None:
        return Advice(existing.mode, f"the tree already holds a port made for {existing.mode} mode")
    compiles = effects_found.lazy.get("HPU202", 0)
    if compiles:
        places = f"{compiles} place" + ("" if compiles == 1 else "s")
        return Advice("eager", f"the code uses torch.compile ({places}), which lazy mode does not support")
    # FSDP in the code (HPU206) or turned on by a trainer or launcher config (HPU849).
    sharded = effects_found.lazy.get("HPU206", 0) + effects_found.lazy.get("HPU849", 0)
    if sharded:
        places = f"{sharded} place" + ("" if sharded == 1 else "s")
        return Advice("eager", f"the project shards with FSDP ({places}, in its code or its configs), which Gaudi runs in eager mode with torch.compile only")
    if release is not None and release <= LAST_LAZY_DEFAULT:
        shown = f"{release[0]}.{release[1]}"
        return Advice("lazy", f"the project targets Gaudi software {shown}, whose default is lazy mode")
    return Advice(
        "eager",
        "Intel's current documentation makes eager mode with torch.compile the default and calls lazy mode a legacy fallback",
    )


def configured_mode(pyproject: Path) -> Optional[str]:
    """The mode `[tool.hpu-port]` of ``pyproject`` sets, if it sets one."""
    table = _hpu_port_table(pyproject)
    mode = table.get("mode") if table is not None else None
    return mode if isinstance(mode, str) else None


class ConfigWriteError(Exception):
    """The configuration could not be written; the message names the file."""


def write_mode(pyproject: Path, mode: str) -> str:
    """Set `mode` in `[tool.hpu-port]` of ``pyproject`` (creating the file or
    the table), keeping every other byte; returns what was done."""
    if mode not in MODES:
        raise ValueError(mode)
    line = f'mode = "{mode}"'
    if not pyproject.exists():
        _write_whole(pyproject, f"[tool.hpu-port]\n{line}\n".encode())
        return f"created {pyproject} with [tool.hpu-port] {line}"
    data = pyproject.read_bytes()
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    new = _with_mode(data, line.encode(), newline)
    try:
        toml().loads(new.decode("utf-8"))
    except Exception as exc:  # the result must stay a valid TOML file
        raise ConfigWriteError(f"{pyproject}: cannot add {line} to [tool.hpu-port]: {exc}") from None
    if _hpu_port_table_of(new).get("mode") != mode:
        raise ConfigWriteError(f"{pyproject}: cannot set {line}: the [tool.hpu-port] table is not written as one table")
    _write_whole(pyproject, new)
    return f"set {line} in [tool.hpu-port] of {pyproject}"


def _with_mode(data: bytes, line: bytes, newline: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    header = next((i for i, text in enumerate(lines) if re.match(rb"\s*\[\s*tool\s*\.\s*[\"']?hpu-port[\"']?\s*\]", text)), None)
    if header is None:
        ending = b"" if not data or data.endswith((b"\n", b"\r")) else newline
        return data + ending + newline + b"[tool.hpu-port]" + newline + line + newline
    end = next((i for i in range(header + 1, len(lines)) if lines[i].lstrip().startswith(b"[")), len(lines))
    for index in range(header + 1, end):
        if re.match(rb"\s*mode\s*=", lines[index]):
            # Only the value changes: a comment after it stays.
            value = line.split(b"=", 1)[1].strip()
            lines[index] = re.sub(rb"^(\s*mode\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s#]+)", lambda m: m.group(1) + value, lines[index])
            return b"".join(lines)
    lines.insert(header + 1, line + newline)
    if not lines[header].endswith((b"\n", b"\r")):
        lines[header] += newline
    return b"".join(lines)


def _write_whole(path: Path, data: bytes) -> None:
    from hpu_port.files import write_whole

    try:
        write_whole(path, data)
    except OSError as exc:
        raise ConfigWriteError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _hpu_port_table(pyproject: Path) -> Optional[dict]:
    try:
        return _hpu_port_table_of(pyproject.read_bytes())
    except (OSError, ValueError):
        return None


def _hpu_port_table_of(data: bytes) -> dict:
    try:
        parsed = toml().loads(data.decode("utf-8"))
    except Exception as exc:
        raise ValueError(str(exc)) from None
    table = parsed.get("tool", {}).get("hpu-port", {})
    return table if isinstance(table, dict) else {}


def _files(root: Path, wanted) -> list[Path]:
    from hpu_port.files import SKIPPED_DIRS

    found = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        found += [Path(directory) / name for name in sorted(filenames) if wanted(name)]
    return found
