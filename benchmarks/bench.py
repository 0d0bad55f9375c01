"""How fast hpu-port is on a big real tree, next to ruff (and TorchFix when installed).

    python benchmarks/bench.py            # transformers 5.23.0 (2,860 files)
    python benchmarks/bench.py --quick    # timm 1.0.15 (255 files), plus TorchFix if installed
    python benchmarks/bench.py --startup  # one small file at a time, next to `black --check`
    python benchmarks/bench.py --hostile  # the generated hostile inputs of tests/test_hostile_inputs.py
    python benchmarks/bench.py --scaling  # cold check of 100 to 5,000 files of transformers

Downloads the package's wheel with pip (once, into --workdir), unpacks it and
measures, as the median of --runs runs each: `hpu-port check --no-cache`
(cold), `hpu-port check` (warm cache), `hpu-port rewrite --dry-run
--no-cache`, `ruff check --no-cache --select UP,E,F` on the same tree, and
both tools on a single 1,000-line training script, next to what importing
libcst and parsing that script costs alone. The commands take turns, one run
each per round, so the ratios hold on a machine whose speed drifts. Wall time,
CPU time (which barely moves when other work shares the machine) and peak
memory (all processes of the run together) are printed in a Markdown table
with the ratios to ruff and the targets. hpu-port's modules are compiled to
bytecode first, as a wheel install does. Needs ruff on PATH (`pip install -e
'.[bench]'`).

--against REV also times `check --no-cache` and `rewrite --dry-run --no-cache`
of hpu-port as it was at the commit REV (83854ca is the reference the speed
targets name), checked out into --workdir, in the same rounds: the table then
says how the code now compares with that commit on this machine, today.

--startup measures what a pre-commit hook pays per commit: `hpu-port check`
and `black --check` on a file with no CUDA text and on the bundled 100-line
CUDA script, taking turns, and whether hpu-port imported libcst for them.

--scaling times the cold `hpu-port check --no-cache` on trees of 100, 500,
1,000, 2,500 and 5,000 files drawn evenly from transformers 5.23.0 (beyond its
2,860 files, a second copy of it under another folder), and prints the time
and peak memory per size, and the time per megabyte, which a linear tool
keeps flat.

--hostile times `hpu-port rewrite --no-cache` on each hostile input the
tests generate (deep nesting, long lines, many comments and continued
lines, alias-heavy YAML, a huge notebook output), each run on a fresh copy,
and says whether it was ported or refused: every one should take seconds.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"full": ("transformers", "5.23.0"), "quick": ("timm", "1.0.15")}
TARGETS = {"cold": 3.0, "warm": 0.5}  # times ruff's wall time on the tree
SINGLE_FILE_TARGET = 0.6  # seconds
MEMORY_TARGET_MB = 500
SINGLE_FILE_LINES = 1000


@dataclass
class Measure:
    label: str
    seconds: float
    peak_mb: float
    runs: list
    cpu_seconds: float = 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller package (timm), and TorchFix if installed")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement; the median is reported [3]")
    parser.add_argument("--jobs", type=int, default=0, help="hpu-port -j (0: one per CPU) [0]")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hpu-port-bench")
    parser.add_argument("--output", type=Path, help="also write the report (Markdown) to this file")
    parser.add_argument("--startup", action="store_true", help="small files next to black --check (what a pre-commit hook pays)")
    parser.add_argument("--against", metavar="REV", help="also time hpu-port as it was at this commit (e.g. 83854ca)")
    parser.add_argument("--hostile", action="store_true", help="the hostile inputs the tests generate, one at a time")
    parser.add_argument("--scaling", action="store_true", help="cold check of 100 to 5,000 files: time and memory against size")
    args = parser.parse_args()
    if args.startup:
        return startup(args)
    if args.scaling:
        return scaling(args)
    if args.hostile:
        return hostile(args)
    if args.runs < 3:
        parser.error("--runs must be at least 3 (medians of fewer runs mislead)")
    ruff = shutil.which("ruff")
    if ruff is None:
        parser.error("ruff is not on PATH: pip install -e '.[bench]'")

    name, version = PACKAGES["quick" if args.quick else "full"]
    tree = unpacked_wheel(name, version, args.workdir)
    files = sorted(tree.rglob("*.py"))
    lines = sum(len(f.read_bytes().splitlines()) for f in files)
    single = training_script(args.workdir / "train_1000_lines.py")
    cache = args.workdir / "cache"
    hpu = [sys.executable, "-m", "hpu_port"]
    jobs = ["-j", str(args.jobs)]
    ruff_tree = [ruff, "check", "--no-cache", "--select", "UP,E,F", "--exit-zero", "-q", str(tree)]

    compile_bytecode()
    shutil.rmtree(cache, ignore_errors=True)
    warm_command = [*hpu, "check", "-q", "--cache-dir", str(cache), *jobs, str(tree)]
    run_once(warm_command)  # fills the cache
    # Each round runs every command once, so that a machine that slows down
    # or speeds up during the run affects them alike (the ratios hold).
    commands = {
        "ruff": ("ruff check (tree)", ruff_tree),
        "cold": ("hpu-port check --no-cache (cold)", [*hpu, "check", "-q", "--no-cache", *jobs, str(tree)]),
        "warm": ("hpu-port check (warm cache)", warm_command),
        "dry": ("hpu-port rewrite --dry-run --no-cache", [*hpu, "rewrite", "--dry-run", "-q", "--no-cache", *jobs, str(tree)]),
    }
    if args.against:
        old = older_checkout(args.against, args.workdir)
        commands["cold-old"] = (f"check --no-cache at {args.against}", [*old, "check", "-q", "--no-cache", *jobs, str(tree)])
        commands["dry-old"] = (f"rewrite --dry-run --no-cache at {args.against}",
                               [*old, "rewrite", "--dry-run", "-q", "--no-cache", *jobs, str(tree)])
    measures = measure_rounds(commands, args.runs)
    measures.update(
        measure_rounds(
            {
                "ruff1": ("ruff check (1,000-line script)", [ruff, "check", "--no-cache", "--select", "UP,E,F", "--exit-zero", "-q", str(single)]),
                "single": ("hpu-port check --no-cache (1,000-line script)", [*hpu, "check", "-q", "--no-cache", str(single)]),
                "floor": ("import libcst and parse the script", [sys.executable, "-c", PARSE_ONLY, str(single)]),
            },
            args.runs,
        )
    )
    torchfix = shutil.which("torchfix")
    if args.quick and torchfix:
        measures["torchfix"] = measure("TorchFix (tree)", [torchfix, str(tree)], args.runs)

    return publish(render(name, version, len(files), lines, measures, args), args)


def publish(report: str, args) -> int:
    """Print the report, and write it to --output if given."""
    print(report)
    if args.output:
        args.output.write_text(report, encoding="utf-8")
    return 0


STARTUP_TARGETS = {"plain": 1.0, "example": 1.2}  # times black --check on the same file
# A script with nothing to port, with an entry-point block (a trigger of the
# entry-point rules that only the code can rule out) and prose naming CUDA.
PLAIN_FILE = '''"""A script with nothing to port (it never touches cuda)."""
import os


def main() -> None:
    print(os.getcwd())  # no GPU here


if __name__ == "__main__":
    main()
'''


def startup(args) -> int:
    black = shutil.which("black")
    if black is None:
        raise SystemExit("bench: black is not on PATH: pip install -e '.[bench]'")
    args.workdir.mkdir(parents=True, exist_ok=True)
    plain = args.workdir / "plain.py"
    plain.write_text(PLAIN_FILE)
    example = args.workdir / "train_cuda.py"
    shutil.copyfile(REPO / "docs" / "examples" / "train_cuda.py", example)
    compile_bytecode()
    hpu = [sys.executable, "-m", "hpu_port", "check", "-q"]
    cache = ["--cache-dir", str(args.workdir / "startup-cache")]
    commands = {}
    for key, path in (("plain", plain), ("example", example)):
        commands[key] = (f"hpu-port check --no-cache {path.name}", [*hpu, "--no-cache", str(path)])
        commands[key + "-cached"] = (f"hpu-port check {path.name}", [*hpu, *cache, str(path)])
        # What a hook pays for a file the commit changed: rules from the cache,
        # the file itself new (a line is appended before each run).
        commands[key + "-changed"] = (
            f"hpu-port check {path.name}, changed",
            ["sh", "-c", 'echo "# $$" >> "$1" && shift && exec "$@"', "sh", str(path), *hpu, *cache, str(path)],
        )
        commands[key + "-black"] = (f"black --check {path.name}", [black, "--check", "-q", str(path)])
    # What any libcst-based tool pays before it reads a file: the floor of the
    # changed-file case, next to black's whole run.
    commands["libcst"] = ("import libcst", [sys.executable, "-c", "import libcst"])
    # Both keep caches, as a hook runs them: black answers for files it has
    # seen, hpu-port for rule files and files it has seen. Warm them once.
    for key in ("plain", "example"):
        run_once(commands[key + "-black"][1])
        run_once(commands[key + "-cached"][1])
    measures = measure_rounds(commands, max(args.runs, 5))
    out = [
        "## Start-up: one small file, as a pre-commit hook runs it",
        "",
        "| file | hpu-port check --no-cache | hpu-port, file changed (rules cached) | hpu-port check (caches warm) "
        "| black --check (cache warm) | x black, no cache | x black, file changed | x black, caches | target "
        "(file changed) | met | x black, file changed, CPU time | libcst imported |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, path in (("plain", plain), ("example", example)):
        cold, changed = measures[key], measures[key + "-changed"]
        warm, theirs = measures[key + "-cached"], measures[key + "-black"]
        ratio = changed.seconds / theirs.seconds
        target = STARTUP_TARGETS[key]
        out.append(
            f"| {path.name} | {cold.seconds:.3f} s | {changed.seconds:.3f} s | {warm.seconds:.3f} s | {theirs.seconds:.3f} s "
            f"| {cold.seconds / theirs.seconds:.2f} | {ratio:.2f} | {warm.seconds / theirs.seconds:.2f} | <= {target}x "
            f"| {'yes' if ratio <= target else 'no'} | {changed.cpu_seconds / theirs.cpu_seconds:.2f} "
            f"| {'yes' if imports_libcst([*hpu, '--no-cache', str(path)]) else 'no'} |"
        )
    floor, theirs = measures["libcst"], measures["example-black"]
    out += [
        "",
        f"`python -c 'import libcst'` alone: {floor.seconds:.3f} s, {floor.seconds / theirs.seconds:.2f}x "
        f"`black --check {example.name}` ({floor.cpu_seconds / theirs.cpu_seconds:.2f}x in CPU time).",
    ]
    out += ["", "## Machine", "", machine(0)]
    return publish("\n".join(out) + "\n", args)


SCALING_SIZES = (100, 500, 1000, 2500, 5000)


def scaling(args) -> int:
    name, version = PACKAGES["full"]
    source = unpacked_wheel(name, version, args.workdir)
    files = sorted(source.rglob("*.py"))
    compile_bytecode()
    hpu = [sys.executable, "-m", "hpu_port", "check", "-q", "--no-cache", "-j", str(args.jobs)]
    commands, sizes = {}, {}
    for size in SCALING_SIZES:
        tree = sampled_tree(files, source, size, args.workdir / f"scaling-{size}")
        sizes[size] = sum(path.stat().st_size for path in tree.rglob("*.py")) / 2**20
        commands[size] = (f"{size} files", [*hpu, str(tree)])
    measures = measure_rounds(commands, args.runs)
    out = [f"## Cold `hpu-port check --no-cache` against tree size ({name} {version})", "",
           "| files | source | wall time (median) | CPU time | wall time per MB | peak memory |", "|---|---|---|---|---|---|"]
    for size in SCALING_SIZES:
        measure = measures[size]
        out.append(f"| {size:,} | {sizes[size]:.1f} MB | {measure.seconds:.2f} s | {measure.cpu_seconds:.2f} s "
                   f"| {measure.seconds / sizes[size]:.3f} s | {measure.peak_mb:.0f} MB |")
    first, last = SCALING_SIZES[1], SCALING_SIZES[-1]  # the smallest tree is mostly start-up
    per_mb = (measures[last].seconds / sizes[last]) / (measures[first].seconds / sizes[first])
    out += ["", f"Time per megabyte at {last:,} files is {per_mb:.2f}x that at {first:,} files (1.00 is linear); "
            f"peak memory target on the whole package: <= {MEMORY_TARGET_MB} MB.", "", "## Machine", "", machine(args.jobs)]
    return publish("\n".join(out) + "\n", args)


def sampled_tree(files: list, source: Path, size: int, target: Path) -> Path:
    """A tree of ``size`` of ``files`` (under ``source``), drawn evenly from the
    sorted list so that every size holds the same mix of modules; past the
    package's own size, a second copy of it under `again/`."""
    if target.is_dir() and sum(1 for _ in target.rglob("*.py")) == size:
        return target
    shutil.rmtree(target, ignore_errors=True)
    chosen = [(path, path.relative_to(source)) for path in (files[i * len(files) // size] for i in range(min(size, len(files))))]
    if size > len(files):
        chosen = [(path, path.relative_to(source)) for path in files]
        chosen += [(path, Path("again") / path.relative_to(source)) for path in files[: size - len(files)]]
    for path, relative in chosen:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / relative)
    return target


def hostile(args) -> int:
    sys.path.insert(0, str(REPO))
    from tests.test_hostile_inputs import FAST, SLOW

    corpus = dict(sorted({**FAST, **SLOW}.items()))
    compile_bytecode()
    measures = measure_rounds(hostile_commands(corpus, args.workdir / "hostile"), args.runs, allowed=(0, 1, 2))
    out = ["## Hostile inputs: `hpu-port rewrite --no-cache`, one file at a time", "",
           "| input | size | wall time | peak memory | the tests expect it |", "|---|---|---|---|---|"]
    for name, (text, expected) in corpus.items():
        m, outcome = measures[name], "ported" if expected == "ported" else "refused"
        out.append(f"| {name} | {len(text.encode()) / 2**10:,.0f} KiB | {m.seconds:.2f} s | {m.peak_mb:.0f} MB | {outcome} |")
    out += ["", "## Machine", "", machine(1)]
    return publish("\n".join(out) + "\n", args)


def hostile_commands(corpus: dict, workdir: Path) -> dict:
    """A rewrite of each input, on a fresh copy each run (a rewritten file has nothing left to port)."""
    shutil.rmtree(workdir, ignore_errors=True)
    commands = {}
    for name, (text, _) in corpus.items():
        source, target = workdir / "sources" / name, workdir / "ported" / name
        for path in (source, target):
            path.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(text, encoding="utf-8")
        rewrite = [sys.executable, "-m", "hpu_port", "rewrite", "--no-cache", "-j", "1", str(target)]
        commands[name] = (name, ["sh", "-c", 'cp "$1" "$2" && shift 2 && exec "$@"', "sh", str(source), str(target), *rewrite])
    return commands


def imports_libcst(command: list) -> bool:
    """Whether running ``command`` (a Python one) imports libcst."""
    found = subprocess.run([command[0], "-X", "importtime", *command[1:]], capture_output=True, text=True)
    return any(line.rstrip().endswith(" libcst") for line in found.stderr.splitlines())


def unpacked_wheel(name: str, version: str, workdir: Path) -> Path:
    """The package's wheel, downloaded with pip and unpacked once."""
    target = workdir / f"{name}-{version}"
    if (target / name).is_dir():
        return target / name
    wheels = workdir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = list(wheels.glob(f"{name}-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps", "--only-binary=:all:",
             "--dest", str(wheels), "--quiet"],
            check=True,
        )
        found = list(wheels.glob(f"{name}-{version}-*.whl"))
    with zipfile.ZipFile(found[0]) as wheel:
        wheel.extractall(target)
    return target / name


def training_script(path: Path) -> Path:
    """A 1,000-line CUDA training script: the bundled examples, renamed copies
    of their functions and classes after one shared import block."""
    sources = [REPO / "docs" / "examples" / "train_cuda.py", *sorted((REPO / "tests" / "fixtures").glob("*_cuda.py"))]
    imports, bodies = [], []
    for source in sources:
        for line in source.read_text().splitlines():
            (imports if re.match(r"(import|from) \S", line) else bodies).append(line)
    head = sorted(set(imports))
    out, copy = list(head), 0
    while len(out) < SINGLE_FILE_LINES:
        copy += 1
        for line in bodies:
            out.append(re.sub(r"^(\s*(?:def|class) )(\w+)", rf"\g<1>\g<2>_{copy}", line))
    text = "\n".join(out[:SINGLE_FILE_LINES]) + "\n"
    while True:  # cut at a line where the code still compiles
        try:
            compile(text, str(path), "exec")
            break
        except SyntaxError:
            text = "\n".join(text.splitlines()[:-1]) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run_once(command: list, allowed: tuple = (0, 1)) -> tuple[float, float, float]:
    """Wall time, peak memory (MB) and CPU time (user + system) of one run,
    its child processes included. CPU time barely moves when other work
    shares the machine; wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = PeakMemory(process.pid)
    peak.start()
    process.wait()
    seconds = time.perf_counter() - start
    peak.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode not in allowed:
        raise SystemExit(f"bench: {' '.join(command)} exited with {process.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, peak.mb, cpu


def measure(label: str, command: list, runs: int) -> Measure:
    return _summary(label, [run_once(command) for _ in range(runs)])


def measure_rounds(commands: dict, runs: int, allowed: tuple = (0, 1)) -> dict:
    """``commands`` (key -> (label, command)) run in turn, ``runs`` rounds;
    exit codes other than ``allowed`` stop the benchmark."""
    samples: dict = {key: [] for key in commands}
    for _ in range(runs):
        for key, (_, command) in commands.items():
            samples[key].append(run_once(command, allowed))
    return {key: _summary(label, samples[key]) for key, (label, _) in commands.items()}


def _summary(label: str, samples: list) -> Measure:
    return Measure(
        label, statistics.median(s[0] for s in samples), max(s[1] for s in samples), samples,
        statistics.median(s[2] for s in samples),
    )


# What any libcst-based check of the script costs before a rule runs.
PARSE_ONLY = "import sys, libcst; libcst.parse_module(open(sys.argv[1], 'rb').read())"


def older_checkout(revision: str, workdir: Path) -> list:
    """The command prefix that runs hpu-port as it was at ``revision``: that
    commit's package, exported from this repository into ``workdir`` and
    compiled, run by this interpreter (the dependencies are the same)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{revision}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    target = workdir / f"hpu-port-{sha[:12]}"
    if not (target / "hpu_port").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "hpu_port", "rules"], capture_output=True, check=True).stdout
        # The package finds rules/ beside it, as in a checkout.
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target / "hpu_port")], stdout=subprocess.DEVNULL, check=False)
    # Not `python -m hpu_port` under PYTHONPATH: `-m` puts the working
    # directory first on the path, so run from this checkout it would time
    # today's package under the old one's name.
    start = f"import runpy, sys; sys.path.insert(0, {str(target)!r}); sys.argv[0] = 'hpu-port'; runpy.run_module('hpu_port', run_name='__main__')"
    return [sys.executable, "-c", start]


