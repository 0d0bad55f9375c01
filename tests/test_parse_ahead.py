"""A worker that starts before the project facts are found screens and parses
its first files meanwhile: the port that follows is the port it would have made."""

from __future__ import annotations

import queue

import pytest

from hpu_port import engine, parallel
from hpu_port.engine import parse_ahead, port_bytes
from hpu_port.project import ProjectFacts
from hpu_port.runner import Task
from tests.conftest import make_ruleset
from tests.test_triggers import _corpus


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("apply", [True, False])
def test_a_port_from_a_parse_made_ahead_is_the_port_made_at_once(apply):
    rules = make_ruleset(select=["ALL"], fp16_to_bf16=True)
    parsed = 0
    for name, text in _corpus():
        path = f"{name}.py"
        ahead = parse_ahead(path, text, rules, apply)
        parsed += ahead is not None and ahead.module is not None
        a, b = port_bytes(path, text, rules, apply, ahead), port_bytes(path, text, rules, apply)
        assert (a.findings, a.new_source, a.error) == (b.findings, b.new_source, b.error), name
    assert parsed > 100  # the corpus is code rules act on: most of it is parsed ahead


def test_files_of_other_types_are_left_to_their_port():
    rules = make_ruleset(select=["ALL"])
    assert parse_ahead("train.sh", b"export CUDA_VISIBLE_DEVICES=0\n", rules, True) is None
    assert parse_ahead("setup.py", b"import torch\ntorch.cuda.synchronize()\n", rules, True) is None
    assert parse_ahead("t.py", b"import torch\ntorch.cuda.synchronize()\n", rules, True).module is not None


def test_a_worker_parses_its_batch_before_it_waits_for_the_facts(monkeypatch):
    rules = make_ruleset(select=["ALL"])
    items = [
        ("a.py", b"import torch\ntorch.cuda.synchronize()\n", 0),
        ("b.py", b"def add(a, b):\n    return a + b\n", 0),
        ("c.py", b"import torch\nx = torch.zeros(3).cuda()\n", 0),
    ]
    expected = [port_bytes(path, source, rules, False) for path, source, _ in items]
    events = []
    real_parse_ahead = engine.parse_ahead
    monkeypatch.setattr(engine, "parse_ahead", lambda *args: events.append("parse") or real_parse_ahead(*args))
    facts_queue: queue.Queue = queue.Queue()
    facts_queue.put(("digest", [ProjectFacts()]))
    monkeypatch.setattr(parallel, "_WORKER_RULESETS", [rules])
    monkeypatch.setattr(parallel, "_WORKER_FACTS", [None])
    monkeypatch.setattr(parallel, "_FACTS_QUEUE", [facts_queue])
    monkeypatch.setattr(rules, "_facts", parallel._FactsToCome(0))
    real_wait = parallel._FactsToCome.wait
    monkeypatch.setattr(parallel._FactsToCome, "wait", lambda self: events.append("wait") or real_wait(self))

    results = parallel._port_items(items, False)

    assert events[:4] == ["parse", "parse", "parse", "wait"]
    assert [(r.findings, r.error) for r in results] == [(r.findings, r.error) for r in expected]
    # With the facts at hand, the next batch is ported file by file.
    events.clear()
    parallel._port_items(items, False)
    assert "parse" not in events


def test_the_first_batches_are_larger_while_the_facts_are_found():
    tasks = [Task(number, f"{number}.py", b"x" * 100_000, None) for number in range(60)]
    plain = parallel._batches(tasks)
    leading = parallel._batches(tasks, leading=2)
    assert max(sum(len(t.source) for t in batch) for batch in plain) <= parallel.BATCH_BYTES
    assert [sum(len(t.source) for t in batch) > parallel.BATCH_BYTES for batch in leading[:3]] == [True, True, False]
    assert sorted(t.index for batch in leading for t in batch) == list(range(60))


@pytest.mark.parametrize("apply,facts_to_come,leading", [(False, True, 2), (True, True, 0), (False, False, 0)])
def test_only_a_check_makes_larger_first_batches_while_the_facts_are_found(monkeypatch, apply, facts_to_come, leading):
    """A rewrite parses whole the files it changes: held beside a large
    batch's trees, they take far more memory; with the facts found, no
    first batch is larger."""
    asked = []
    monkeypatch.setattr(parallel, "_batches", lambda tasks, leading=0: asked.append(leading) or [tasks])

    class Workers:
        def port(self, batches, apply, facts_later):
            return iter(())

        def close(self):
            pass

    tasks = [Task(number, f"{number}.py", b"x" * 200_000, None) for number in range(4)]
    list(parallel.port_all(tasks, apply, 2, Workers(), facts_later=(lambda: None) if facts_to_come else None))
    assert asked == [leading]
