"""Rule kinds: the only rule logic the engine knows.

A kind turns the data of its rules into matching. Each module in this package
declares one kind and registers it with ``@register_kind``: the keys its rules
take, how they are checked, the triggers and screens that decide whether a
file needs parsing. How a kind matches and fixes code lives in the module of
the same name in ``hpu_port.visitors``, the only side that needs libcst: it is
imported the first time a file is really ported, so loading rules, screening
files and answering from the cache never load libcst. Rule files name the kind
they use; the engine never looks at rule codes.
"""

from __future__ import annotations

import importlib
import pkgutil
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional

from hpu_port.model import Rule, Screening
from hpu_port.triggers import CodeView, Trigger, text_trigger

if TYPE_CHECKING:  # pragma: no cover - typing only: the contract's libcst side, the documents' types
    import libcst as cst

    from hpu_port.context import FileContext
    from hpu_port.formats import Document, Edit, Span

_KINDS: dict[str, "Kind"] = {}
_LOADED = False
# Kinds declared in a module of another name (related kinds share a module);
# every other kind lives in the module named after it, dashes as underscores.
_MODULE_OF = {
    "command-flag": "command",
    "container-image": "document_text",
    "text-pattern": "document_text",
    "unread-part": "document_text",
    "whole-file": "document_text",
    "variable-read": "env_variable",
}


