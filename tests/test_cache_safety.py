"""The cache folder may be shared or planted: nothing in it runs, lies or redirects a write."""

import json
import os
import pickle
import stat
import subprocess
import sys

import pytest

from hpu_port import rule_cache, sealed
from hpu_port.cache import Cache
from hpu_port.rules import load_rules
from hpu_port.runner import run
from tests.cachefiles import read_table, write_table
from tests.conftest import make_ruleset

CUDA_SCRIPT = b"import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"


def _hpu_port(cwd, env, *arguments):
    return subprocess.run(
        [sys.executable, "-m", "hpu_port", *map(str, arguments)], capture_output=True, cwd=cwd, env=env
    )


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "train.py").write_bytes(CUDA_SCRIPT)
    (root / "other.py").write_bytes(CUDA_SCRIPT.replace(b"x =", b"y ="))
    return root


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, HPU_PORT_CACHE_DIR=str(tmp_path / "cache"))


class _Payload:
    """A pickle that would leave a file behind if anything unpickled it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_nothing_planted_in_the_cache_folder_runs(project, env, tmp_path):
    marker = tmp_path / "ran"
    cache = tmp_path / "cache"
    _hpu_port(project, env, "check", project)  # makes the folder and its entries
    planted = pickle.dumps(_Payload(marker))
    for folder in (cache, cache / rule_cache.SUBDIRECTORY):
        for entry in folder.iterdir():
            if entry.is_file() and entry.name != sealed.TAG_NAME:
                entry.write_bytes(planted)
                entry.with_suffix(".pickle").write_bytes(planted)
    for command in (["check"], ["rewrite", "--dry-run"], ["rules"]):
        _hpu_port(project, env, *command, project)
    assert not marker.exists()


def test_no_module_of_hpu_port_can_unpickle():
    from pathlib import Path

    package = Path(sealed.__file__).parent
    for module in package.rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert "import pickle" not in text and "pickle.load" not in text, module
        assert "marshal" not in text and "shelve" not in text, module


def test_a_planted_result_is_ignored_and_the_file_ported_again(project, tmp_path):
    cache_dir = tmp_path / "cache"
    fresh = run([str(project)], make_ruleset(), apply=True, cache=Cache(cache_dir))
    (table,) = cache_dir.glob("*.json")
    # Someone who can write the folder, but has not the user's key, swaps the
    # port of one file for their own bytes and marks the other as clean.
    data = json.loads(table.read_bytes().partition(b"\n")[2])
    train, other = (str(project / name) for name in ("train.py", "other.py"))
    data["entries"][train][2]["new"] = "aW1wb3J0IG9zOyBvcy5zeXN0ZW0oJ2V2aWwnKQo="  # import os; os.system('evil')
    data["entries"][other][2] = 0
    table.write_bytes(table.read_bytes().partition(b"\n")[0] + b"\n" + json.dumps(data).encode())
    again = run([str(project)], make_ruleset(), apply=True, cache=Cache(cache_dir))
    assert not any(result.from_cache for result in again.results)
    assert [r.new_source for r in again.results] == [r.new_source for r in fresh.results]


def test_a_table_sealed_with_another_key_is_ignored(project, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    run([str(project)], make_ruleset(), apply=False, cache=Cache(cache_dir))
    monkeypatch.setenv(sealed.KEY_ENV, "someone else's key")
    sealed.forget_key()
    try:
        again = run([str(project)], make_ruleset(), apply=False, cache=Cache(cache_dir))
    finally:
        monkeypatch.undo()
        sealed.forget_key()
    assert not any(result.from_cache for result in again.results)


@pytest.mark.parametrize(
    "damage",
    [
        lambda entry: entry.__setitem__(2, {"findings": [["HPU101", "m", "one", 1, 1, 1, "safe", 1, 0, "", None]]}),
        lambda entry: entry.__setitem__(2, {"findings": [["HPU101", "m", True, 1, 1, 1, "safe", True, True, "", None]]}),
        lambda entry: entry.__setitem__(2, {"findings": [], "new": "%%%", "error": None, "encoding": "utf-8",
                                            "imports_changed": False, "cells": []}),
        lambda entry: entry.__setitem__(2, {"findings": [], "new": None, "error": None, "encoding": "utf-8",
                                            "imports_changed": False, "cells": [[1, 2]]}),
        lambda entry: entry.__setitem__(2, [1, 2, 3]),
        lambda entry: entry.__setitem__(0, "yesterday"),
    ],
    ids=["line-not-int", "line-a-bool", "new-not-base64", "cell-short", "not-a-dict", "day-not-int"],
)
def test_a_damaged_entry_is_ported_again_without_a_traceback(project, env, tmp_path, damage):
    first = _hpu_port(project, env, "check", "--output-format", "json", project)
    (table,) = (tmp_path / "cache").glob("*.json")
    data = read_table(table)
    for entry in data["entries"].values():
        damage(entry)
    write_table(table, data)
    again = _hpu_port(project, env, "check", "--output-format", "json", project)
    assert b"Traceback" not in again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)


def test_the_cache_folder_is_the_users_and_tagged(project, env, tmp_path):
    _hpu_port(project, env, "check", project)
    cache = tmp_path / "cache"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert (cache / sealed.TAG_NAME).read_bytes() == sealed.TAG_TEXT
    assert any(cache.glob("*.json")) and any((cache / rule_cache.SUBDIRECTORY).glob("*.json"))


def test_links_planted_in_the_cache_create_and_delete_nothing_at_their_targets(project, env, tmp_path):
    cache = tmp_path / "cache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = [elsewhere / f"{n:02d}.json" for n in range(12)]
    for path in precious:
        path.write_text("keep me")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me too")
    cache.mkdir()
    (cache / rule_cache.SUBDIRECTORY).symlink_to(elsewhere)
    (cache / sealed.TAG_NAME).symlink_to(victim)
    # A table's name is known in advance to whoever can run hpu-port with the same rules.
    for name in [p.stem for p in precious[:3]]:
        (cache / f"{name}.json").symlink_to(precious[0])
    _hpu_port(project, env, "check", project)
    _hpu_port(project, env, "rewrite", "--dry-run", project)
    assert sorted(elsewhere.iterdir()) == precious
    assert all(path.read_text() == "keep me" for path in precious)
    assert victim.read_text() == "keep me too"


def test_a_cache_folder_that_is_a_link_is_not_used(project, env, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "cache").symlink_to(target)
    result = _hpu_port(project, env, "check", project)
    assert result.returncode == 1 and b"HPU" in result.stdout
    assert list(target.iterdir()) == []


def test_clean_deletes_only_a_folder_hpu_port_tagged(project, env, tmp_path):
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "todo.txt").write_text("mine")
    mistaken = dict(env, HPU_PORT_CACHE_DIR=str(home))
    refused = _hpu_port(project, mistaken, "clean")
    assert refused.returncode == 2 and b"CACHEDIR.TAG" in refused.stderr and b"nothing deleted" in refused.stderr
    assert (home / "notes" / "todo.txt").read_text() == "mine"

    # Another program's tag is not hpu-port's.
    (home / sealed.TAG_NAME).write_bytes(sealed.TAG_TEXT.splitlines(keepends=True)[0] + b"# another tool\n")
    assert _hpu_port(project, mistaken, "clean").returncode == 2 and home.exists()

    linked = dict(env, HPU_PORT_CACHE_DIR=str(tmp_path / "link"))
    _hpu_port(project, env, "check", project)
    (tmp_path / "link").symlink_to(tmp_path / "cache")
    assert _hpu_port(project, linked, "clean").returncode == 2 and (tmp_path / "cache").exists()

    removed = _hpu_port(project, env, "clean")
    assert removed.returncode == 0 and not (tmp_path / "cache").exists()


def test_the_key_is_made_once_readable_by_the_user_only(tmp_path, monkeypatch):
    monkeypatch.delenv(sealed.KEY_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    sealed.forget_key()
    try:
        first = sealed.key()
        sealed.forget_key()
        assert sealed.key() == first is not None
        path = sealed.key_file()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        # A key that others could have written is no key: the cache is not used.
        path.chmod(0o666)
        sealed.forget_key()
        assert sealed.key() is None
        rules = load_rules(cache_dir=tmp_path / "cache")
        assert rules and not (tmp_path / "cache").exists()
    finally:
        monkeypatch.undo()
        sealed.forget_key()


def test_rules_read_from_the_cache_are_the_rules_loaded(tmp_path):
    loaded = load_rules(cache_dir=tmp_path)
    cached = load_rules(cache_dir=tmp_path)
    assert cached == loaded
    for fresh, kept in zip(loaded, cached):
        assert (kept.params, kept.raw_params, kept.screening, kept.examples) == (
            fresh.params, fresh.raw_params, fresh.screening, fresh.examples
        )


def test_rules_read_from_the_cache_port_their_examples_alike(tmp_path):
    """Patterns come back compiled on first use: every rule that has one acts
    on its examples as the rule loaded from its file does."""
    from hpu_port.examples import run_example

    loaded = load_rules(cache_dir=tmp_path)
    cached = load_rules(cache_dir=tmp_path)
    with_patterns = [i for i, rule in enumerate(cached) if "Pattern" in repr(rule.params) or "re.compile" in repr(rule.params)]
    assert with_patterns
    for index in with_patterns:
        for example in loaded[index].examples:
            fresh = run_example(loaded[index], loaded, example)
            kept = run_example(cached[index], cached, example)
            assert (kept.new_source, kept.findings) == (fresh.new_source, fresh.findings), loaded[index].code


def test_the_cache_table_is_named_alike_in_every_process():
    # A set's order follows the process's string hashing: a name built from
    # one would change with each run, and no warm run would find its table.
    import subprocess
    import sys

    script = (
        "from hpu_port.cache import fingerprint\n"
        "from tests.conftest import make_ruleset\n"
        "print(fingerprint(make_ruleset(report_only=frozenset({'HPU701', 'HPU702', 'HPU703', 'HPU709', 'HPU711', 'HPU713'}))))\n"
    )
    names = {
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                       env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(names) == 1
