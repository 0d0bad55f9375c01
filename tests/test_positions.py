"""Positions found by generating only the innermost statements that hold the
nodes are those of generating the whole module."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from hpu_port.positions import holding_statements, positions_in_statements, positions_of, statement_starts
from hpu_port.walk import descendants

REPO = Path(__file__).resolve().parent.parent

NESTED = textwrap.dedent(
    '''\
    import torch


    class Trainer:
        """Docs."""

        # a comment before the method
        @staticmethod
        @torch.no_grad()
        def step(model, batch):
            for x in batch:
                if x is None:
                    continue
                elif x.is_cuda:
                    y = x.cuda()  # moved
                else:
                    y = x.to("cuda")
                while True:
                    with torch.autocast("cuda"):
                        try:
                            out = model(y); loss = out.sum()
                        except RuntimeError:
                            torch.cuda.empty_cache()
                        finally:
                            pass
                    break

        async def fetch(self):
            async with self.lock:
                async for item in self.queue:
                    await item.cuda()
    def top(
        a,
        b=torch.device("cuda"),
    ):
    \tif a:
    \t\treturn torch.cuda.synchronize()
    '''
)


def _cases():
    yield "nested.py", NESTED
    for path in sorted((REPO / "tests" / "fixtures").rglob("*.py")) + sorted((REPO / "docs" / "examples").glob("*.py")):
        yield path.name, path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name,text", list(_cases()), ids=[name for name, _ in _cases()])
def test_generating_only_the_holding_statements_places_every_node_the_same(name, text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("not Python this interpreter reads")  # a fixture of bad input
    module = cst.parse_module(text)
    starts = statement_starts(module, tree)
    assert starts is not None
    nodes = [node for node in descendants(module) if isinstance(node, (cst.Name, cst.Call, cst.SimpleString, cst.Attribute))]
    holders = holding_statements(module.body, set(nodes))
    grouped: dict = {}
    for node in nodes:
        grouped.setdefault(holders[node], []).append(node)
    found = positions_in_statements(module, grouped, starts)
    whole = positions_of(module, nodes)
    assert {node: found[node] for node in nodes} == {node: whole[node] for node in nodes}


def test_a_node_in_a_single_statement_of_a_long_function_generates_only_that_statement(monkeypatch):
    from hpu_port import positions

    module = cst.parse_module(NESTED)
    target = next(n for n in descendants(module) if isinstance(n, cst.Call) and cst.Module([]).code_for_node(n) == "out.sum()")
    generated = []
    real = positions._generate
    monkeypatch.setattr(positions, "_generate", lambda m, r, statement, *rest: generated.append(statement) or real(m, r, statement, *rest))
    trainer = module.body[1]
    found = positions_in_statements(module, {trainer: [target]}, statement_starts(module, ast.parse(NESTED)))
    assert (found[target].start.line, found[target].start.column) == (21, 47)
    assert [module.code_for_node(s).strip() for s in generated] == ["out = model(y); loss = out.sum()"]