class Kind:
    """Base class of a rule kind.

    ``KEYS`` maps each rule-file key the kind accepts to (type, required).
    ``MESSAGE_FIELDS`` lists the ``{placeholders}`` a rule's message may use.
    """

    name: str = ""
    KEYS: dict[str, tuple[type, bool]] = {}
    # A fallback kind's findings are dropped on lines where another rule spoke.
    FALLBACK = False
    # Whether the kind reads comments (most never do, so a file whose trigger
    # text sits only in comments and docstrings is not parsed for them).
    READS_COMMENTS = False
    MESSAGE_FIELDS: frozenset[str] = frozenset({"name"})
    # The file name a rule's examples stand for, unless an example names one.
    EXAMPLE_FILE = "example.py"
    # Whether the kind has a side that matches Python (its module in
    # ``hpu_port.visitors``); the kinds of documents mostly do not.
    READS_PYTHON = True

    def param_keys(self) -> set[str]:
        return set(self.KEYS)

    def parse_params(self, table: dict) -> Any:
        """Check the kind's keys; return the parameters the visitor will use."""
        for key, (expected, required) in self.KEYS.items():
            if key not in table:
                if required:
                    raise ValueError(f"missing key {key!r} (required by kind {self.name!r})")
                continue
            if not isinstance(table[key], expected):
                raise ValueError(f"{key!r} must be a {_type_name(expected)}")
        return self.build_params(table)

    def build_params(self, table: dict) -> Any:
        return table

    def check_message(self, message: str) -> Optional[str]:
        for _, field_name, _, _ in string.Formatter().parse(message):
            if field_name is not None and field_name not in self.MESSAGE_FIELDS:
                allowed = ", ".join("{%s}" % f for f in sorted(self.MESSAGE_FIELDS))
                return f"message uses unknown placeholder {{{field_name}}} (allowed: {allowed})"
        return None

    def describe(self, rule: Rule) -> str:
        """Extra Markdown for the rule's page (for example its table of names)."""
        return ""

    def handled_names(self, rule: Rule) -> set[str]:
        """Qualified names (or `prefix.*`) this rule acts on, for coverage checks."""
        names: set[str] = set()
        for key in ("renames", "names", "rewrites"):
            names |= set(rule.params.get(key, {})) if isinstance(rule.params, dict) else set()
        for key in ("calls", "attributes", "identity-calls", "harmless"):
            value = rule.params.get(key, ()) if isinstance(rule.params, dict) else ()
            names |= set(value)
        return names

    def project_bases(self, rule: Rule) -> frozenset:
        """Qualified names of library classes whose subclasses in the project
        ``rule`` must know (a trainer it moves): the project facts find them
        across modules (``ProjectFacts.subclasses``)."""
        return frozenset()

    def argument_fields(self, rule: Rule) -> dict:
        """The fields (command-line options) that matter when ``rule``'s
        classes of arguments share a parser with other classes: ``""`` -> the
        ones its moved classes add, a library class's qualified name -> the
        ones it defines. The project facts find the parsers of the project
        that would refuse such a pair (``ProjectFacts.argument_clashes``)."""
        return {}

    def triggers(self, rule: Rule) -> list[Trigger]:
        """What must occur in a file for this rule to possibly match it (any of
        these); none: the rule only acts along with others."""
        return []

    def screen(self, rule: Rule, view: CodeView) -> bool:
        """False when the standard parser's view of a file shows that ``rule``
        cannot match it (its trigger text occurs, but not where it would act);
        the file then needs no full parse for this rule. Must never be False
        for a file the rule would report on."""
        return True

    def places(self, rule: Rule, view: CodeView) -> Optional[list[tuple[int, int]]]:
        """The lines (first, last) of each statement in which ``rule`` could
        act, each holding all the code the rule reads to decide there apart
        from the module's top-level statements and its ``context``; None:
        not known, and its triggers decide. When only reporting, the
        functions and classes that hold none of them are stubbed out (see
        ``hpu_port.narrow``), so a rule must never report outside them. A
        kind that knows them screens with them too (see ``screen``)."""
        return None

    def context(self, rule: Rule) -> list[Trigger]:
        """What ``rule`` consults away from the code it reports on (an
        optimizer built in `__init__`, a graph wrapper called once for the
        whole file), as triggers: when only reporting, a function in which one
        occurs is parsed even if it holds nothing to report (see
        ``hpu_port.narrow``)."""
        return []

    def visitors(self, rules: list[Rule], ctx: "FileContext") -> list["cst.BatchableCSTVisitor"]:
        """The visitors that match ``rules`` in the file of ``ctx``, from this
        kind's module in ``hpu_port.visitors``: its ``visitor(rules, ctx)``
        serves all the kind's rules at once; a module whose visitor follows one
        rule at a time offers ``visitor_for_rule(rule, ctx)`` instead, so that
        any number of rules of the kind each report under their own code.
        None for kinds that only act in ``finish``."""
        matching = _matching_module(type(self).__module__)
        if matching is None:
            return []
        if hasattr(matching, "visitor_for_rule"):
            return [matching.visitor_for_rule(rule, ctx) for rule in rules]
        visitor = matching.visitor(rules, ctx)
        return [visitor] if visitor is not None else []

    def finish(self, rules: list[Rule], ctx: "FileContext") -> None:
        """Called once the whole file was visited (for file-level decisions)."""

    def judge_output(self, rules: list[Rule], old: bytes, new: bytes) -> list:
        """Findings about what the rewrite made of a Python file (``new``, the
        final output, from ``old``, the file as read), at lines of ``old``."""
        return []


@dataclass(frozen=True)
class Match:
    """What a document kind found: where, the message, and the edits that fix
    it (empty: a person must act)."""

    span: Span
    message: str
    edits: tuple[Edit, ...] = ()


class DocumentKind(Kind):
    """A kind that reads documents (shell scripts, YAML, JSON, Dockerfiles...)
    rather than Python: no libcst involved.

    ``FORMATS`` names the file types (``hpu_port.filetypes``) it reads;
    ``match`` returns what one rule finds in one document. The engine places
    the findings, applies suppressions, applies the edits of the fixes that
    are switched on and parses the output again.
    """

    FORMATS: tuple[str, ...] = ()
    READS_PYTHON = False

    def match(self, rule: "Rule", document: Document, options: Any) -> Iterable[Match]:
        return ()

    def needles(self, rule: "Rule") -> tuple[str, ...]:
        """Lower-case texts of which one must occur in a document for ``rule``
        to match it (none: the rule reads every document of its formats)."""
        return ()

    def project_needles(self, rule: "Rule", facts: Any) -> tuple[str, ...]:
        """``needles``, with those the project's facts add (None: no facts)."""
        return self.needles(rule)


