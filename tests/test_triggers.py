"""The screens that decide, before the full parse, which rules could act on a file."""

import sys
import textwrap

import pytest

from hpu_port.engine import port_source
from hpu_port.triggers import code_view, name_trigger, text_trigger
from tests.conftest import make_ruleset


def codes(ruleset):
    return None if ruleset is None else {rule.code for rule in ruleset.rules}


def source(text):
    return textwrap.dedent(text).lstrip("\n").encode()


def test_a_name_needs_every_component_as_a_whole_word():
    rules = make_ruleset(select=["HPU101"])
    assert rules.for_source(b"from torch.cuda import synchronize\nsynchronize()\n") is not None
    assert rules.for_source(b"import torch\ntorch.cuda.synchronize()\n") is not None
    # Every part occurs, but only inside other identifiers.
    assert rules.for_source(b"torch_cuda_synchronize = my_torch.cudas.synchronized\n") is None


def test_keyword_rules_need_the_keyword_they_act_on():
    rules = make_ruleset(select=["HPU605"])
    assert rules.for_source(b"import torch\nemb = torch.nn.Embedding(10, 3)\n") is None
    assert rules.for_source(b"import torch\nemb = torch.nn.Embedding(10, 3, sparse=True)\n") is not None


def test_text_triggers_match_as_written_and_check_enclosed_words_first():
    trigger = text_trigger(".backward(")
    assert trigger.words == {b"backward"} and trigger.texts == {b".backward("}
    assert name_trigger("transformers.*.from_pretrained").words == {b"transformers", b"from_pretrained"}


def test_comments_and_docstrings_are_blanked_but_code_strings_are_not():
    text = source('''
        """Moves the model to cuda."""
        x = "cuda"  # cuda here too
        y = "a # not a comment cuda"
        def f():
            """cuda"""
            return 1
    ''')
    view = code_view(text)
    lines = view.text.decode().splitlines()
    assert "cuda" not in lines[0] and lines[0].strip() == ""
    assert lines[1].rstrip() == 'x = "cuda"'
    assert lines[2] == 'y = "a # not a comment cuda"'
    assert "cuda" not in lines[4]
    assert len(view.text.splitlines()) == len(text.splitlines())


MATCH_WITH_CONSTANT_PATTERNS = '''
import torch
match x:
    case None | True:  # "cuda" in a comment
        y = "cuda"
    case {"k": False, **rest} if z == "a # b":
        torch.cuda.synchronize()
    case Point(x=None, y=[1, *others]):
        pass
'''


def test_match_statements_with_constant_patterns_are_read():
    text = source(MATCH_WITH_CONSTANT_PATTERNS)
    view = code_view(text)
    if sys.version_info < (3, 10):  # this Python cannot parse it: the full parser decides
        assert view is None
    else:
        lines = view.text.decode().splitlines()
        assert "cuda" not in lines[2]
        assert lines[3].strip() == 'y = "cuda"'
        assert '"a # b"' in lines[4]
    result = port_source("match.py", text, make_ruleset())
    assert result.error is None
    assert b"torch.hpu.synchronize()" in result.new_source


@pytest.mark.parametrize(
    "text",
    [
        b"x = (1,\n",  # a syntax error: the full parser must report it
        b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'  # cuda\n",  # column offsets would not be byte offsets
    ],
)
def test_the_code_view_steps_aside_when_it_cannot_be_exact(text):
    assert code_view(text) is None


def test_cuda_only_in_comments_and_docstrings_needs_no_parse(monkeypatch):
    text = source('''
        """Train on cuda with torch.cuda.amp."""
        import torch
        x = torch.zeros(2)  # was .cuda() before
    ''')
    rules = make_ruleset()
    assert rules.for_source(text) is not None  # the raw bytes mention CUDA
    assert rules.for_code(text) is None  # the code does not

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed a file no rule could act on")

    monkeypatch.setattr("hpu_port.engine.cst.parse_module", no_parse)
    result = port_source("f.py", text, rules)
    assert result.findings == [] and result.new_source is None and result.error is None


