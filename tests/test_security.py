"""hpu-port never runs what it reads and never writes outside the paths it is given."""

import os

from click.testing import CliRunner

from hpu_port.cli import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_ported_code_is_never_imported_or_run(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(
        f"import torch\nopen({str(marker)!r}, 'w').write('x')\nx = torch.zeros(2, device='cuda')\n"
        f"if __name__ == '__main__':\n    open({str(marker)!r}, 'w')\n"
    )
    (tmp_path / "conftest.py").write_text(f"open({str(marker)!r}, 'w')\ndevice = 'cuda'\n")
    for command in (["check"], ["rewrite", "--dry-run"], ["rewrite"]):
        invoke(*command, tmp_path)
    assert not marker.exists()


def test_rule_files_are_data_never_evaluated(tmp_path):
    marker = tmp_path / "evaluated"
    payload = f"__import__('os').system('touch {marker}')"
    rule = tmp_path / "rule.toml"
    rule.write_text(
        f'''
code = "HPU990"
name = "payload"
summary = "{payload}"
why = "{payload}"
kind = "keyword-args"
fix = "safe"
default = true
category = "device"
message = "{{name}}: {{keywords}}"
calls = ["mylib.f"]
set = {{ x = "{payload}" }}

[[examples.invalid]]
before = "import mylib\\nmylib.f()\\n"
after = "import mylib\\nmylib.f(x={payload})\\n"

[[examples.valid]]
code = "y = 1\\n"
'''
    )
    target = tmp_path / "code.py"
    target.write_text("import mylib\nmylib.f()\n")
    invoke("rules", "--rules", rule)
    invoke("explain", "HPU990", "--rules", rule)
    invoke("rewrite", "--rules", rule, "--select", "HPU990", target)
    assert not marker.exists()
    # The expression is written into the code as text, as the rule says; never run.
    assert payload in target.read_text()


def test_nothing_is_written_outside_the_given_paths(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    code = 'device = "cuda"\n'
    (inside / "a.py").write_text(code)
    (outside / "b.py").write_text(code)
    os.symlink(outside / "b.py", inside / "link_to_outside.py")
    os.symlink(outside, inside / "linked_dir")
    before = {p: p.stat().st_mtime_ns for p in outside.rglob("*")}
    result = invoke("rewrite", inside)
    assert result.exit_code == 0
    # Each link that leads out is named (a warning: the walk passes it by).
    assert f"warning: {inside / 'link_to_outside.py'}: is a symbolic link to {outside / 'b.py'}; not followed" in result.stderr
    assert f"warning: {inside / 'linked_dir'}: is a symbolic link to {outside}, outside {inside}; not followed" in result.stderr
    assert (inside / "a.py").read_text() != code
    assert (outside / "b.py").read_text() == code
    assert {p: p.stat().st_mtime_ns for p in outside.rglob("*")} == before
    assert sorted(p.name for p in outside.iterdir()) == ["b.py"]


def test_a_symlink_named_explicitly_is_not_followed(tmp_path):
    real = tmp_path / "real.py"
    real.write_text('device = "cuda"\n')
    link = tmp_path / "link.py"
    os.symlink(real, link)
    result = invoke("rewrite", link)
    assert result.exit_code == 2
    assert f"{link}: error: is a symbolic link to {real}; not followed" in result.stderr
    assert link.is_symlink() and real.read_text() == 'device = "cuda"\n'
    # Named with its target, the file is ported once, by its own path.
    assert invoke("rewrite", link, real).exit_code == 0
    assert link.is_symlink() and '"hpu"' in real.read_text()


def test_a_link_inside_the_tree_to_a_file_inside_it_is_followed_once(tmp_path):
    (tmp_path / "real.py").write_text('device = "cuda"\n')
    os.symlink(tmp_path / "real.py", tmp_path / "alias.py")
    result = invoke("rewrite", tmp_path)
    assert result.exit_code == 0
    assert (tmp_path / "alias.py").is_symlink()
    assert (tmp_path / "real.py").read_text().endswith('device = "hpu"\n')
