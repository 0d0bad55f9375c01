"""Rule files are validated at start-up with one clear `file: rule CODE: problem` line."""

from pathlib import Path

import pytest

from hpu_port.rules import RuleFileError, load_rule_file, load_rules, select_rules
from tests.conftest import rename_rule_toml

GOOD = rename_rule_toml()


def write(tmp_path, text, name="rule.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def error_for(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(RuleFileError) as info:
        load_rule_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: rule ")
    assert "\n" not in message
    return message


def test_good_rule_loads(tmp_path):
    rule = load_rule_file(write(tmp_path, GOOD))
    assert (rule.code, rule.kind, rule.fix, rule.default) == ("HPU901", "rename", "safe", True)


@pytest.mark.parametrize(
    "change, problem",
    [
        (('default = true', 'default = true\ncolour = "red"'), "rule HPU901: unknown key 'colour'"),
        (('kind = "rename"', 'kind = "teleport"'), "rule HPU901: unknown kind 'teleport'"),
        (('fix = "safe"', 'fix = "maybe"'), "rule HPU901: 'fix' must be one of safe, unsafe, none"),
        (('default = true', 'default = "yes"'), "rule HPU901: 'default' must be a bool"),
        (('summary = "Rename my CUDA helper."\n', ''), "rule HPU901: missing key 'summary'"),
        (('code = "HPU901"', 'code = "hpu-1"'), "rule hpu-1: 'code' must look like HPU123"),
        (('name = "my-rename"', 'name = "My Rename"'), "'name' must be kebab-case"),
        (('"mylib.cuda_helper" = "mylib.hpu_helper"', '"mylib.cuda_helper" = 3'), "'renames' must be a table of strings"),
        (('[renames]\n"mylib.cuda_helper" = "mylib.hpu_helper"', ''), "missing key 'renames' (required by kind 'rename')"),
        (('`{name}` -> `{replacement}`', '{nmae}'), "unknown placeholder {nmae}"),
        (('fix = "safe"', 'fix = "none"'), "fix is 'none' (report only) but an example has an 'after'"),
        (('[[examples.valid]]\ncode = "import mylib\\nmylib.hpu_helper()\\n"', ''), "needs at least one example in [[examples.valid]]"),
        (('after = "import', 'afterwards = "import'), "unknown key 'examples.invalid[1].afterwards'"),
        (('[renames]', '[positions]\nwhere = ["dtype"]\n\n[renames]'), "'positions': unknown keys ['where']"),
        (('[renames]', '[positions]\nnames = "dtype"\n\n[renames]'), "'positions.names' must be a list of strings"),
        (('default = true', 'default = true\nkeep-inside = "half"'), "'keep-inside' must be a list"),
        (('[renames]', '[held-when-project-has]\nneedle = "x"\npattern = "x"\n\n[renames]'), "'held-when-project-has' takes needle, pattern and why (missing why)"),
        (('[renames]', '[held-when-project-has]\nneedle = "x"\npattern = "(x"\nwhy = "y"\n\n[renames]'), "'held-when-project-has.pattern': missing )"),
        (('[renames]', '[roles]\nfiles = "x"\n\n[renames]'), "'roles.files' must be a list of strings"),
        (('[renames]', '[roles]\nfolders = ["x"]\n\n[renames]'), "'roles': unknown keys ['folders']"),
        (('default = true', 'default = true\nitems = "per-cell"'), "'items' is one of per-line, per-file, per-setting, per-repository, not 'per-cell'"),
    ],
)
def test_bad_rule_gives_one_clear_line(tmp_path, change, problem):
    old, new = change
    assert old in GOOD
    message = error_for(tmp_path, GOOD.replace(old, new, 1))
    assert problem in message


def test_invalid_toml(tmp_path):
    assert "rule ?: invalid TOML" in error_for(tmp_path, "code = \n")


def test_duplicate_code_is_an_error(tmp_path):
    write(tmp_path, GOOD, "a.toml")
    write(tmp_path, GOOD, "b.toml")
    with pytest.raises(RuleFileError, match="rule HPU901: code already used by"):
        load_rules([tmp_path])


def test_user_rule_collides_with_bundled_code(tmp_path):
    path = write(tmp_path, GOOD.replace("HPU901", "HPU101"))
    with pytest.raises(RuleFileError, match="HPU101: code already used"):
        load_rules([path])


def test_missing_rule_file(tmp_path):
    with pytest.raises(RuleFileError, match="no such file"):
        load_rules([tmp_path / "nope.toml"])


def test_selection_by_code_prefix_and_all(all_rules):
    assert {r.code for r in select_rules(all_rules, ["HPU10"])} == {"HPU101", "HPU102", "HPU103", "HPU104", "HPU105", "HPU106", "HPU107", "HPU108", "HPU109"}
    assert {r.code for r in select_rules(all_rules, ["ALL"], sorted({r.code[:4] for r in all_rules} - {"HPU0"}))} == {"HPU001", "HPU002", "HPU003"}
    defaults = select_rules(all_rules)
    assert defaults == [r for r in all_rules if r.default]
    with pytest.raises(RuleFileError, match="unknown rule code or prefix 'HPU777'"):
        select_rules(all_rules, ["HPU777"])


def test_bundled_rules_are_valid_and_unique(all_rules):
    codes = [r.code for r in all_rules]
    assert len(codes) == len(set(codes))
    assert all(Path(r.source).is_file() for r in all_rules)