def test_a_syntax_error_is_still_reported_by_the_full_parser():
    result = port_source("f.py", b"import torch\ntorch.cuda.synchronize(\n", make_ruleset())
    assert result.error and "syntax error" in result.error


def test_the_loop_screen_keeps_loops_under_the_context_and_drops_the_others():
    rules = make_ruleset(select=["HPU204"])
    under = source('''
        import torch
        @torch.no_grad()
        def evaluate(model, batches):
            for batch in batches:
                model(batch)
    ''')
    elsewhere = source('''
        import torch
        def evaluate(model, batches):
            with torch.no_grad():
                out = model(batches[0])
            for batch in batches:
                print(batch)
    ''')
    assert codes(rules.for_code(under)) == {"HPU204"}
    assert rules.for_code(elsewhere) is None
    assert [f.code for f in port_source("f.py", under, rules).findings] == ["HPU204"]


@pytest.mark.parametrize(
    "header, call, kept",
    [
        ("import torch", "print(batch)", False),  # a builtin is no model
        ("import torch\nfrom tqdm import tqdm", "tqdm(batch)", False),  # nor is an import
        ("import torch", "run(batch)", True),  # a name the file does not import may be one
        ("import torch\nfrom tqdm import tqdm\ntqdm = load()", "tqdm(batch)", True),  # rebound
        ("import torch\ndef f(print): pass", "print(batch)", True),  # a parameter's name
        ("import torch", "self.net(batch)", True),  # a method named like a model's
    ],
)
def test_the_inference_loop_screen_decides_like_the_rule(monkeypatch, header, call, kept):
    rules = make_ruleset(select=["HPU204"])
    text = (header + "\nwith torch.no_grad():\n    for batch in batches:\n        " + call + "\n").encode()
    assert (rules.for_code(text) is not None) == kept
    if not kept:  # the screen may keep too much, never too little
        screened = port_source("f.py", text, rules).findings
        _turn_screens_off(monkeypatch)
        assert screened == port_source("f.py", text, rules).findings


def test_unused_suppression_comments_are_still_read_when_selected():
    text = b"x = 1  # hpu-port: ignore[HPU101]\n"
    rules = make_ruleset(select=["HPU002", "HPU101"])
    assert codes(rules.for_code(text)) == {"HPU002"}
    assert [f.code for f in port_source("f.py", text, rules).findings] == ["HPU002"]


def _corpus():
    """Every rule example and every bundled script: code written to make rules act."""
    from hpu_port.examples import example_file, example_source
    from hpu_port.rules import load_rules
    from tests.conftest import REPO

    for rule in load_rules():
        for number, example in enumerate(rule.examples, 1):
            if not example_file(rule, example).endswith(".py"):
                continue  # other file types are not Python: no screens
            yield f"{rule.code}-{number}", example_source(example.before).encode()
    for path in sorted((REPO / "tests" / "fixtures").rglob("*.py")) + sorted((REPO / "docs" / "examples").glob("*.py")):
        yield path.name, path.read_bytes()


def _turn_screens_off(monkeypatch) -> None:
    from hpu_port.settings import RuleSet

    monkeypatch.setattr(RuleSet, "for_code", lambda self, source, view=None: self)
    monkeypatch.setattr(RuleSet, "for_source", lambda self, source: self)


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("options", [{}, {"fp16_to_bf16": True, "unsafe_fixes": True}, {"mode": "eager"}])
def test_screens_never_change_a_result(monkeypatch, options):
    """The screens only save work: with them or without, every file ports the same."""
    from hpu_port import engine

    rules = make_ruleset(select=["ALL"], **options)
    corpus = list(_corpus())
    screened = [port_source(name, text, rules) for name, text in corpus]
    _turn_screens_off(monkeypatch)
    # ... and placing findings by generating the whole module gives the same places.
    monkeypatch.setattr(engine, "statement_starts", lambda module, tree: None)
    unscreened = [port_source(name, text, rules) for name, text in corpus]
    for (name, _), a, b in zip(corpus, screened, unscreened):
        assert (a.findings, a.new_source, a.error) == (b.findings, b.new_source, b.error), name


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("options", [{}, {"fp16_to_bf16": True, "unsafe_fixes": True}, {"mode": "eager"}])
def test_stubbing_out_code_no_rule_acts_on_never_changes_a_report(monkeypatch, options):
    """`check` parses only the functions and classes rules could act on; the
    findings are those of a parse of the whole file."""
    from hpu_port import engine

    rules = make_ruleset(select=["ALL"], **options)
    corpus = list(_corpus()) + list(_narrowing_cases())
    narrowed = [port_source(name, text, rules, apply=False) for name, text in corpus]
    monkeypatch.setattr(engine, "NARROW", False)
    monkeypatch.setattr(engine, "statement_starts", lambda module, tree: None)
    whole = [port_source(name, text, rules, apply=False) for name, text in corpus]
    for (name, _), a, b in zip(corpus, narrowed, whole):
        assert (a.findings, a.error) == (b.findings, b.error), name


