"""Renderers: the unified diff is minimal and well-formed."""

from hpu_port.report import unified_diff
from hpu_port.results import FileResult


def diff(old: str, new: str) -> str:
    return unified_diff(FileResult(path="f.py", source=old.encode(), new_source=new.encode()))


def test_untouched_blank_lines_are_context_not_changes():
    old = "import a\n" + "\n" * 3 + "x = 'cuda'\n" + "\n".join(f"y{i} = {i}\n" for i in range(300))
    new = old.replace("import a\n", "import a\nimport b\n").replace("'cuda'", "'hpu'")
    changed = [l for l in diff(old, new).splitlines()[2:] if l[:1] in "+-" ]
    assert changed == ["+import b", "-x = 'cuda'", "+x = 'hpu'"]


def test_hunk_headers_follow_the_unified_format():
    old = "a\nb\nc\n"
    new = "a\nB\nc\n"
    assert diff(old, new) == "--- f.py\n+++ f.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    assert diff("x\n", "y\n") == "--- f.py\n+++ f.py\n@@ -1 +1 @@\n-x\n+y\n"
    assert diff("", "y\n") == "--- f.py\n+++ f.py\n@@ -0,0 +1 @@\n+y\n"


def test_unchanged_file_has_no_diff():
    assert unified_diff(FileResult(path="f.py", source=b"x\n", new_source=None)) == ""
