"""The rule model: what a rule is, its examples, and the options a run is made with.

Everything else builds on these plain data types; this module imports nothing
of hpu-port's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

FIX_SAFETIES = ("safe", "unsafe", "none")
MODES = ("lazy", "eager")
# What porting in each mode means, in one line, for the summary and every report.
MODE_IMPLIES = {
    "lazy": (
        "mark_step() is inserted after backward passes and optimizer steps and torch.compile is "
        "reported; current Gaudi releases default to eager mode, so run with PT_HPU_LAZY_MODE=1"
    ),
    "eager": (
        "no mark_step(); torch.compile gets backend=\"hpu_backend\" (PT_HPU_LAZY_MODE=0, the default "
        "of current Gaudi releases); code that is not compiled runs op by op"
    ),
}
OPTIONS = ("fp16-to-bf16",)


@dataclass(frozen=True)
class Example:
    """A code sample from a rule file: ``after`` is None for report-only or valid code."""

    before: str
    after: Optional[str]
    valid: bool
    options: dict = field(default_factory=dict, hash=False, compare=False)
    select: tuple[str, ...] = ()
    # The file the example stands for (its name picks the parser); None: the kind's default.
    file: Optional[str] = None
    # A GPU Migration Toolkit log the example is checked with (`toolkit-log` rules).
    toolkit_log: Optional[str] = None


@dataclass(frozen=True)
class ProjectHold:
    """A rule's fix is withheld in a project whose code matches ``pattern``
    somewhere (in a file holding ``needle``): code elsewhere relies on what
    the fix would take away. ``why`` names the place as ``{where}``."""

    needle: str
    pattern: str
    why: str


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str
    why: str
    kind: str
    fix: str
    default: bool
    category: str
    message: str
    params: Any
    examples: tuple[Example, ...]
    source: str
    hpu_runtime: bool = False
    mode: Optional[str] = None
    option: Optional[str] = None
    references: tuple[str, ...] = ()
    covers: tuple[str, ...] = ()
    remove_imports_of: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    project_hold: Optional[ProjectHold] = None
    # How the plan counts this rule's findings: one root cause per line, or per file.
    items: str = "per-line"
    raw_params: dict = field(default_factory=dict, hash=False, compare=False)
    # Derived from the rest by the rule's kind when the rule is loaded, and
    # kept with the loaded rules: see ``Screening``.
    screening: Optional["Screening"] = field(default=None, hash=False, compare=False, repr=False)

    @property
    def has_fix(self) -> bool:
        return self.fix != "none"


@dataclass(frozen=True)
class Screening:
    """What a rule's kind tells about the files the rule could act on,
    derived once when the rule is loaded: deciding that a file needs no
    parse then imports no kind (a pre-commit run on a Python file never
    loads the kinds that read YAML or shell scripts)."""

    # Alternatives (``hpu_port.triggers.Trigger``) of which one must occur; none:
    # the rule only acts along with others.
    triggers: tuple = ()
    # The document types the kind reads (YAML, shell scripts...).
    document_types: frozenset = frozenset()
    reads_python: bool = True
    reads_comments: bool = False
    fallback: bool = False
    # Triggers of what the rule consults away from where it reports (``Kind.context``).
    context: tuple = ()
    # The kind tells where in a file the rule could act (``Kind.places``).
    placed: bool = False
    # Library classes whose subclasses in the project the rule must know (``Kind.project_bases``).
    project_bases: frozenset = frozenset()
    # (class, its fields) the project facts weigh at argument parsers (``Kind.argument_fields``).
    argument_fields: tuple = ()


DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024


@dataclass(frozen=True)
class Options:
    mode: str = "lazy"
    fp16_to_bf16: bool = False
    unsafe_fixes: bool = False
    # Larger files are generated data in practice; libcst needs minutes for them.
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    include_generated: bool = False
    # Convert the code shared among devices in a package that serves several
    # (a Gaudi-only fork); by default it is kept and reported.
    port_shared_code: bool = False
    # False: findings only, no fix is applied (build scripts).
    fixes: bool = True
    # The project's additions to the device evidence (`[tool.hpu-port.device]`,
    # an ``hpu_port.device.evidence.Evidence``); None: the bundled table alone.
    # Carried here so that each file's result, and the cache, depend on them.
    device: Any = None
    # The import order of the project's ruff or isort configuration (an
    # ``hpu_port.lint_config.ImportStyle``); None: as each module shows it.
    import_style: Any = None
    # Codes whose fixes `rewrite` would not apply: advice rules selected by
    # default, whose fixes `check` must not count (`rewrite` fixes only the
    # advice that is named in `--select`/`--extend-select`).
    report_only: frozenset = frozenset()

    def fix_enabled(self, rule: "Rule") -> bool:
        """Whether ``rule``'s fix is applied under these options."""
        if not self.fixes or rule.code in self.report_only:
            return False
        if rule.fix == "safe":
            return rule.option is None or self._option_on(rule.option)
        if rule.fix == "unsafe":
            return self.unsafe_fixes
        return False

    def _option_on(self, option: str) -> bool:
        return {"fp16-to-bf16": self.fp16_to_bf16}.get(option, False)


ADVICE = "advice"


def is_advice(rule: Rule) -> bool:
    """Optimization advice: reported by `check`, left to `rewrite --select`."""
    return rule.category == ADVICE