def compile_bytecode() -> None:
    """Compile hpu-port's modules, as installing a wheel does: without it a
    run in an environment that sets PYTHONDONTWRITEBYTECODE (or an editable
    install on its first run) also times the compiling of every module."""
    import hpu_port

    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(hpu_port.__file__).parent)],
        env=environment, stdout=subprocess.DEVNULL, check=False,
    )


class PeakMemory(threading.Thread):
    """Samples the resident memory of a process and its descendants (Linux /proc)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.mb = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.mb = max(self.mb, sum(_rss_kb(p) for p in _tree(self.pid)) / 1024)
            self._done.wait(0.02)

    def stop(self) -> None:
        self._done.set()
        self.join()
        if not Path("/proc").is_dir():  # elsewhere: the largest single process
            import resource

            self.mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _now_of(now, then) -> str:
    """How the code now compares with an older commit, by wall and by CPU
    time: CPU time barely moves when other work shares the machine, wall
    time does, so a ratio that holds only by wall says the machine was busy."""
    return f"now {now.seconds / then.seconds:.2f}x of it by wall, {now.cpu_seconds / then.cpu_seconds:.2f}x by CPU"


def render(name, version, files, lines, measures, args) -> str:
    ruff = measures["ruff"].seconds
    rows = [
        ("cold", "hpu-port check --no-cache", measures["cold"], ruff, f"<= {TARGETS['cold']}x ruff"),
        ("warm", "hpu-port check (warm cache)", measures["warm"], ruff, f"<= {TARGETS['warm']}x ruff"),
        ("dry", "hpu-port rewrite --dry-run --no-cache", measures["dry"], ruff, ""),
        ("ruff", "ruff check --no-cache --select UP,E,F", measures["ruff"], ruff, "reference"),
    ]
    if "torchfix" in measures:
        rows.append(("torchfix", "TorchFix", measures["torchfix"], ruff, "peer"))
    if "cold-old" in measures:
        rows += [
            ("cold-old", f"hpu-port check --no-cache at {args.against}", measures["cold-old"], ruff,
             _now_of(measures["cold"], measures["cold-old"])),
            ("dry-old", f"hpu-port rewrite --dry-run --no-cache at {args.against}", measures["dry-old"], ruff,
             _now_of(measures["dry"], measures["dry-old"])),
        ]
    out = [
        f"## {name} {version}: {files:,} files, {lines:,} lines",
        "",
        "| run | wall time (median of %d) | CPU time | x ruff | peak memory | target | met |" % args.runs,
        "|---|---|---|---|---|---|---|",
    ]
    for key, label, m, reference, target in rows:
        ratio = m.seconds / reference
        met = ""
        if key in TARGETS:
            met = "yes" if ratio <= TARGETS[key] and m.peak_mb <= MEMORY_TARGET_MB else "no"
        out.append(f"| {label} | {m.seconds:.2f} s | {m.cpu_seconds:.2f} s | {ratio:.2f} | {m.peak_mb:.0f} MB | {target} | {met} |")
    single, ruff1, floor = measures["single"], measures["ruff1"], measures["floor"]
    out += [
        "",
        f"## One {SINGLE_FILE_LINES:,}-line training script",
        "",
        "| run | wall time | x ruff | peak memory | target | met |",
        "|---|---|---|---|---|---|",
        f"| hpu-port check --no-cache | {single.seconds:.2f} s | {single.seconds / ruff1.seconds:.1f} | {single.peak_mb:.0f} MB "
        f"| <= {SINGLE_FILE_TARGET} s | {'yes' if single.seconds <= SINGLE_FILE_TARGET else 'no'} |",
        f"| ruff check | {ruff1.seconds:.2f} s | 1.0 | {ruff1.peak_mb:.0f} MB | reference | |",
        f"| `import libcst` and parse the script, nothing else | {floor.seconds:.2f} s | {floor.seconds / ruff1.seconds:.1f} "
        f"| {floor.peak_mb:.0f} MB | floor of a libcst check | |",
        "",
        "## Machine",
        "",
        machine(args.jobs),
    ]
    return "\n".join(out) + "\n"


def machine(jobs: int) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from hpu_port import __version__
    from hpu_port.parallel import default_jobs

    ruff_version = subprocess.run(["ruff", "--version"], capture_output=True, text=True).stdout.strip() if shutil.which("ruff") else ""
    memory = ""
    try:
        total_kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {total_kb / 2**20:.1f} GiB memory"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {default_jobs()} CPUs available{memory}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; hpu-port {__version__} (-j {jobs or default_jobs()}); {ruff_version}."
    )


if __name__ == "__main__":
    sys.exit(main())
