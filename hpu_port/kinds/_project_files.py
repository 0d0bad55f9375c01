"""Which file of the project a document's command names, by a relative path.

A script is run from its own folder, or from one above it up to the
project's root (`bash tools/dist_train.sh` from the root): a relative path
it names is looked for from each of them in turn.
"""

from __future__ import annotations

import os
from typing import Optional


def project_file(document, relative: str, wanted) -> Optional[str]:
    """The path in ``wanted`` (absolute paths) that ``relative`` names from
    the document's folder or one above it, up to the project's root; None
    when there is none, or the path is absolute or holds a variable."""
    facts = document.facts
    if facts is None or not wanted or not document.path or os.path.isabs(relative) or "$" in relative:
        return None
    folder = os.path.dirname(os.path.abspath(document.path))
    root = facts.root or os.sep
    while True:
        candidate = os.path.normpath(os.path.join(folder, relative))
        if candidate in wanted:
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder or not (folder + os.sep).startswith(root.rstrip(os.sep) + os.sep):
            return None
        folder = parent
