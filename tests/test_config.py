"""[tool.hpu-port] in the nearest pyproject.toml, overridden by the command line."""

import textwrap

from click.testing import CliRunner

from hpu_port.cli import main
from tests.conftest import rename_rule_toml

CODE = 'import torch\nx = torch.zeros(2, device="cuda")\nh = x.half()\ntorch.cuda.synchronize()\n'


def project(tmp_path, table: str, name="pkg"):
    root = tmp_path / name
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.hpu-port]\n" + textwrap.dedent(table))
    (root / "src" / "train.py").write_text(CODE)
    return root


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def codes(output: str) -> set:
    return {line.split(": ")[1].split()[0] for line in output.splitlines() if ": HPU" in line}


def test_select_ignore_and_options_from_the_config(tmp_path):
    root = project(tmp_path, 'select = ["HPU10", "HPU110", "HPU3"]\nignore = ["HPU110"]\nfp16-to-bf16 = true\n')
    result = invoke("check", root)
    assert codes(result.stdout) == {"HPU101", "HPU311"}
    assert "[*] `.half()`" in result.stdout  # fixable: fp16-to-bf16 is on


def test_command_line_overrides_the_config(tmp_path):
    root = project(tmp_path, 'select = ["HPU1"]\nfp16-to-bf16 = true\n')
    result = invoke("check", "--select", "HPU311", "--no-fp16-to-bf16", root)
    assert codes(result.stdout) == {"HPU311"}
    assert "[*]" not in result.stdout


def test_extend_select_adds_to_the_defaults(tmp_path):
    root = project(tmp_path, 'extend-select = ["HPU141"]\n')
    (root / "src" / "eval.py").write_text("preds = out.numpy()\n")
    assert "HPU141" in codes(invoke("check", root / "src" / "eval.py").stdout)


def test_nearest_config_wins_in_a_monorepo(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port]\nselect = ["HPU101"]\n')
    inner = project(tmp_path, 'select = ["HPU110"]\n', name="inner")
    (tmp_path / "top.py").write_text(CODE)
    result = invoke("check", tmp_path)
    found = {(line.split(":")[0].endswith("top.py"), line.split(": ")[1].split()[0]) for line in result.stdout.splitlines()}
    assert (True, "HPU101") in found and (False, "HPU110") in found
    assert (True, "HPU110") not in found and (False, "HPU101") not in found
    assert inner.exists()


def test_exclude_applies_to_files_passed_explicitly(tmp_path):
    root = project(tmp_path, 'exclude = ["src/train.py"]\nextend-exclude = ["legacy"]\n')
    (root / "legacy").mkdir()
    (root / "legacy" / "old.py").write_text(CODE)
    result = invoke("rewrite", "--check", root / "src" / "train.py", root / "legacy" / "old.py", root)
    assert result.exit_code == 0 and result.stdout == ""
    # Only the project's pyproject.toml (its dependencies) is read.
    assert "1 file scanned" in result.stderr


def test_per_file_ignores(tmp_path):
    root = project(tmp_path, '[tool.hpu-port.per-file-ignores]\n"src/*.py" = ["HPU110", "HPU001"]\n')
    result = invoke("check", root)
    assert "HPU110" not in codes(result.stdout) and "HPU101" in codes(result.stdout)


def test_rule_files_from_the_config_are_relative_to_it(tmp_path):
    root = project(tmp_path, 'rules = ["hpu_rules"]\nselect = ["HPU9"]\n')
    (root / "hpu_rules").mkdir()
    (root / "hpu_rules" / "HPU901-helper.toml").write_text(
        rename_rule_toml(name="helper", old="torch.cuda.synchronize", new="torch.hpu.synchronize")
    )
    assert codes(invoke("check", root).stdout) == {"HPU901"}


def test_unknown_key_and_bad_values_are_errors(tmp_path):
    root = project(tmp_path, 'mode = "lazy"\ncolour = "red"\n')
    result = invoke("check", root)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"hpu-port: error: {root / 'pyproject.toml'}: [tool.hpu-port] unknown key 'colour' (known: device, exclude, extend, extend-exclude, extend-select, fp16-to-bf16, ignore, include-generated, max-file-size, mode, per-file-ignores, port-shared-code, rules, select, unsafe-fixes)"
    bad_mode = project(tmp_path, 'mode = "turbo"\n', name="other")
    assert 'must be "lazy" or "eager"' in invoke("rewrite", bad_mode).stderr
    bad_type = project(tmp_path, 'select = "HPU1"\n', name="third")
    assert "'select' must be a list of strings" in invoke("check", bad_type).stderr
    bad_code = project(tmp_path, 'ignore = ["HPU777"]\n', name="fourth")
    result = invoke("check", bad_code)
    assert result.exit_code == 2 and "unknown rule code or prefix 'HPU777'" in result.stderr


def test_config_command_prints_the_effective_settings(tmp_path):
    root = project(tmp_path, 'mode = "eager"\nselect = ["HPU1"]\n')
    result = invoke("config", root / "src", "--fp16-to-bf16")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"# from {root / 'pyproject.toml'}"
    assert 'mode = "eager"' in lines and "fp16-to-bf16 = true" in lines and 'select = ["HPU1"]' in lines
    assert invoke("config", tmp_path).stdout.startswith("# from defaults")