@pytest.mark.slow  # a sweep or many full runs: the quick subset leaves it to the full suite
@pytest.mark.parametrize("options", [{}, {"fp16_to_bf16": True, "unsafe_fixes": True}, {"mode": "eager"}])
def test_a_rewrite_that_parses_whole_only_files_with_edits_writes_the_same(monkeypatch, options):
    """`rewrite` ports each file as `check` does first and parses it whole
    only when its rules planned an edit: output and findings are those of a
    rewrite that parses every file whole."""
    from hpu_port import engine

    rules = make_ruleset(select=["ALL"], **options)
    corpus = list(_corpus()) + list(_narrowing_cases())
    first = [port_source(name, text, rules, apply=True) for name, text in corpus]
    monkeypatch.setattr(engine, "NARROW", False)
    whole = [port_source(name, text, rules, apply=True) for name, text in corpus]
    for (name, _), a, b in zip(corpus, first, whole):
        assert (a.findings, a.output_findings, a.new_source, a.error) == (b.findings, b.output_findings, b.new_source, b.error), name
    assert any(result.new_source is not None for result in first)  # the corpus does hold edits


def test_a_rewrite_with_nothing_to_apply_never_parses_the_file_whole(monkeypatch):
    from hpu_port import engine

    parsed = []
    real_parse = engine._parse
    monkeypatch.setattr(engine, "_parse", lambda text, result: parsed.append(text) or real_parse(text, result))
    rules = make_ruleset(select=["ALL"])
    advice_only = source('''
        import torch

        def norm(x, eps):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

        def unrelated(n):
            return [n + 1 for _ in range(n)]
    ''')
    result = port_source("advice.py", advice_only, rules, apply=True)
    assert [f.code for f in result.findings] == ["HPU723"] and result.new_source is None
    assert parsed and all(b"n + 1" not in text for text in parsed)  # `unrelated` was stubbed in every parse
    parsed.clear()
    with_edit = advice_only.replace(b"def unrelated(n):", b"def unrelated(n):\n    torch.cuda.synchronize()")
    result = port_source("edit.py", with_edit, rules, apply=True)
    assert b"torch.hpu.synchronize()" in result.new_source
    assert any(b"n + 1" in text for text in parsed)  # printed back: parsed whole


def test_the_narrowing_cases_do_stub_something():
    from hpu_port.narrow import narrow

    rules = make_ruleset(select=["ALL"])
    for name, text in _narrowing_cases():
        chosen = rules.for_code(text)
        assert narrow(text, code_view(text), chosen) is not None, name


def test_narrowed_code_always_parses():
    """A stub that does not parse sends the file to a parse of all of it,
    which costs several times as much."""
    import libcst

    from hpu_port.narrow import narrow

    rules = make_ruleset(select=["ALL"])
    for name, text in list(_corpus()) + list(_narrowing_cases()):
        view = code_view(text)
        chosen = rules.for_code(text, view)
        narrowed = narrow(text, view, chosen) if chosen is not None and view is not None else None
        if narrowed is not None:
            libcst.parse_module(narrowed)  # raises if a stub is not Python


