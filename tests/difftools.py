"""A minimal unified-diff applier, to check that printed diffs are well-formed."""

import re

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_unified_diff(diff: str, files: dict) -> dict:
    """Apply ``diff`` to ``files`` (path -> text); every context line must match."""
    result = dict(files)
    lines = diff.splitlines()
    index = 0
    while index < len(lines):
        assert lines[index].startswith("--- "), lines[index]
        path = lines[index + 1][4:]
        old = result[path].splitlines()
        new, cursor, index = [], 0, index + 2
        while index < len(lines) and lines[index].startswith("@@"):
            start = int(HUNK.match(lines[index]).group(1))
            start = start - 1 if start else 0
            new += old[cursor:start]
            cursor = start
            index += 1
            while index < len(lines) and lines[index][:1] in (" ", "-", "+"):
                tag, text = lines[index][0], lines[index][1:]
                if tag in " -":
                    assert old[cursor] == text, f"context mismatch at {path}:{cursor + 1}"
                    cursor += 1
                if tag in " +":
                    new.append(text)
                index += 1
        new += old[cursor:]
        result[path] = "\n".join(new) + "\n"
    return result
