"""Per-file results: everything the engine learns about one file, as plain data.

Nothing here prints or touches the disk; renderers and the writer consume these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

# The category of optimization advice (the same name as model.ADVICE, which
# this leaf module cannot import).
ADVICE_CATEGORY = "advice"
# Lines that only mention CUDA (a name such as `use_cuda`): a person looks at
# them, but nothing there stops the code from running on Gaudi.
REVIEW_CATEGORY = "review"
SEVERITIES = ("blocker", "advice", "review")

# What the port does where a finding is, as the reports say it: single-device
# CUDA code is ported, code that chooses among devices extended, another
# device's or NVIDIA-only code kept; the rest is reported for a person.
ACTIONS = ("port", "extend", "keep", "report")
ACTION_WORDS = {"port": "ported", "extend": "extended", "keep": "kept", "report": "reported for a person"}

# Why a fix is withheld (``Finding.kept``): each kind, as the reports explain it.
KEPT_REASONS = {
    "nvidia-only": "the code is kept for NVIDIA GPUs: it uses a library, API or build that Gaudi does not have",
    "other-device": "the code is one arm of a choice among devices, the arm of another device",
    "shared-code": "the module serves several devices and this code runs on all of them: it needs a choice of device, made by hand",
    "skip-guard": "a test's skip condition: the test needs NVIDIA and would fail on Gaudi instead of being skipped",
    "not-a-device": "the text names something other than the device (a key, a longer name, a constant's own value)",
    "dtype-role": "float16 here is data (a table, a test's value, a file format), not the precision of compute",
    "optional-import": "the name is imported conditionally or locally: a new top-level import would make it mandatory",
    "name-taken": "the new name is taken here (a local name, a key the dict has already)",
    "unclear": "what the value means here cannot be told from the code (an unpacked mapping, a computed option)",
    "by-hand": "the change is a restructuring that a person makes",
    "harmless": "the code does nothing on Gaudi and breaks nothing (a cuDNN switch, a CUDA cache flush): left as it is, said nowhere",
}


@dataclass(frozen=True)
class Finding:
    """One thing a rule noticed at a place in a file.

    ``fix`` is the fix safety of this match (``safe``, ``unsafe``, or ``none``
    when it cannot be rewritten); ``fixable`` tells whether ``rewrite`` with the
    current options fixes it; ``applied`` whether this run's output includes it.
    """

    code: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    fix: str = "none"
    fixable: bool = False
    applied: bool = False
    category: str = ""
    cell: Optional[int] = None  # notebooks: the cell (1-based), lines counted within it
    # Why the fix is withheld, when it is: a key of KEPT_REASONS, the code
    # that says so (if one does) and the line of the unit that holds it (the
    # line its own finding is on, when it has one; None when no unit does).
    kept: str = ""
    kept_evidence: str = ""
    kept_unit_line: Optional[int] = None
    # What the port does at this finding: one of ACTIONS ("" from readers
    # that do not say: then "port" when there is a fix, else "report").
    action: str = ""
    # How the plan counts the rule's findings as root causes (its `items`):
    # "per-line"; "per-file" (variables that do nothing on Gaudi are removed
    # from a script in one go); "per-repository" (removed from every
    # launch script in one go); "per-setting" (the same setting in many
    # configs is one decision).
    item_scope: str = "per-line"

    @property
    def needs_person(self) -> bool:
        """True when ``rewrite`` cannot fix this finding: a person must act."""
        return not self.fixable

    @property
    def advice(self) -> bool:
        """Optimization advice (category ``advice``): the code runs without it.
        Every other finding is a blocker: the code will not run, or runs wrong."""
        return self.category == ADVICE_CATEGORY

    @property
    def review(self) -> bool:
        """A line to look at (category ``review``): neither a blocker nor advice."""
        return self.category == REVIEW_CATEGORY

    @property
    def severity(self) -> str:
        return "advice" if self.advice else ("review" if self.review else "blocker")

    @property
    def taken(self) -> str:
        """The action the port takes here (see ACTIONS)."""
        if self.action:
            return self.action
        return "keep" if self.kept else ("port" if self.fix != "none" else "report")

    def kept_record(self) -> Optional[dict]:
        """Why the fix is withheld, as the machine-readable reports give it."""
        if not self.kept:
            return None
        return {"reason": self.kept, "evidence": self.kept_evidence, "unit_line": self.kept_unit_line}

    def sort_key(self) -> tuple:
        return (self.cell or 0, self.line, self.column, self.code, self.message)

@dataclass
class FileResult:
    """The outcome of porting one file.

    ``new_source`` is None when nothing changed (or nothing was applied).
    ``error`` is a one-line description when the file could not be processed;
    then nothing must be written for it.
    """

    path: str
    source: bytes = b""
    new_source: Optional[bytes] = None
    findings: list[Finding] = field(default_factory=list)
    error: Optional[str] = None
    encoding: str = "utf-8"
    # Whether the rewrite added or removed imports (names may then resolve anew).
    imports_changed: bool = False
    # The rules the file was ported with (for report metadata).
    rules: tuple = ()
    # Notebooks: cell number (1-based) -> (old source, new source) of changed cells.
    cell_changes: dict = field(default_factory=dict)
    # Whether this result came from the cache (the file was not ported again).
    from_cache: bool = False
    # What kind of file it is (hpu_port.filetypes): python, shell, yaml, ...
    file_type: str = "python"
    # Code kept as it is for another device or NVIDIA: [action, first line,
    # last line] of each unit or arm (what the reports say of each line in it).
    regions: list = field(default_factory=list)

    # The findings placed in ``new_source`` rather than in ``source`` (what was
    # fixed, where its replacement stands; what is left, where it now is), for
    # reporting on a file once it has been rewritten in place.
    output_findings: Optional[list[Finding]] = None
    # The execution mode the file was ported for (None: not ported).
    mode: Optional[str] = None

    @property
    def changed(self) -> bool:
        return self.new_source is not None and self.new_source != self.source

    @property
    def failed(self) -> bool:
        return self.error is not None

def all_findings(results: Iterable[FileResult]) -> list[tuple[str, Finding]]:
    rows = [(r.path, f) for r in results for f in r.findings]
    return sorted(rows, key=lambda row: (row[0], row[1].sort_key()))


def modes_in(results: Iterable[FileResult]) -> dict[str, int]:
    """The execution modes the files were ported for, with how many files each."""
    counts: dict[str, int] = {}
    for result in results:
        if result.mode is not None:
            counts[result.mode] = counts.get(result.mode, 0) + 1
    return dict(sorted(counts.items()))


def actions_summary(results: Iterable[FileResult]) -> str:
    """How many findings each action covers: `3 ported, 1 extended, ...`."""
    taken: dict[str, int] = dict.fromkeys(ACTIONS, 0)
    for _, finding in all_findings(results):
        taken[finding.taken] += 1
    return ", ".join(f"{taken[action]} {ACTION_WORDS[action]}" for action in ACTIONS)