def _narrowing_cases():
    """Files where what a rule needs lies in another function than what it reports."""
    yield "optimizer-built-elsewhere.py", source('''
        import torch
        from torch.optim import AdamW as Opt

        class Trainer:
            def __init__(self, model):
                self.opt = Opt(model.parameters())

            def unrelated(self):
                return 1

            def step(self, loss):
                loss.backward()
                self.opt.step()
    ''')
    yield "graph-wrapped-elsewhere.py", source('''
        import torch
        from habana_frameworks.torch.hpu import wrap_in_hpu_graph as wrap

        def build(model):
            return wrap(model)

        def unrelated():
            return 0

        @torch.no_grad()
        def infer(model, batches):
            for batch in batches:
                model(batch)
    ''')
    yield "alias-used-in-another-function.py", source('''
        from torch.cuda import synchronize as sync
        import torch.cuda

        def a():
            sync()

        def b():
            return torch.cuda

        def c():
            return 2
    ''')
    yield "text-trigger-through-an-alias.py", source('''
        from torch.hub import load as hub_load

        def fetch():
            return hub_load("org/repo", "model")

        def unrelated():
            return 0
    ''')
    yield "subclass-through-a-class-no-rule-acts-on.py", source('''
        from torch.nn.parallel import DistributedDataParallel as DDP

        def wrap(model, rank):
            return Outer(model, device_ids=[rank], output_device=rank)

        @register
        class Outer(
            Inner,  # a comment in the bases
        ):
            """Kept as a class of its bases."""

            def unrelated(self):
                return 1

        class Inner(DDP):
            pass
    ''')
    yield "subclass-whose-first-method-is-decorated.py", source('''
        import torch

        class Rotary(Base):
            @torch.no_grad()
            @cached  # a comment on a decorator
            def forward(self, x):
                return x.to(torch.float32)

        def train(model, x, opt):
            loss = model(x).cuda()
            loss.backward()
            opt.step()
    ''')
    yield "loop-variable-tensor-elsewhere.py", source('''
        import torch

        steps = torch.linspace(1, 0, 11)

        def sample(x, n):
            for i in range(n):
                x = x * steps[i]
            return x

        def unrelated(n):
            return [torch.ones(2) for _ in range(n)]
    ''')
    yield "loop-under-a-context-of-another-function.py", source('''
        import torch
        from habana_frameworks.torch.core import mark_step as sync

        @torch.no_grad()
        def evaluate(model, loader):
            for batch in loader:
                model(batch)

        def handled():
            sync()

        def saves(model):
            model.save("x")
            torch.load("y")
    ''')
    yield "autocast-elsewhere.py", source('''
        import torch

        def make_context():
            return torch.autocast("hpu", dtype=torch.bfloat16)

        def unrelated():
            return 0

        def train(model, data, opt):
            for x in data:
                loss = model(x)
                loss.backward()
                opt.step()
    ''')


def test_check_stubs_out_functions_no_rule_acts_on():
    from hpu_port.narrow import narrow
    from hpu_port.triggers import code_view

    text = source('''
        import torch

        @decorated
        def unrelated(a):
            """Docstring with cuda."""
            return a + 1

        class Model:
            size = 3

            def forward(self, x):
                return x.cuda()

            def other(self):
                return "cpu"
    ''')
    rules = make_ruleset(select=["ALL"]).for_code(text)
    result = narrow(text, code_view(text), rules)
    lines = result.decode().splitlines()
    assert len(lines) == len(text.decode().splitlines())
    assert lines[2:6] == ['def unrelated(): """', "", "", '"""']
    assert "        return x.cuda()" in lines and '    def other(): """' in lines
    assert "size = 3" in result.decode()


def test_check_keeps_only_the_places_a_placed_rule_could_act_on():
    """A loop-variable rule needs `range` and `torch` to trigger, words of most
    functions in a model file; the function with the loop is parsed, the
    others are not, and neither is a method merely named `save` or `load`."""
    from hpu_port.narrow import narrow
    from hpu_port.triggers import code_view

    text = dict(_narrowing_cases())["loop-variable-tensor-elsewhere.py"] + source('''

        def store(self):
            self.save()
            self.load()
            torch.cuda.synchronize()
    ''')
    rules = make_ruleset(select=["ALL"]).for_code(text)
    lines = narrow(text, code_view(text), rules).decode().splitlines()
    assert "        x = x * steps[i]" in lines
    assert 'def unrelated(): """' in lines
    assert "    torch.cuda.synchronize()" in lines


