"""`# hpu-port: ignore[...]` and `# hpu-port: file-ignore[...]`."""

import textwrap

from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import port


def run(code, **kwargs):
    result = port(textwrap.dedent(code), **kwargs)
    assert result.error is None
    out = (result.new_source or result.source).decode()
    return out, {(f.code, f.line) for f in result.findings}


def test_trailing_comment_suppresses_the_finding_and_its_fix():
    out, found = run('x = t.to("cuda")  # hpu-port: ignore\ny = t.to("cuda")\n', select=["HPU110"])
    assert out == 'x = t.to("cuda")  # hpu-port: ignore\ny = t.to("hpu")\n'
    assert found == {("HPU110", 2)}


def test_codes_and_prefixes():
    code = 'import torch\ntorch.cuda.synchronize(); device = "cuda"  # hpu-port: ignore[HPU110]\n'
    out, found = run(code, select=["HPU101", "HPU110"])
    assert "torch.hpu.synchronize()" in out and 'device = "cuda"' in out
    prefixed = code.replace("HPU110", "HPU1")
    out, found = run(prefixed, select=["HPU101", "HPU110"])
    assert found == set() and out == prefixed


def test_comment_above_a_multi_line_statement():
    out, found = run(
        """
        # hpu-port: ignore[HPU110]
        x = torch.zeros(
            3,
            device="cuda",
        )
        y = t.to("cuda")
        """,
        select=["HPU110"],
    )
    assert 'device="cuda"' in out and 'y = t.to("hpu")' in out
    assert found == {("HPU110", 6)}


def test_trailing_comment_on_the_first_line_covers_the_whole_statement():
    out, found = run('x = torch.zeros(  # hpu-port: ignore\n    3, device="cuda")\n', select=["HPU110"])
    assert found == set() and 'device="cuda"' in out


def test_file_ignore():
    code = '# hpu-port: file-ignore[HPU110]\nimport torch\ndevice = "cuda"\ntorch.cuda.synchronize()\n'
    out, found = run(code, select=["HPU101", "HPU110"])
    assert 'device = "cuda"' in out and "torch.hpu.synchronize()" in out
    assert {code for code, _ in found} == {"HPU101"}


def test_text_in_a_string_is_not_a_suppression():
    out, found = run('device = "cuda"; note = "# hpu-port: ignore"\n', select=["HPU110"])
    assert found == {("HPU110", 1)}


def test_a_suppressed_use_keeps_its_import():
    code = "from torch.cuda import synchronize as sync\nsync()  # hpu-port: ignore\nsync()\n"
    out, _ = run(code, select=["HPU101"])
    assert out.startswith("import torch\nfrom torch.cuda import synchronize as sync\n")
    assert "sync()  # hpu-port: ignore\ntorch.hpu.synchronize()\n" in out


def test_mark_step_insertion_can_be_suppressed():
    out, found = run("loss.backward()  # hpu-port: ignore[HPU201]\noptimizer.step()\n", select=["HPU201"])
    assert out == "loss.backward()  # hpu-port: ignore[HPU201]\noptimizer.step()\nhtcore.mark_step()\n".replace(
        "loss.backward()", "import habana_frameworks.torch.core as htcore\n\nloss.backward()", 1
    )


def test_unused_suppressions_are_reported_when_asked(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('a = "hpu"  # hpu-port: ignore[HPU110]\ndevice = "cuda"  # hpu-port: ignore\n')
    runner = CliRunner()
    quiet = runner.invoke(main, ["check", str(path)], catch_exceptions=False)
    assert quiet.exit_code == 0 and quiet.stdout == ""
    loud = runner.invoke(main, ["check", "--report-unused-ignores", str(path)], catch_exceptions=False)
    assert loud.exit_code == 1
    assert loud.stdout == f"{path}:1:1: HPU002 `# hpu-port: ignore[HPU110]` suppresses nothing here: remove it\n"


def test_suppressing_a_rule_also_quiets_the_cuda_mention_on_its_code():
    code = "import torch\nif torch.cuda.get_device_capability()[0] >= 8:  # hpu-port: ignore[HPU130]\n    pass\n"
    _, found = run(code, select=["HPU130", "HPU190"])
    assert found == set()
    # Unsuppressed, the specific rule speaks and the mention stays quiet; a
    # mention elsewhere on the line is still reported.
    _, found = run(code.replace("  # hpu-port: ignore[HPU130]", ""), select=["HPU130", "HPU190"])
    assert found == {("HPU130", 2)}


def test_codes_are_case_insensitive():
    out, found = run('x = t.to("cuda")  # hpu-port: ignore[hpu110]\n', select=["HPU110"])
    assert found == set() and '"cuda"' in out
    out, found = run('x = t.to("cuda")  # hpu-port: file-ignore[Hpu1]\n', select=["HPU110"])
    assert found == set()


def test_malformed_and_unknown_codes_get_a_warning(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(
        'import torch\nx = t.to("cuda")  # hpu-port: ignore[HPU11O]\n'
        'y = t.to("cuda")  # hpu-port: ignore[HPU999, HPU110]\n'
        'z = t.to("cuda")  # hpu-port: ignore[HPU110 HPU101]\n'
    )
    result = CliRunner().invoke(main, ["check", "--no-cache", str(path)])
    assert f"hpu-port: warning: {path}:2: malformed rule code 'HPU11O' in a suppression comment" in result.stderr
    assert "did you mean HPU110?" in result.stderr
    assert f"hpu-port: warning: {path}:3: unknown rule code 'HPU999' in a suppression comment" in result.stderr
    assert f"{path}:4: malformed rule code 'HPU110 HPU101'" in result.stderr
    assert ":3:" not in result.stdout.replace(str(path) + ":3:10: HPU110", "")  # HPU110 is suppressed on line 3
    quiet = CliRunner().invoke(main, ["check", "--no-cache", "-q", str(path)])
    assert "warning" not in quiet.stderr
