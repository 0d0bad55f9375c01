"""The labelled precision corpus: pinned real training code, ported in every configuration.

``corpus.toml`` pins each distribution (name, version, file, sha256). This module
downloads them with ``pip download --no-deps`` into a cache outside the repository
(``HPU_PORT_CORPUS_DIR``, default ``~/.cache/hpu-port-corpus``), checks the hash,
unpacks them, runs ``hpu-port check --format json`` over each package in every
configuration and splits the diffs into hunks.

A hunk here is one contiguous change: a run of removed and added lines with no
unchanged line in between. Its identity does not depend on line numbers: it is a
hash of the package, version, file, configuration, the removed and added lines and
two lines of the original file on either side (taken from the pinned original, so
a neighbouring change coming or going does not change it). ``change`` is the same
hash without the configuration: one rewrite seen in several configurations.

Run ``python -m tests.precision.corpus hunks OUT.jsonl`` to write every hunk;
``labels.jsonl`` beside this file holds the labelled ones, and
``python -m tests.precision.corpus precision OUT.jsonl`` measures the precision of
those hunks on the labelled sample (see ``measure.py``);
``python -m tests.precision.corpus silent OUT.jsonl`` lists the code lines that
still mention CUDA or NCCL with no finding, from the reports ``hunks`` saved
beside OUT.jsonl (see ``silence.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from tests.precision import measure
from tests.precision.silence import silent_lines

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "corpus.toml"
LABELS = HERE / "labels.jsonl"
KNOWN = HERE / "known_hunks.txt"
# Labelled-correct changes that are now rightly held (reported, not made): recall lost on purpose.
KNOWN_HELD = KNOWN.with_name("known_held.txt")

# The configurations whose rewrites differ; each is a list of command-line options.
CONFIGS = {
    "default": [],
    "eager": ["--mode", "eager"],
    "fp16-to-bf16": ["--fp16-to-bf16"],
    "unsafe-fixes": ["--unsafe-fixes"],
}
CONTEXT = 2
GAUDI_IMPORTS = ("import habana_frameworks", "from habana_frameworks")


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    file: str
    sha256: str

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


@dataclass
class Hunk:
    id: str
    change: str
    package: str
    version: str
    file: str
    line: int
    options: str
    removed: list[str]
    added: list[str]
    before: list[str]
    after: list[str]
    codes: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(
            [f" {line}\n" for line in self.before]
            + [f"-{line}\n" for line in self.removed]
            + [f"+{line}\n" for line in self.added]
            + [f" {line}\n" for line in self.after]
        )


def cache_dir() -> Path:
    return Path(os.environ.get("HPU_PORT_CORPUS_DIR", Path.home() / ".cache" / "hpu-port-corpus"))


def load_manifest(path: Path = MANIFEST) -> list[Package]:
    with open(path, "rb") as handle:
        return [Package(**entry) for entry in tomllib.load(handle)["package"]]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(package: Package, cache: Path) -> Path:
    """The package's archive, downloaded once and checked against its pinned hash."""
    archive = cache / "dl" / package.file
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=archive.parent) as scratch:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", scratch]
            if package.file.endswith(".whl"):
                # Wheels with a CPython tag were pinned for CPython 3.11 on manylinux.
                command += ["--only-binary", ":all:", "--python-version", "3.11",
                            "--platform", "manylinux_2_28_x86_64"]
            else:
                command += ["--no-binary", ":all:"]
            subprocess.run(command + [f"{package.name}=={package.version}"], check=True)
            shutil.move(os.path.join(scratch, package.file), archive)
    actual = sha256_of(archive)
    if actual != package.sha256:
        raise RuntimeError(f"{archive}: sha256 {actual} is not the pinned {package.sha256}")
    return archive


