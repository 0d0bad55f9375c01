"""How the precision corpus splits diffs into hunks and names them (no download)."""

from tests.precision.corpus import Package, file_hunks, split_diff

PACKAGE = Package(name="demo", version="1.0", file="demo-1.0.tar.gz", sha256="0" * 64)

ORIGINAL = ["import torch", "", "x = 1", "y = torch.zeros(3, device='cuda')", "z = 2", "w = 3", "", "q = 4", "r = x.cuda()"]
DIFF = """--- demo.py
+++ demo.py
@@ -1,9 +1,10 @@
 import torch
+import habana_frameworks.torch.core as htcore
 
 x = 1
-y = torch.zeros(3, device='cuda')
+y = torch.zeros(3, device='hpu')
 z = 2
 w = 3
 
 q = 4
-r = x.cuda()
+r = x.to("hpu")
"""


def shifted(diff: str, by: int) -> str:
    return diff.replace("@@ -1,9 +1,10 @@", f"@@ -{1 + by},9 +{1 + by},10 @@")


def test_each_contiguous_change_is_a_hunk():
    changes = split_diff(DIFF)
    assert [(start, len(removed), len(added)) for start, removed, added in changes] == [(2, 0, 1), (4, 1, 1), (9, 1, 1)]


def test_ids_do_not_depend_on_line_numbers():
    here = file_hunks(PACKAGE, "default", "demo.py", DIFF, ORIGINAL, [])
    moved = file_hunks(PACKAGE, "default", "demo.py", shifted(DIFF, 5), ["# a"] * 5 + ORIGINAL, [])
    assert [hunk.line for hunk in moved] == [hunk.line + 5 for hunk in here]
    # Lines added far above leave an id alone, and the first change (Gaudi's
    # import) is the same change wherever the module's import order puts it.
    assert [hunk.id for hunk in here] == [hunk.id for hunk in moved]


def test_a_changed_context_changes_the_id_of_a_rewrite():
    diff = "@@ -2,1 +2,1 @@\n-x = t.cuda()\n+x = t.to(\"hpu\")\n"
    here = file_hunks(PACKAGE, "default", "demo.py", diff, ["import torch", "x = t.cuda()"], [])
    there = file_hunks(PACKAGE, "default", "demo.py", diff, ["import numpy", "x = t.cuda()"], [])
    assert here[0].id != there[0].id


def test_ids_name_the_configuration_and_the_change_does_not():
    default = file_hunks(PACKAGE, "default", "demo.py", DIFF, ORIGINAL, [])
    eager = file_hunks(PACKAGE, "eager", "demo.py", DIFF, ORIGINAL, [])
    assert [h.change for h in default] == [h.change for h in eager]
    assert not {h.id for h in default} & {h.id for h in eager}


def test_findings_name_the_rules_of_a_hunk():
    findings = [
        {"line": 4, "end_line": 4, "column": 28, "code": "HPU110", "fixable": True},
        {"line": 1, "end_line": 1, "column": 1, "code": "HPU001", "fixable": True},
        {"line": 9, "end_line": 9, "column": 5, "code": "HPU190", "fixable": False},
    ]
    hunks = file_hunks(PACKAGE, "default", "demo.py", DIFF, ORIGINAL, findings)
    assert [hunk.codes for hunk in hunks] == [["HPU001"], ["HPU110"], []]


def test_the_unused_import_exemption_is_not_part_of_a_hunks_identity():
    exempted = DIFF.replace("as htcore\n", "as htcore  # noqa: F401\n")
    plain = file_hunks(PACKAGE, "default", "demo.py", DIFF, ORIGINAL, [])
    marked = file_hunks(PACKAGE, "default", "demo.py", exempted, ORIGINAL, [])
    assert [h.id for h in marked] == [h.id for h in plain]
    assert marked[0].added == ["import habana_frameworks.torch.core as htcore  # noqa: F401"]
    # Any other change to the line is a change.
    other = DIFF.replace("as htcore\n", "as hc\n")
    assert file_hunks(PACKAGE, "default", "demo.py", other, ORIGINAL, [])[0].id != plain[0].id