def test_every_problem_at_once_each_naming_the_file(tmp_path):
    root = project(tmp_path, 'mdoe = "lazy"\nselect = "HPU1"\nmax-file-size = -1\nunsafe_fixes = true\n')
    result = invoke("check", root)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    config = root / "pyproject.toml"
    assert lines == [
        f"hpu-port: error: {config}: [tool.hpu-port] unknown key 'mdoe'; did you mean 'mode'?",
        f"hpu-port: error: {config}: [tool.hpu-port] 'select' must be a list of strings",
        f"hpu-port: error: {config}: [tool.hpu-port] unknown key 'unsafe_fixes'; did you mean 'unsafe-fixes'?",
        f"hpu-port: error: {config}: [tool.hpu-port] 'max-file-size' must be a positive number of MiB",
    ]


def test_unknown_codes_name_where_they_were_given(tmp_path):
    root = project(tmp_path, 'ignore = ["HPU11O", "HPU190"]\nextend-select = ["HPU7O5"]\n')
    result = invoke("check", "--select", "HPU1,HPU88", root)
    config = root / "pyproject.toml"
    assert result.exit_code == 2
    assert f"{config}: [tool.hpu-port] 'ignore': unknown rule code or prefix 'HPU11O'; did you mean HPU110?" in result.stderr
    assert "--select: unknown rule code or prefix 'HPU88'" in result.stderr


def test_extend_inherits_a_parent_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hpu-port]\nmode = "eager"\nignore = ["HPU101"]\nextend-exclude = ["legacy"]\n'
        '[tool.hpu-port.per-file-ignores]\n"pkg/src/gen_*.py" = ["HPU110"]\n'
    )
    root = project(tmp_path, 'extend = "../pyproject.toml"\nfp16-to-bf16 = true\n')
    (root / "src" / "legacy").mkdir()
    (root / "src" / "legacy" / "old.py").write_text(CODE)
    (root / "src" / "gen_a.py").write_text(CODE)
    result = invoke("check", root)
    train, gen = str(root / "src" / "train.py"), str(root / "src" / "gen_a.py")
    found = {(line.split(":")[0], line.split(": ")[1].split()[0]) for line in result.stdout.splitlines()}
    assert (train, "HPU110") in found and (train, "HPU311") in found  # fp16-to-bf16 from the child: fixable
    assert (train, "HPU101") not in found  # ignored by the parent
    assert (gen, "HPU110") not in found and (gen, "HPU311") in found  # the parent's per-file-ignores, relative to it
    assert "legacy" not in result.stdout  # the parent's exclude
    shown = invoke("config", root / "src").stdout
    assert 'mode = "eager"' in shown and "fp16-to-bf16 = true" in shown and 'ignore = ["HPU101"]' in shown


def test_extend_problems(tmp_path):
    root = project(tmp_path, 'extend = "../missing.toml"\n')
    assert "'extend': no such file" in invoke("check", root).stderr
    (tmp_path / "pyproject.toml").write_text('[tool.hpu-port]\nextend = "loop/pyproject.toml"\ncolour = 1\n')
    loop = project(tmp_path, 'extend = "../pyproject.toml"\n', name="loop")
    result = invoke("check", loop)
    assert result.exit_code == 2 and "extends itself" in result.stderr
    assert f"{tmp_path / 'pyproject.toml'}: [tool.hpu-port] unknown key 'colour'" in result.stderr


def test_config_lists_the_rules_in_effect(tmp_path):
    root = project(tmp_path, 'select = ["HPU1"]\nignore = ["HPU19"]\n')
    shown = invoke("config", root / "src").stdout
    listed = [line.split()[1] for line in shown.splitlines() if line.startswith("#   HPU")]
    assert listed and all(code.startswith("HPU1") and not code.startswith("HPU19") for code in listed)
    assert "#   HPU110  cuda-device-string  (device, safe fix)" in shown


def test_a_table_written_as_a_dotted_key_or_quoted_is_read(tmp_path):
    for name, text in [("dotted", '[tool]\nhpu-port.select = ["HPU101"]\n'), ("quoted", '[tool."hpu-port"]\nselect = ["HPU101"]\n')]:
        root = project(tmp_path, "", name)
        (root / "pyproject.toml").write_text(text)
        assert codes(invoke("check", root).stdout) == {"HPU101"}


def test_a_pyproject_toml_without_the_table_is_not_read(tmp_path):
    # Another tool's broken file is that tool's problem: the run goes on with defaults.
    root = project(tmp_path, "")
    (root / "pyproject.toml").write_text("[project\nname = 'x'\n")
    result = invoke("check", root)
    assert "HPU101" in codes(result.stdout) and "cannot read configuration" not in result.output
    named = project(tmp_path, "", "named")
    (named / "pyproject.toml").write_text("[project\n[tool.hpu-port]\n")
    assert "cannot read configuration" in invoke("check", named).output