def _type_name(expected) -> str:
    if isinstance(expected, tuple):
        return " or a ".join(_type_name(e) for e in expected)
    return {dict: "table", list: "list", str: "string", bool: "boolean"}.get(expected, expected.__name__)


def _matching_module(declaration: str):
    name = declaration.rsplit(".", 1)[-1]
    try:
        return importlib.import_module(f"hpu_port.visitors.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"hpu_port.visitors.{name}":
            raise
        return None


def register_kind(cls: type) -> type:
    _KINDS[cls.name] = cls()
    return cls


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    _LOADED = True


def get_kind(name: str) -> Optional[Kind]:
    # Only the modules of the kinds asked for are imported: a run over Python
    # files never pays for the kinds that read shell scripts or YAML.
    if name not in _KINDS and not _LOADED:
        _import_declaring_module(name)
        if name not in _KINDS:
            _load_all()
    return _KINDS.get(name)


def declaring_module(name: str) -> str:
    return f"{__name__}.{_MODULE_OF.get(name, name.replace('-', '_'))}"


def _import_declaring_module(name: str) -> None:
    module = declaring_module(name)
    if not module.rpartition(".")[2].isidentifier():
        return  # not a kind's name (a typo in a rule file): the full list answers
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise


def derive_screening(rule: Rule) -> Screening:
    """What ``rule``'s kind tells about the files it could act on (raises
    ValueError for rule data the kind cannot make triggers of)."""
    kind = get_kind(rule.kind)
    triggers = [text_trigger(text) for text in rule.triggers] if rule.triggers else kind.triggers(rule)
    return Screening(
        triggers=tuple(triggers),
        document_types=frozenset(getattr(kind, "FORMATS", ())),
        reads_python=kind.READS_PYTHON,
        reads_comments=kind.READS_COMMENTS,
        fallback=kind.FALLBACK,
        context=tuple(kind.context(rule)),
        placed=type(kind).places is not Kind.places,
        project_bases=frozenset(kind.project_bases(rule)),
        argument_fields=tuple(sorted((name, tuple(sorted(fields))) for name, fields in kind.argument_fields(rule).items())),
    )


def screening(rule: Rule) -> Screening:
    """The rule's screening as loaded, or derived now (a rule made in code)."""
    return rule.screening or derive_screening(rule)


def fallback_codes(rules) -> set[str]:
    """The codes of ``rules`` whose kind only speaks where no other rule did."""
    return {rule.code for rule in rules if screening(rule).fallback}


def kind_names() -> list[str]:
    _load_all()
    return sorted(_KINDS)


def name_context(names: Iterable[str]) -> list[Trigger]:
    """Each qualified name as context (`torch.optim.*`, `torch._C._cuda*`,
    `deepspeed.initialize[0]`): all of its whole components, and the text
    before a `*` within one, as any spelling of it mentions them once import
    aliases are spelled out (see ``hpu_port.narrow``). Its last word alone
    would keep every function that calls some other `save` or `load`."""
    found = []
    for name in sorted(names):
        parts = name.split("[")[0].split(".")
        words = {part for part in parts if part and "*" not in part}
        prefixes = {part.split("*")[0] for part in parts if "*" in part}
        if words or any(prefixes):
            found.append(Trigger(words=frozenset(w.encode() for w in words), texts=frozenset(p.encode() for p in prefixes if p)))
    return found


def word_context(words: Iterable[str]) -> list[Trigger]:
    """Each word as context on its own (a method name, a setting)."""
    return [Trigger(words=frozenset({word.encode()})) for word in sorted(words)]


def string_list(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key!r} must be a list of strings")
    return value


def string_table(value: Any, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{key!r} must be a table of strings")
    return value


def markdown_table(headers: tuple[str, str], rows: dict[str, str], code_values: bool) -> str:
    lines = [f"| {headers[0]} | {headers[1]} |", "|---|---|"]
    for key, value in rows.items():
        shown = f"`{value}`" if code_values else (value or "")
        lines.append(f"| `{key}` | {shown} |")
    return "\n".join(lines) + "\n"