@pytest.mark.parametrize(
    "loop",
    [
        "for i in range(n):",
        "for (i) in (range (n)):",
        "for(i)in range(n):",
        "for i \\\n        in range(n):",
        "for i in range(  # steps\n        n):",
    ],
)
def test_every_spelling_of_a_range_loop_opens_the_file_for_the_loop_variable_rule(loop):
    text = source(f'''
        import torch

        steps = torch.linspace(1, 0, 11)
        {loop}
            print(steps[i])
    ''')
    findings = port_source("loop.py", text, make_ruleset(select=["HPU711"]), apply=False).findings
    assert [f.code for f in findings] == ["HPU711"], text


def test_a_comprehension_over_range_opens_no_file_for_the_loop_variable_rule():
    from hpu_port.kinds.loop_variable import RANGE_LOOP

    text = source('''
        import torch

        layers = [torch.zeros(i) for i in range(3)]
        for layer in layers:
            print(layer)
    ''')
    assert RANGE_LOOP.search(text) is None
    assert make_ruleset(select=["HPU711"]).for_source(text) is None


def test_context_names_need_all_their_words():
    from hpu_port.kinds import name_context
    from hpu_port.triggers import TriggerIndex

    index = TriggerIndex([("rule", name_context(["torch.save", "torch._C._cuda*", "deepspeed.initialize[0]"]))])
    assert not index.matches({b"self", b"save"}, b"self.save()")
    assert index.matches({b"torch", b"save"}, b"torch.save(x)")
    assert index.matches({b"torch", b"_C", b"_cuda_getDevice"}, b"torch._C._cuda_getDevice()")
    assert not index.matches({b"torch", b"_C", b"_nn"}, b"torch._C._nn")
    assert index.matches({b"deepspeed", b"initialize"}, b"deepspeed.initialize(model)")


def _as_the_cli_selects(select=()):
    """The rule set of a run: the selection, analysed with every rule."""
    from hpu_port.model import Options
    from hpu_port.rules import load_rules
    from hpu_port.selection import select_rules
    from hpu_port.settings import RuleSet

    rules = load_rules([])
    return RuleSet(select_rules(rules, list(select)), Options(), analysis=rules).walked


NUMPY_ONLY = source("""
    import torch
    x = torch.ones(2)
    print(x.numpy())
""")


def test_an_opt_in_rule_left_off_opens_no_file(monkeypatch):
    # HPU141 is off by default: a `.numpy()` call alone makes no file worth parsing.
    assert _as_the_cli_selects().for_code(NUMPY_ONLY) is None
    assert _as_the_cli_selects().for_source(NUMPY_ONLY) is None
    assert "HPU141" in codes(_as_the_cli_selects(["HPU141"]).for_code(NUMPY_ONLY))


def test_an_opt_in_rule_left_off_still_walks_a_file_another_rule_opened():
    text = NUMPY_ONLY + b"y = x.cuda()\n"
    assert {"HPU141", "HPU111"} <= codes(_as_the_cli_selects().for_code(text))


def test_an_opt_in_rule_alone_walks_without_the_rules_that_ride_along():
    # What HPU615 says in a file must not depend on whether HPU141 is selected.
    walked = codes(_as_the_cli_selects(["ALL"]).for_code(NUMPY_ONLY))
    assert "HPU141" in walked and "HPU615" not in walked


MODEL_WITH_PADDING = source("""
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self, padding_idx):
            self.conv = nn.Conv2d(3, 3, 3, padding=1)
            self.embed = nn.Embedding(10, 4, padding_idx=padding_idx)
""")


