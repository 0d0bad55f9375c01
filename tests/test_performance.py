"""Jobs and the cache change how fast a run is, never what it finds."""

import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest

from hpu_port import parallel, runner
from hpu_port.cache import Cache
from hpu_port.rule_cache import LazyPattern
from hpu_port.runner import run
from tests.cachefiles import read_table, write_table
from tests.conftest import REPO, make_ruleset

FIXTURES = sorted((REPO / "tests" / "fixtures").glob("*.py")) + [REPO / "docs" / "examples" / "train_cuda.py"]


@pytest.fixture
def tree(tmp_path):
    """A project of real training scripts, some in several copies, plus files with nothing to port."""
    root = tmp_path / "project"
    for copy in range(3):
        package = root / f"pkg{copy}"
        package.mkdir(parents=True)
        for fixture in FIXTURES:
            shutil.copy(fixture, package / fixture.name)
        (package / "util.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "broken.py").write_text("import torch\ntorch.cuda.synchronize(\n")
    return root


def outcome(summary):
    return [(r.path, r.findings, r.new_source, r.error) for r in summary.results]


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("screen_in_pool", [False, True])
@pytest.mark.parametrize("apply", [True, False])
def test_a_pool_of_workers_gives_the_same_results_in_the_same_order(tree, monkeypatch, screen_in_pool, apply):
    rules = make_ruleset()
    alone = run([str(tree)], rules, apply=apply, jobs=1)
    sent = []
    original = parallel.Pool.port
    monkeypatch.setattr(parallel.Pool, "port", lambda self, batches, *a: sent.extend(t for b in batches for t in b) or original(self, batches, *a))
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_FILES", 2)
    if screen_in_pool:  # many files left: the workers also screen them
        monkeypatch.setattr(parallel, "SCREEN_IN_POOL_BYTES", 0)
    pooled = run([str(tree)], rules, apply=apply, jobs=2)
    assert sent, "the pool was not used"
    # util.py has nothing any rule looks for: only the workers see it, and only when they screen.
    assert any(t.path.endswith("util.py") for t in sent) == screen_in_pool
    assert outcome(pooled) == outcome(alone)
    assert any(r.findings for r in alone.results) and any(r.error for r in alone.results)


def test_one_process_without_a_screen_first_gives_the_same_results(tree, monkeypatch):
    """A large run in one process leaves the screening of each file to its
    port, as the workers do, instead of reading every file twice."""
    rules = make_ruleset()
    screened_first = run([str(tree)], rules, apply=True, jobs=1)
    monkeypatch.setattr(parallel, "SCREEN_IN_POOL_BYTES", 0)
    screens = []
    original = runner._needs_parsing
    monkeypatch.setattr(runner, "_needs_parsing", lambda *a: screens.append(a) or original(*a))
    left_to_the_port = run([str(tree)], rules, apply=True, jobs=1)
    assert not screens
    assert outcome(left_to_the_port) == outcome(screened_first)


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
def test_rules_read_from_the_rule_cache_work_in_a_pool(tree, tmp_path, monkeypatch):
    """The rule cache gives back lazily compiled patterns: they must reach the
    workers intact (a worker that cannot load them once hung the parent)."""
    from hpu_port.model import Options
    from hpu_port.rules import load_rules, select_rules
    from hpu_port.settings import RuleSet

    load_rules(cache_dir=tmp_path)  # writes the cache
    cached = load_rules(cache_dir=tmp_path)
    assert any(isinstance(v, LazyPattern) for r in cached for v in vars(r).values()) or _holds_lazy(cached)
    assert pickle.loads(pickle.dumps(cached)) == cached
    rules = RuleSet(select_rules(cached, ()), Options())
    alone = run([str(tree)], rules, apply=True, jobs=1)
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)
    pooled = run([str(tree)], rules, apply=True, jobs=2)
    assert outcome(pooled) == outcome(alone)


def _holds_lazy(value, depth=0) -> bool:
    if isinstance(value, LazyPattern):
        return True
    if depth > 6:
        return False
    if isinstance(value, dict):
        return any(_holds_lazy(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_lazy(v, depth + 1) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return any(_holds_lazy(getattr(value, f), depth + 1) for f in value.__dataclass_fields__)
    return False


def test_a_lazy_pattern_survives_pickling_before_and_after_use():
    fresh = LazyPattern(r"cuda(\d)", 0)
    copy = pickle.loads(pickle.dumps(fresh))
    assert copy.search("to cuda7").group(1) == "7"
    used = pickle.loads(pickle.dumps(copy))
    assert used == fresh and used.sub("hpu", "cuda0") == "hpu"


def _check_json(tree, *options):
    process = subprocess.run(
        [sys.executable, "-m", "hpu_port", "check", str(tree), "--format", "json", "--no-cache", *options],
        capture_output=True, text=True, cwd=tree,
    )
    assert process.returncode == 2, process.stderr  # findings, and one file that does not parse
    return json.loads(process.stdout)


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
def test_jobs_on_the_command_line_change_nothing_in_the_report(tree):
    for copy in range(3, 12):  # enough source for the pool to be worth starting
        shutil.copytree(tree / "pkg0", tree / f"pkg{copy}")
    assert _check_json(tree, "-j1") == _check_json(tree, "-j2")


def test_a_warm_run_parses_no_file(tree, tmp_path, monkeypatch):
    rules = make_ruleset()
    cache = Cache(tmp_path / "cache")
    cold = run([str(tree)], rules, apply=True, cache=cache)
    # Only a second copy of a file already seen in this run can come from the cache.
    first_copies = [r for r in cold.results if "/pkg0/" in r.path]
    assert first_copies and not any(r.from_cache for r in first_copies)

    def no_parse(*args, **kwargs):
        raise AssertionError("a file was parsed on a warm run")

    monkeypatch.setattr("hpu_port.engine.cst.parse_module", no_parse)
    monkeypatch.setattr("hpu_port.triggers.ast.parse", no_parse)
    warm = run([str(tree)], rules, apply=True, cache=Cache(tmp_path / "cache"))
    assert outcome(warm) == outcome(cold)
    readable = [r for r in warm.results if not r.error or "syntax" in r.error]
    assert all(r.from_cache for r in readable)


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
def test_the_cache_follows_the_bytes_and_the_settings(tree, tmp_path):
    cache_dir = tmp_path / "cache"
    run([str(tree)], make_ruleset(), apply=True, cache=Cache(cache_dir))
    script = tree / "pkg1" / "train_cuda.py"
    script.write_bytes(script.read_bytes().replace(b"cuda:0", b"cuda:1"))
    again = run([str(tree)], make_ruleset(), apply=True, cache=Cache(cache_dir))
    fresh = [r.path for r in again.results if not r.from_cache and not r.error]
    assert fresh == [str(script)]
    other_options = run([str(tree)], make_ruleset(fp16_to_bf16=True), apply=True, cache=Cache(cache_dir))
    assert not any(r.from_cache for r in other_options.results if "/pkg0/" in r.path)
    check_only = run([str(tree)], make_ruleset(), apply=False, cache=Cache(cache_dir))
    assert not any(r.from_cache for r in check_only.results if "/pkg0/" in r.path)


def test_a_file_has_one_entry_whatever_its_versions(tree, tmp_path):
    """A pre-commit hook runs on every commit: the cache it reads and writes
    each time must grow with the files, not with their versions."""
    cache_dir = tmp_path / "cache"
    script = tree / "pkg1" / "train_cuda.py"
    for version in range(3):
        script.write_bytes(script.read_bytes() + f"# version {version}\n".encode())
        run([str(script)], make_ruleset(), apply=False, cache=Cache(cache_dir))
    (table,) = cache_dir.glob("*.json")
    assert list(read_table(table)["entries"]) == [str(script.resolve())]
    assert run([str(script)], make_ruleset(), apply=False, cache=Cache(cache_dir)).results[0].from_cache


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
def test_a_damaged_cache_is_ignored(tree, tmp_path):
    cache_dir = tmp_path / "cache"
    cold = run([str(tree)], make_ruleset(), apply=True, cache=Cache(cache_dir))
    for table in cache_dir.glob("*.json"):
        data = read_table(table)
        for entry in data["entries"].values():
            entry[-1] = {"findings": "nonsense"}
        data["entries"]["/elsewhere.py"] = 5
        write_table(table, data)  # sealed with the right key: only the checks of each entry stop it
    damaged = run([str(tree)], make_ruleset(), apply=True, cache=Cache(cache_dir))
    assert outcome(damaged) == outcome(cold)
    (next(cache_dir.glob("*.json"))).write_text("{not json")
    assert outcome(run([str(tree)], make_ruleset(), apply=True, cache=Cache(cache_dir))) == outcome(cold)


def _cli(tree, env, *arguments):
    return subprocess.run(
        [sys.executable, "-m", "hpu_port", *arguments], capture_output=True, text=True, cwd=tree, env=env
    )


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
def test_the_default_cache_is_outside_the_tree_and_no_cache_writes_none(tree, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HPU_PORT_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")
    before = sorted(p for p in tree.rglob("*"))
    _cli(tree, env, "check", str(tree))
    assert sorted(p for p in tree.rglob("*")) == before
    assert list((tmp_path / "user-cache" / "hpu-port").glob("*.json"))

    # A user cache directory that lies inside the scanned tree is not used...
    env["XDG_CACHE_HOME"] = str(tree / ".cache")
    _cli(tree, env, "check", str(tree))
    assert not (tree / ".cache").exists()
    # ...unless it is asked for explicitly.
    _cli(tree, env, "check", str(tree), "--cache-dir", str(tree / ".hpu-cache"))
    assert list((tree / ".hpu-cache").glob("*.json"))

    env["XDG_CACHE_HOME"] = str(tmp_path / "other-cache")
    _cli(tree, env, "check", str(tree), "--no-cache")
    assert not (tmp_path / "other-cache").exists()


def test_clean_removes_the_cache(tree, tmp_path):
    env = dict(os.environ, HPU_PORT_CACHE_DIR=str(tmp_path / "cache"))
    _cli(tree, env, "check", str(tree))
    assert (tmp_path / "cache" / "CACHEDIR.TAG").exists()
    removed = _cli(tree, env, "clean")
    assert removed.returncode == 0 and "removed" in removed.stderr
    assert not (tmp_path / "cache").exists()
    assert "no cache" in _cli(tree, env, "clean").stderr
