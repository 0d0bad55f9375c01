"""HPU003: the locals a rewrite leaves unused are reported at their assignment, judged on the rewritten file."""

import textwrap

from hpu_port.left_unused import names_left_unused


def left(old: str, new: str):
    return names_left_unused(textwrap.dedent(old).encode(), textwrap.dedent(new).encode())


def test_a_local_whose_last_read_was_ported_away():
    assert left("""
        def f():
            rank = get()
            return torch.device("cuda", rank)
    """, """
        def f():
            rank = get()
            return torch.device("hpu", 0)
    """) == [("rank", 3)]


def test_unused_before_the_rewrite_is_not_the_rewrites_doing():
    assert left("""
        def f():
            unused = 1
            rank = get()
            return torch.device("cuda", rank)
    """, """
        def f():
            unused = 1
            rank = get()
            return torch.device("hpu", 0)
    """) == [("rank", 4)]


def test_reads_elsewhere_in_the_function_or_in_a_closure_keep_it_used():
    assert left("""
        def f():
            rank = get()
            g = lambda: rank
            return torch.device("cuda", rank), g
    """, """
        def f():
            rank = get()
            g = lambda: rank
            return torch.device("hpu", 0), g
    """) == []


def test_module_level_globals_and_dynamic_reads_are_not_judged():
    assert left("""
        rank = get()
        device = torch.device("cuda", rank)

        def f():
            global seen
            seen = get()
            print(seen)

        def g():
            rank = get()
            print(locals(), rank)
    """, """
        rank = get()
        device = torch.device("hpu", 0)

        def f():
            global seen
            seen = get()

        def g():
            rank = get()
            print(locals())
    """) == []


def test_vars_of_an_object_reads_no_local():
    # `vars(args)` is the object's attributes; `vars()` alone is the scope's names.
    old = """
        def f(args):
            device = setup(args)
            print(vars(args))
            return DDP(model, device_ids=[device])
    """
    new = old.replace("device_ids=[device]", "device_ids=None")
    assert left(old, new) == [("device", 3)]
    assert left(old.replace("vars(args)", "vars()"), new.replace("vars(args)", "vars()")) == []


def test_functions_are_matched_by_their_nesting_not_their_lines():
    assert left("""
        class Model:
            def device(self):
                rank = self.rank
                return torch.device("cuda", rank)
    """, """
        import habana_frameworks.torch.core as htcore


        class Model:
            def device(self):
                rank = self.rank
                return torch.device("hpu", 0)
    """) == [("rank", 4)]


def test_unparsable_input_reports_nothing():
    assert left("def f(:\n", "def f():\n    pass\n") == []


def test_rewrite_reports_it_on_the_written_file(tmp_path):
    from click.testing import CliRunner

    from hpu_port.cli import main

    script = tmp_path / "train.py"
    script.write_text('import os\nimport torch\n\n\ndef device():\n    rank = int(os.environ["LOCAL_RANK"])\n'
                      '    return torch.device("cuda", rank)\n')
    result = CliRunner().invoke(main, ["rewrite", "--no-cache", str(script)], catch_exceptions=False)
    assert 'torch.device("hpu", 0)' in script.read_text()
    assert "train.py:7:5: HPU003 `rank` is no longer read" in result.output