def unpack(package: Package, cache: Path) -> Path:
    """The unpacked source tree of the package (unpacked once). Unpacked
    beside the target and moved into place whole, so that test processes
    running at the same time never see a tree half unpacked."""
    target = cache / "src" / package.key
    done = target / ".unpacked"
    if done.exists():
        return target
    archive = fetch(package, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        staging = Path(scratch) / package.key
        staging.mkdir()
        if package.file.endswith(".whl"):
            with zipfile.ZipFile(archive) as wheel:
                wheel.extractall(staging)
        else:
            with tarfile.open(archive) as sdist:
                sdist.extractall(staging, filter="data") if hasattr(tarfile, "data_filter") else sdist.extractall(staging)
        (staging / ".unpacked").write_text(package.sha256)
        if target.exists() and not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # left half done by an interrupted run
        try:
            os.rename(staging, target)
        except OSError:
            pass  # another process put it there first
    if not done.exists():
        raise RuntimeError(f"{target}: could not unpack {package.file}")
    return target


def hpu_port(args: list[str], cwd: Path, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "hpu_port", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


def port_report(source: Path, options: list[str], run_cache: Optional[Path] = None) -> dict:
    """``hpu-port check --format json`` over a whole package: findings and
    diffs. ``run_cache``: a cache folder of this corpus run only, so that the
    package's project facts, found by its first configuration, serve the
    others (each file is still ported afresh: its options are in its key)."""
    if run_cache is None:
        result = hpu_port(["check", "--format", "json", "--no-cache", "--no-color", "-q", *options, "."], source)
    else:
        env = {**os.environ, "HPU_PORT_CACHE_DIR": str(run_cache)}
        result = hpu_port(["check", "--format", "json", "--no-color", "-q", *options, "."], source, env)
    if result.returncode not in (0, 1, 2) or not result.stdout:
        raise RuntimeError(f"hpu-port failed on {source} ({result.returncode}): {result.stderr[-2000:]}")
    return json.loads(result.stdout)


# The comment that keeps linters from deleting an unused Gaudi import changes
# no behaviour: a hunk that gained it is the change it was.
UNUSED_IMPORT_EXEMPTION = "  # noqa: F401"


def _identity(added_line: str) -> str:
    if added_line.lstrip().startswith(GAUDI_IMPORTS):
        return added_line.removesuffix(UNUSED_IMPORT_EXEMPTION)
    return added_line


_NAME_TEST = re.compile(r"(\s*)if (\w+) is not None:\s*$")


def _one_line_guards(added: list) -> list:
    """``added`` with each call behind a test of a Gaudi name on one line
    (`if htcore is not None: htcore.mark_step()`), as earlier releases wrote
    it: the same change however it is laid out."""
    joined, index = [], 0
    while index < len(added):
        test = _NAME_TEST.fullmatch(added[index])
        following = added[index + 1] if index + 1 < len(added) else ""
        if test and following.strip() and len(following) - len(following.lstrip()) > len(test.group(1)):
            joined.append(f"{test.group(1)}if {test.group(2)} is not None: {following.strip()}")
            index += 2
            continue
        joined.append(added[index])
        index += 1
    return joined


def is_import_insertion(removed: list, added: list) -> bool:
    """Whether a change only adds Gaudi's imports at the top level of a
    module, plain or in a `try` block that makes them optional."""
    lines = [line for line in added if line.strip()]
    return not removed and bool(lines) and not lines[0][:1].isspace() and all(map(_belongs_to_gaudi_import, lines))


def _belongs_to_gaudi_import(line: str) -> bool:
    text = line.strip()
    return (
        text.startswith(GAUDI_IMPORTS)
        or text in ("try:", "pass")
        or text.startswith("except ImportError")
        or re.fullmatch(r"\w+ = None", text) is not None
    )


def _digest(parts) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def split_diff(diff: str):
    """(original line, removed lines, added lines) for each contiguous change of a unified diff."""
    changes = []
    original_line = 0
    removed: list[str] = []
    added: list[str] = []
    start = 0

    def close():
        if removed or added:
            changes.append((start, list(removed), list(added)))
        removed.clear()
        added.clear()

    for line in diff.splitlines():
        if line.startswith("@@"):
            close()
            original_line = int(line.split()[1].lstrip("-").split(",")[0])
            # A hunk header "-0,0" (empty original) and "-N,0" (insertion after N) count from N + 1.
            if ",0 " in line.split("+")[0] + " ":
                original_line += 1
        elif line.startswith(("---", "+++")) and not (removed or added) and original_line == 0:
            continue
        elif line.startswith("\\"):
            continue
        elif line.startswith("-"):
            if not (removed or added):
                start = original_line
            removed.append(line[1:])
            original_line += 1
        elif line.startswith("+"):
            if not (removed or added):
                start = original_line
            added.append(line[1:])
        else:
            close()
            original_line += 1
    close()
    return changes


def _codes(findings, start: int, removed: list[str], added: list[str]) -> list[str]:
    """Rule codes of the fixable findings that produced a change at ``start``."""
    if added and not removed and all(line.lstrip().startswith(GAUDI_IMPORTS) for line in added):
        # Imports the file needs are reported once, at its first line.
        return sorted({f["code"] for f in findings if f["fixable"] and (f["line"], f["column"]) == (1, 1)})
    if removed:
        first, last = start, start + len(removed) - 1
    else:
        # An insertion follows the statement (or import block) that caused it.
        first, last = start - 3, start
    codes = {f["code"] for f in findings if f["fixable"] and f["line"] <= last and f["end_line"] >= first}
    return sorted(codes)


def file_hunks(package: Package, config: str, path: str, diff: str, original: list[str], findings) -> list[Hunk]:
    hunks = []
    seen: dict[str, int] = {}
    for start, removed, added in split_diff(diff):
        index = start - 1
        before = original[max(0, index - CONTEXT) : index]
        after = original[index + len(removed) : index + len(removed) + CONTEXT]
        # Where Gaudi's import lands follows the module's import order: the
        # same change wherever it goes, so its place is not its identity.
        placed = not is_import_insertion(removed, added)
        # Nor are the blank lines that set it apart from its neighbours.
        kept = added if placed else [line for line in added if line.strip()]
        content = [package.name, package.version, path, before if placed else [], removed,
                   [_identity(line) for line in _one_line_guards(kept)], after if placed else []]
        occurrence = seen.get(_digest(content), 0)
        seen[_digest(content)] = occurrence + 1
        change = _digest(content + [occurrence])
        hunks.append(
            Hunk(
                id=_digest([change, config]),
                change=change,
                package=package.name,
                version=package.version,
                file=path,
                line=start,
                options=config,
                removed=removed,
                added=added,
                before=before,
                after=after,
                codes=_codes(findings, start, removed, added),
            )
        )
    return hunks


def read_lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", errors="replace").splitlines()


def package_hunks(package: Package, source: Path, config: str, report: dict) -> list[Hunk]:
    findings_by_path: dict[str, list] = {}
    for finding in report["findings"]:
        findings_by_path.setdefault(finding["path"], []).append(finding)
    hunks = []
    for entry in report["files"]:
        path = entry["path"]
        # Notebook diffs are of cell sources, not of the file's lines.
        if not entry.get("diff") or path.endswith(".ipynb"):
            continue
        original = read_lines(source / path)
        hunks += file_hunks(package, config, path, entry["diff"], original, findings_by_path.get(path, []))
    return hunks


def corpus_hunks(configs=CONFIGS, cache: Path | None = None, reports: dict | None = None) -> list[Hunk]:
    """Every hunk of every package in every configuration (``reports`` collects the raw reports)."""
    cache = cache or cache_dir()
    hunks = []
    with tempfile.TemporaryDirectory(prefix="hpu-port-corpus-run-") as run_cache:
        for package in load_manifest():
            source = unpack(package, cache)
            for config in configs:
                report = port_report(source, CONFIGS[config], Path(run_cache))
                if reports is not None:
                    reports[(package.key, config)] = report
                hunks += package_hunks(package, source, config, report)
    return hunks


def load_labels(path: Path = LABELS) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def known_hunk_ids(path: Path = KNOWN) -> set[str]:
    """Ids of every hunk the corpus produced when the labels were made (labelled or not)."""
    lines = path.read_text().splitlines() if path.exists() else []
    return {line for line in lines if line and not line.startswith("#")}


def write_hunks(out_path: str) -> int:
    reports: dict = {}
    hunks = corpus_hunks(reports=reports)
    with open(out_path, "w") as out:
        for hunk in hunks:
            out.write(json.dumps(asdict(hunk)) + "\n")
    report_dir = Path(out_path).with_suffix(".reports")
    report_dir.mkdir(exist_ok=True)
    for (key, config), report in reports.items():
        (report_dir / f"{key}.{config}.json").write_text(json.dumps(report))
    print(f"{len(hunks)} hunks", file=sys.stderr)
    return 0


def print_precision(hunks_path: str) -> int:
    for line in measure.report_lines(measure.read_jsonl(Path(hunks_path)), load_labels(LABELS)):
        print(line)
    return 0


def print_silent(hunks_path: str) -> int:
    """Per package, the code lines that mention CUDA or NCCL and how many of
    them no finding speaks for, from the default reports ``hunks`` saved."""
    report_dir = Path(hunks_path).with_suffix(".reports")
    total_silent = 0
    for package in load_manifest():
        report = json.loads((report_dir / f"{package.key}.default.json").read_text())
        silent = silent_lines(unpack(package, cache_dir()), report)
        total_silent += len(silent)
        print(f"{package.key}: {len(silent)} silent lines")
        for line in silent:
            print(f"  {line}")
    print(f"all packages: {total_silent} silent lines")
    return 0


def main(argv: list[str]) -> int:
    commands = {"hunks": write_hunks, "precision": print_precision, "silent": print_silent}
    if len(argv) != 2 or argv[0] not in commands:
        print("usage: python -m tests.precision.corpus {hunks|precision|silent} HUNKS.jsonl", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
