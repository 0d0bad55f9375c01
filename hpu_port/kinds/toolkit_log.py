"""Kind ``toolkit-log``: a call the GPU Migration Toolkit intercepted at run
time where no rule found anything in the code.

Its rules never match code: `check --toolkit-log LOG` reads the toolkit's
logs and reports, through the rule of this kind, each intercepted call site in
a scanned file that no static finding covers (see ``hpu_port.toolkit_log``).
Its examples carry a `toolkit-log` with the log the example stands with.
"""

from __future__ import annotations

from hpu_port.kinds import Kind, register_kind


@register_kind
class ToolkitLog(Kind):
    name = "toolkit-log"
    KEYS = {}
    # The API, the call as logged, the toolkit's verdict and what it did, and
    # why static analysis could not see it.
    MESSAGE_FIELDS = frozenset({"name", "call", "status", "result", "reason"})
