"""The project facts are kept between runs: a warm run finds them without parsing the project."""

from hpu_port import project
from hpu_port.cache import Cache, facts_data, facts_from_data
from hpu_port.runner import run
from tests.conftest import make_ruleset
from tests.test_project_facts import KERNEL_MODULE, _facts, _write


def test_facts_come_back_from_their_data_as_they_were(tmp_path):
    _write(tmp_path, KERNEL_MODULE)
    facts = _facts(tmp_path)
    assert facts.nvidia_only and facts.kernel_code
    assert facts_from_data(facts_data(facts)) == facts
    assert facts_from_data(facts_data(facts)).digest() == facts.digest()


def _findings(results):
    return sorted((r.path, f.line, f.code, f.message) for r in results.results for f in r.findings)


def test_a_warm_run_reuses_the_facts_and_a_changed_file_finds_them_again(tmp_path, monkeypatch):
    _write(tmp_path / "proj", KERNEL_MODULE)
    cache = Cache(tmp_path / "cache")
    calls = []
    real = project.find_facts
    monkeypatch.setattr(project, "find_facts", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = run([str(tmp_path / "proj")], make_ruleset(), apply=False, cache=Cache(tmp_path / "cache"))
    second = run([str(tmp_path / "proj")], make_ruleset(), apply=False, cache=Cache(tmp_path / "cache"))
    assert len(calls) == 1
    assert _findings(first) == _findings(second)
    # Another file's bytes: the facts may differ, so they are found again.
    (tmp_path / "proj" / "extra.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    run([str(tmp_path / "proj")], make_ruleset(), apply=False, cache=cache)
    assert len(calls) == 2


def test_damaged_facts_are_found_again(tmp_path, monkeypatch):
    _write(tmp_path / "proj", KERNEL_MODULE)
    run([str(tmp_path / "proj")], make_ruleset(), apply=False, cache=Cache(tmp_path / "cache"))
    (stored,) = (tmp_path / "cache" / "facts").glob("facts-*.json")
    stored.write_bytes(stored.read_bytes()[:-10] + b"0123456789")
    calls = []
    real = project.find_facts
    monkeypatch.setattr(project, "find_facts", lambda *a, **k: calls.append(1) or real(*a, **k))
    run([str(tmp_path / "proj")], make_ruleset(), apply=False, cache=Cache(tmp_path / "cache"))
    assert calls == [1]
