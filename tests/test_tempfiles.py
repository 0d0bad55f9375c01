"""Temporary files for atomic replacement."""

import os

from hpu_port import tempfiles


def test_temporary_files_are_new_and_private(tmp_path):
    first, first_path = tempfiles.mkstemp(tmp_path, ".x-", ".tmp")
    second, second_path = tempfiles.mkstemp(tmp_path, ".x-", ".tmp")
    os.close(first)
    os.close(second)
    assert first_path != second_path
    assert os.path.basename(first_path).startswith(".x-") and first_path.endswith(".tmp")
    assert os.stat(first_path).st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in (first_path, second_path))