def test_padding_words_of_a_model_file_need_no_parse_for_the_padding_advice():
    rules = make_ruleset(select=["HPU722"])
    # `padding` alone is no trigger: a value the advice is about must be there too.
    assert rules.for_source(MODEL_WITH_PADDING) is None
    with_true = MODEL_WITH_PADDING + b"self.bias = True\n"
    assert rules.for_source(with_true) is None  # no marker of a training script
    training = with_true + b"loss.backward()\n"
    assert rules.for_source(training) is not None  # the words are there
    assert rules.for_code(training) is None  # the call is not


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("batch = tok(s, padding=True)\nloss.backward()\n", True),
        ("batch = tok(s, padding = 'longest')\nloss.backward()\n", True),
        ('from transformers import Trainer\nbatch = tok(s, padding="longest")\ntrainer = Trainer(model)\n', True),
        ('batch = tok(s, padding="longest")\ntrainer = Trainer(model)\n', False),  # some other Trainer
        ("batch = tok(s, padding=True)\n", False),  # no training in the file
        ("batch = tok(s, padding='max_length')\nloss.backward()\n", False),
        ("from torch.nn.utils.rnn import pad_sequence as pad\nx = pad(xs)\n", True),
    ],
)
def test_the_padding_screen_keeps_what_the_rule_reports(text, parsed):
    rules = make_ruleset(select=["HPU722"])
    assert (rules.for_code(text.encode()) is not None) is parsed


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("import torch\nscores = scores.masked_fill(mask, 0)\nmasked = x * mask\n", False),  # words only
        ("import torch\nbatch = torch.nested.nested_tensor(xs)\n", True),
        ("import torch as T\nm = T.masked.masked_tensor(x, mask)\n", True),
        ("from torch import nested\nbatch = nested.nested_tensor(xs)\n", True),
        ("from torch.masked import masked_tensor\n", True),  # an import alone is a use the rule may report
        ("from torch import *\nbatch = nested.nested_tensor(xs)\n", True),  # a star import: unknowable
        ("from .torch import nested\nbatch = nested.nested_tensor(xs)\n", False),  # relative: not torch
        ("import torch\nbatch = (torch\n    .nested  # the chain, over lines\n    .nested_tensor(xs))\n", True),
        ("import torch\nbatch = torch. \\\n    nested.nested_tensor(xs)\n", True),
        ("import torch\n# torch.nested.nested_tensor is not used here\nbatch = nested_tensor(xs)\n", False),
    ],
)
def test_the_report_screen_needs_an_import_that_reaches_the_name(text, parsed):
    rules = make_ruleset(select=["HPU606"])
    # The words are there; the bytes may tell that no import reaches the
    # name, never that one does not when one does.
    assert rules.for_source(text.encode()) is not None or not parsed
    assert (rules.for_code(text.encode()) is not None) is parsed


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("n_gpu = torch.cuda.device_count()\nuse_gpu = n_gpu > 0\n", False),  # the word in names only
        ('trainer = Trainer(accelerator="gpu")\n', True),
        ('cfg = {"accelerator": "gpu"}\n', True),
        ("key = f\"{'gpu' if on_gpu else 'cpu'}_time\"\n", True),
        ('devices = [f"gpu:{i}" for i in range(2)]\n', True),
    ],
)
def test_the_device_string_screen_needs_a_string_that_starts_with_the_device(text, parsed):
    rules = make_ruleset(select=["HPU523"])
    assert rules.for_source(text.encode()) is not None
    assert (rules.for_code(text.encode()) is not None) is parsed


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("import torch\nx = torch.tensor(a).float()\n", False),  # cast before the move
        ("import torch\nx = torch.tensor(a).float()\ny = x.to(device)\nz = y.float()\n", False),  # names only
        ("import torch\nx = torch.from_numpy(a).to(device).float()\n", True),
        ("import torch\nx = torch.from_numpy(a).cuda()[0].float()\n", True),
        ("import torch\nx = (torch.from_numpy(a)\n     .to(device)  # moved\n     .float())\n", True),
        ("import torch\nx = torch.from_numpy(a).to(device) \\\n    .float()\n", True),
    ],
)
def test_the_cast_after_move_screen_looks_at_calls_only_after_a_cast_of_a_result(text, parsed):
    rules = make_ruleset(select=["HPU114"])
    assert rules.for_source(text.encode()) is not None
    assert (rules.for_code(text.encode()) is not None) is parsed
