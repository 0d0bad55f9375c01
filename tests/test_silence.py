"""The silence measure of the precision corpus: which CUDA lines no finding speaks for."""

from tests.precision.silence import mentioning_code_lines, removed_lines, silent_lines

SOURCE = '''"""Runs on cuda."""
import torch  # cuda comment
use_cuda = True
model.cuda()
x = "barracuda"
from torch.cuda.nvtx import range_push
'''

DIFF = """--- a.py
+++ a.py
@@ -4,3 +4,2 @@
-model.cuda()
+model.to("hpu")
 x = "barracuda"
-from torch.cuda.nvtx import range_push
"""


def test_mentions_are_code_lines_only(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SOURCE)
    # Not the docstring, the comment or the fish; the import counts.
    assert mentioning_code_lines(path) == {3, 4, 6}


def test_removed_lines_are_counted_in_the_original():
    assert removed_lines(DIFF) == {4, 6}


def test_a_line_is_silent_without_a_finding_or_a_removal(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    report = {"findings": [], "files": [{"path": "a.py", "diff": DIFF}]}
    assert silent_lines(tmp_path, report) == ["a.py:3"]
    report["findings"] = [{"path": "a.py", "line": 3, "end_line": 3}]
    assert silent_lines(tmp_path, report) == []
