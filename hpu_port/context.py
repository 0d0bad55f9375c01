"""What rule kinds see of the file being ported, and how they report.

The contract between the engine and the kinds: a kind's visitor reads names
and scopes through a FileContext and records findings (with their fixes) on
it; the engine places them, drops the suppressed ones and applies the fixes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

import libcst as cst

from hpu_port.edits import EditPlan, NodeEdit
from hpu_port.intervals import Reach
from hpu_port.lint_config import DEFAULT_STYLE
from hpu_port.branches import DeviceBranches, Held, OtherBackendCode
from hpu_port.device.evidence import of_options
from hpu_port.model import Options, Rule
from hpu_port.names import (
    ImportBinding,
    Scope,
    ScopeIndex,
    qualify,
    spell,
    target_name_nodes,
)
from hpu_port.project import NO_FACTS, ProjectFacts
from hpu_port.positions import holding_statements, positions_in_statements, positions_of
from hpu_port.results import Finding
from hpu_port.walk import descendants


class FileContext:
    """What rule kinds see of the file being ported, and how they report."""

    def __init__(self, module: cst.Module, options: Options, apply: bool) -> None:
        self.module = module
        self.options = options
        self.apply = apply
        self.scopes = ScopeIndex(module)
        self.scope: Scope = self.scopes.module
        self.plan = EditPlan(import_style=options.import_style or DEFAULT_STYLE)
        self.non_references: set[cst.Name] = set()
        self.docstring_depth = 0
        self.quotes = {'"': 0, "'": 0}
        self.hpu_runtime_used = False
        self.fixed_categories: set[str] = set()
        self.fixed_kinds: set[str] = set()
        self._hits: list[Hit] = []
        self._positions: dict = {}
        # The top-level statement being walked (None after the walk), and the
        # line each one starts on, when known: positions then need only the
        # statements that hold findings generated (see hpu_port.positions).
        self.statement: Optional[cst.CSTNode] = None
        self.statement_starts: Optional[dict] = None
        self.suppressions = None
        self._claimed: set[cst.CSTNode] = set()
        # The codes that report and fix; the other rules' hits are silent:
        # they only tell the device analysis what the whole port would do.
        self.selected: Optional[frozenset] = None
        self.branches = DeviceBranches(module, of_options(options).other)
        self.other_backend = OtherBackendCode(module)
        # The file's path as the run names it (some rules read its directory names),
        # and its bytes (a cheap screen before a kind looks closer).
        self.path = ""
        self.source = b""
        # The standard parser's tree of the source as read, when made.
        self.tree = None
        # What the runner found about the rest of the project (hpu_port.project).
        self.facts: ProjectFacts = NO_FACTS
        # The file as read, when this pass reads an earlier pass's output.
        self.origin: Optional[bytes] = None
        # Ports a piece of code with the rules of this file, as if it were a
        # file of its own that imports what this one imports (set by the
        # engine; the ``extend-dispatch`` kind ports a CUDA arm with it).
        self.port_snippet: Optional[Callable[[str], "PortedSnippet"]] = None
        # A module others import (a package's, not a script): Gaudi's imports
        # are optional there, and code added outside an HPU arm tests for them.
        self.gaudi_optional = False
        # [action, first line, last line] of the units kept as they are (see findings()).
        self.regions: list = []

    # -- names ------------------------------------------------------------------


    def release(self) -> None:
        """Forget everything once the file's result is made. The rules'
        visitors and watchers refer to this context, which refers to them:
        left alone, the cycles would keep the file's trees for the cycle
        collector to find, which costs more than freeing them at once."""
        self.__dict__.clear()
    def qualify(self, expr: cst.BaseExpression) -> Optional[tuple[str, ImportBinding]]:
        root = expr
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is not cst.Name or root.value not in self.scopes.imported_names:
            return None  # not an imported name's chain: the lookup would find no import
        return qualify(expr, self.scope)

    def is_reference(self, name: cst.Name) -> bool:
        return name not in self.non_references

    def spell(
        self,
        qualified: str,
        import_as: Optional[dict[str, str]] = None,
        from_imports: frozenset = frozenset(),
    ) -> Optional["Spelling"]:
        """Code that names ``qualified`` here, and the import it needs, if any.

        Reuses the file's own imports (``import torch as T`` gives ``T.hpu...``);
        otherwise plans an import: ``import <root>``, ``import <module> as
        <alias>`` for a module listed in ``import_as``, or ``from <module>
        import <name>`` for a module in ``from_imports``. None if the name it
        would need is already taken by something else.
        """
        found = spell(qualified, self.scope)
        if found is not None:
            return Spelling(found[0], binding=found[1])
        for module in sorted(from_imports, key=len, reverse=True):
            if qualified.startswith(module + "."):
                # `...kernels.FusedSDPA.apply`: import FusedSDPA, spell FusedSDPA.apply
                name = qualified[len(module) + 1:].split(".")[0]
                if self.scope.lookup(name) is not None or name in self.scopes.module.locals:
                    return None
                return Spelling(qualified[len(module) + 1:], f"from {module} import {name}")
        for module, alias in (import_as or {}).items():
            if qualified.startswith(module + "."):
                if self.scope.lookup(alias) is not None:
                    return None
                return Spelling(alias + qualified[len(module):], f"import {module} as {alias}")
        root = qualified.split(".")[0]
        if self.scope.lookup(root) is not None or root in self.scopes.module.locals:
            return None
        return Spelling(qualified, f"import {root}")

    def string_quote(self) -> str:
        """The quote character the file uses most, for strings a rule writes."""
        return "'" if self.quotes["'"] > self.quotes['"'] else '"'

    # -- reporting ----------------------------------------------------------------

    def claim(self, node: cst.CSTNode) -> bool:
        """Let only the first rule that matches a node report it."""
        if node in self._claimed:
            return False
        self._claimed.add(node)
        return True

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        fix: Optional[Callable[[EditPlan], None]] = None,
        spelling: Optional["Spelling"] = None,
        binding: Optional[ImportBinding] = None,
        kept: Optional[Held] = None,
        extends: bool = False,
        moves_script: bool = False,
    ) -> "Hit":
        """Record a finding at ``node``, with the ``fix`` that rewrites it (None:
        a person must act), or ``kept``: why the rule withholds its fix.
        ``binding`` is the import whose use the fix replaces. Fixes are
        planned once the finding's place is known, so that a `# hpu-port:
        ignore` comment switches off the fix too. ``moves_script``: the fix
        moves the whole file to Gaudi on purpose (an opt-in fix), so code that
        a script outside any package shares among devices moves with it.
        """
        has_fix = rule.has_fix and fix is not None
        if kept is None and has_fix and binding is not None and binding.guarded and spelling is not None and spelling.new_import:
            # `try: import pynvml` or an import inside a function: a new
            # top-level import would make an optional dependency mandatory.
            kept = Held("optional-import", f"`{binding.name}` is imported conditionally or locally here")
        if kept is None and has_fix:
            kept = self.other_backend.held(node) or self.branches.held(rule.kind)
            if kept is not None and kept.reason == "shared-code" and moves_script and not self.facts.top_package(self.path):
                kept = None
        if kept is None and has_fix and rule.project_hold is not None:
            where = self.facts.project_hold(rule.code)
            if where is not None:
                kept = Held("unclear", rule.project_hold.why.format(where=where))
        if kept is not None:
            has_fix = False
            message += f" (not rewritten: {kept.why})"
            if kept.quiet and kept.region is None and kept.unit is None:
                # Said nowhere, so the reports give where: the device choice it is in, or itself.
                kept = dataclasses.replace(kept, region=self.branches.open[-1] if self.branches.open else node)
        fixable = has_fix and self.options.fix_enabled(rule)
        hit = Hit(node, rule, message, fix if fixable else None, spelling, binding, has_fix, fixable)
        hit.kept = kept
        hit.extends = extends
        # Another device's arm of a chain that has (or gets) an HPU arm is
        # done: nothing there for a person, so nothing is said.
        hit.quiet = kept is not None and kept.quiet
        hit.statement = self.statement
        hit.silent = self.selected is not None and rule.code not in self.selected
        self._hits.append(hit)
        return hit

    def hits(self) -> list["Hit"]:
        """The findings recorded so far."""
        return list(self._hits)

    def hits_inside(self, tree: cst.CSTNode) -> list["Hit"]:
        """The findings recorded so far at nodes inside ``tree``."""
        nodes = set(descendants(tree))
        return [hit for hit in self._hits if hit.node in nodes]

    def withdraw_fix(self, hit: "Hit", kept: Held) -> None:
        """Report ``hit`` without its fix (decided after the walk, before planning)."""
        if hit.has_fix:
            hit.has_fix = hit.fixable = False
            hit.fix = None
            hit.kept = kept
            hit.message += f" (not rewritten: {kept.why})"

    def report_at(self, rule: Rule, line: int, message: str) -> None:
        """Record a finding about a line rather than a node (a comment, say)."""
        hit = Hit(None, rule, message, None, None, None, False, False, (line, 1), (line, 1))
        hit.silent = self.selected is not None and rule.code not in self.selected
        self._hits.append(hit)

    def resolve_hits(self) -> None:
        """Place the new findings, drop the suppressed ones, plan the fixes of the rest.

        Planned in `check` too, so that both commands see the same file state;
        only `rewrite` applies the plan.
        """
        new = [hit for hit in self._hits if hit.start is None]
        if not new:
            return
        self._hold_by_containment(new)
        self._place({hit.node: hit.statement for hit in new if hit.node is not None})
        for hit in new:
            where = self._positions.get(hit.node)
            hit.start = (where.start.line, where.start.column + 1) if where else (1, 1)
            hit.end = (where.end.line, where.end.column + 1) if where else hit.start
            if self.suppressions and self.suppressions.suppresses(hit.rule.code, hit.start[0], hit.end[0]):
                hit.suppressed = True
            elif hit.fixable and not hit.silent:
                self._plan(hit)

    def _hold_by_containment(self, hits: list) -> None:
        """Hold the fixes that lie in a unit kept for another device, also
        those made before the walk found the unit: what is held depends on
        where a fix is, never on the order the walk met it."""
        if not self.other_backend.units:
            return
        for hit in hits:
            if hit.node is None or hit.node is self.module:
                continue
            if hit.has_fix:
                why = self.other_backend.held_by_containment(hit.node)
                if why:
                    self.withdraw_fix(hit, why)
            elif hit.kept is None and hit.rule.kind != "other-backend":
                # Nothing to fix, in a module, class or function that is
                # reported as a whole (a mere mention of CUDA there goes
                # unsaid, and uncounted). Counted whatever is selected.
                hit.unit = self.other_backend.fold(hit.node, count=hit.rule.category != "review")
                hit.quiet = hit.unit is not None

    def _place(self, nodes: dict) -> None:
        """Find the positions of ``nodes`` (node -> its top-level statement, or None if unknown)."""
        # The module itself needs no position pass (it starts at 1:1), so a
        # file-level finding such as a missing import costs no pass at all.
        wanted = {node: statement for node, statement in nodes.items() if node is not self.module and node not in self._positions}
        if not wanted:
            return
        grouped = self._by_statement(wanted) if self.statement_starts is not None else None
        if grouped is not None:
            self._positions.update(positions_in_statements(self.module, grouped, self.statement_starts))
            return
        # A pass over the whole module places the imports too, which findings
        # need if a fix drops one, so that no second pass is needed for them.
        aliases = [b.alias for b in self.scopes.bindings if b.alias not in self._positions]
        self._positions.update(positions_of(self.module, [*wanted, *aliases]))

    def _by_statement(self, wanted: dict) -> Optional[dict]:
        """Top-level statement -> the nodes it holds; None if some node is in none."""
        unknown = {node for node, statement in wanted.items() if statement is None}
        found = holding_statements(self.module.body, unknown) if unknown else {}
        grouped: dict = {}
        for node, statement in wanted.items():
            grouped.setdefault(statement or found.get(node), []).append(node)
        return None if None in grouped else grouped

    def _plan(self, hit: "Hit") -> None:
        self.hpu_runtime_used |= hit.rule.hpu_runtime and not hit.names_no_device
        self.fixed_categories.add(hit.rule.category)
        self.fixed_kinds.add(hit.rule.kind)
        hit.fix(self.plan)
        if hit.spelling is not None:
            hit.spelling.commit(self)
        if hit.binding is not None:
            hit.binding.rewritten += 1

    def replace(self, node: cst.CSTNode, edit: NodeEdit) -> Callable[[EditPlan], None]:
        """A fix that replaces ``node`` through ``edit`` (for ``report``)."""
        return lambda plan: plan.replace(node, edit)

    def _kept_regions(self, units) -> list:
        """[action, first line, last line] of each unit that holds a finding."""
        regions = []
        for unit in units:
            if unit is self.module:
                regions.append(["keep", 1, max(1, len(self.module.code.splitlines()))])
                continue
            where = self._positions.get(unit)
            if where is not None:
                action = "extend" if unit in self.branches.extended else "keep"
                first = self._positions.get(unit.decorators[0]) if getattr(unit, "decorators", None) else None
                start = first.start.line if first is not None else where.start.line
                regions.append([action, start, where.end.line])
        return sorted(regions, key=lambda region: region[1:])

    def _kept_fields(self, kept: Optional[Held]) -> dict:
        if kept is None:
            return {}
        if kept.unit is self.module:
            line = 1
        else:
            where = self._positions.get(kept.unit) if kept.unit is not None else None
            line = where.start.line if where else None
        return {"kept": kept.reason, "kept_evidence": kept.evidence, "kept_unit_line": line}

    def findings(self, fallback: set[str]) -> list[Finding]:
        """Every unsuppressed finding, in order; ``fallback``: the codes whose
        findings only count on lines where nothing else was said."""
        self.resolve_hits()
        units = {hit.kept.unit: None for hit in self._hits if hit.kept is not None and hit.kept.unit is not None}
        regions = {
            region: None
            for hit in self._hits
            for region in (hit.unit, hit.kept.region or hit.kept.unit if hit.kept is not None else None)
            if region is not None
        }
        decorators = {u.decorators[0]: None for u in regions if getattr(u, "decorators", None)}
        self._place({**units, **regions, **decorators})
        self.regions = self._kept_regions(regions)
        findings = [
            Finding(
                code=hit.rule.code,
                message=hit.message,
                line=hit.start[0],
                column=hit.start[1],
                end_line=hit.end[0],
                end_column=hit.end[1],
                fix=hit.rule.fix if hit.has_fix else "none",
                fixable=hit.fixable,
                applied=hit.fixable and self.apply,
                category=hit.rule.category,
                item_scope=hit.rule.items,
                **self._kept_fields(hit.kept),
                action=_action(hit),
            )
            for hit in self._hits
            if not hit.suppressed and not hit.quiet
        ]
        self._place(dict.fromkeys(self.plan.dropped_aliases))
        positions = self._positions
        removed_lines = {positions[a].start.line for a in self.plan.dropped_aliases if a in positions}
        # A fallback on the code of a suppressed finding would report what the
        # user just silenced, under another code; on a quiet one, code that is
        # right as it is.
        silenced = [(h.start, h.end) for h in self._hits if (h.suppressed or h.quiet) and h.rule.code not in fallback]
        silenced_spans = Reach(silenced)
        findings = [f for f in findings if f.code not in fallback or not silenced_spans.holds(*_span(f))]
        findings = _without_redundant_fallbacks(sorted(set(findings), key=Finding.sort_key), removed_lines, fallback)
        # Silent hits (rules not selected) were judged with the rest, so that a
        # fallback finding is said where it would be said with every rule on.
        silent = {hit.rule.code for hit in self._hits if hit.silent}
        return [f for f in findings if f.code not in silent] if silent else findings


def _action(hit: "Hit") -> str:
    if hit.kept is not None:
        return "keep"
    if hit.has_fix:
        return "extend" if hit.extends or hit.rule.kind == "extend-dispatch" else "port"
    return "report"


def _without_redundant_fallbacks(findings: list[Finding], removed_lines: set, fallback: set) -> list[Finding]:
    """Fallback findings (a line that merely mentions CUDA), once a line, only
    where they will still stand after the rewrite and nothing else speaks for
    them: not on a line where another finding already asks a person to look,
    not inside code that a fix rewrites, not on import lines the rewrite
    removes. `check` then counts before a rewrite what `check` counts after it.
    """
    specific = [f for f in findings if f.code not in fallback]
    spoken_lines = {f.line for f in specific if not f.fixable} | removed_lines
    rewritten = Reach(_span(f) for f in specific if f.fixable)
    kept, fallback_lines = [], set()
    for finding in findings:
        if finding.code in fallback:
            if finding.line in spoken_lines or finding.line in fallback_lines or rewritten.holds(*_span(finding)):
                continue
            fallback_lines.add(finding.line)
        kept.append(finding)
    return kept


def _span(finding: Finding) -> tuple:
    return (finding.line, finding.column), (finding.end_line, finding.end_column)


@dataclass(eq=False)
class Hit:
    """A finding as it is collected: placed and planned by ``resolve_hits``."""

    node: cst.CSTNode
    rule: Rule
    message: str
    fix: Optional[Callable[[EditPlan], None]]
    spelling: Optional["Spelling"]
    binding: Optional[ImportBinding]
    has_fix: bool
    fixable: bool
    start: Optional[tuple[int, int]] = None
    end: Optional[tuple[int, int]] = None
    suppressed: bool = False
    statement: Optional[cst.CSTNode] = None
    # A rule that is not selected: it reports nothing and fixes nothing.
    silent: bool = False
    kept: Optional[Held] = None
    quiet: bool = False
    # The fix adds an HPU path beside the other devices' (it changes none).
    extends: bool = False
    # The unit whose own finding speaks for this one (which is then quiet).
    unit: Optional[cst.CSTNode] = None
    # The fix names no device (it follows another tensor's): it needs no Gaudi runtime.
    names_no_device: bool = False


@dataclass
class PortedSnippet:
    """A piece of code as the file's rules port it (None if it does not
    parse), the Gaudi imports the port added, and the first finding a person
    must deal with ("" when none)."""

    module: Optional[cst.Module]
    imports: list
    missing: str


@dataclass
class Spelling:
    code: str
    new_import: Optional[str] = None
    binding: Optional[ImportBinding] = None

    def commit(self, ctx: FileContext) -> None:
        if self.new_import:
            ctx.plan.add_import(self.new_import)
        if self.binding is not None:
            self.binding.reused = True


class ScopeEnter(cst.BatchableCSTVisitor):
    """Runs before the kinds: scope switching and marking what is not a reference."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx

    def _enter(self, node) -> None:
        scope = self.ctx.scopes.scope_for(node)
        if scope is not None:
            self.ctx.scope = scope

    def visit_FunctionDef(self, node) -> None:
        self.ctx.non_references.add(node.name)
        self._enter(node)
        self.ctx.other_backend.enter(node)

    visit_ClassDef = visit_FunctionDef

    def visit_Param(self, node) -> None:
        self.ctx.non_references.add(node.name)

    def visit_Attribute(self, node) -> None:
        self.ctx.non_references.add(node.attr)

    def visit_Arg(self, node) -> None:
        if node.keyword is not None:
            self.ctx.non_references.add(node.keyword)

    def visit_Import(self, node) -> None:
        self._mark_import(node)

    def visit_ImportFrom(self, node) -> None:
        self._mark_import(node)

    def _mark_import(self, node) -> None:
        for name_node in _names_in(node):
            self.ctx.non_references.add(name_node)

    def visit_Global(self, node) -> None:
        self._mark_import(node)

    def visit_Nonlocal(self, node) -> None:
        self._mark_import(node)

    def visit_AssignTarget(self, node) -> None:
        self._mark_targets(node.target)

    def visit_AnnAssign(self, node) -> None:
        self._mark_targets(node.target)

    def visit_AugAssign(self, node) -> None:
        self._mark_targets(node.target)

    def visit_CompFor(self, node) -> None:
        self._mark_targets(node.target)

    def visit_AsName(self, node) -> None:
        self._mark_targets(node.name)

    def visit_NamedExpr(self, node) -> None:
        self._mark_targets(node.target)

    def _mark_targets(self, target) -> None:
        self.ctx.non_references.update(target_name_nodes(target))

    def visit_Expr(self, node) -> None:
        # A bare string statement is a docstring (or documentation-like); rules
        # never touch the text of documentation.
        if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self.ctx.docstring_depth += 1

    def visit_SimpleString(self, node) -> None:
        if len(node.quote) == 1:
            self.ctx.quotes[node.quote] += 1

    # Chains that choose between devices: see hpu_port.branches.
    def visit_If(self, node) -> None:
        self.ctx.branches.enter(node)
        if isinstance(node, cst.If):
            self.ctx.other_backend.enter_if(node)
            self.ctx.other_backend.enter(node)  # a CUDA choice, test and body

    def visit_Match(self, node) -> None:
        self.ctx.branches.enter(node)

    def visit_Module(self, node) -> None:
        self.ctx.branches.enter_block(node.body)

    def visit_IndentedBlock(self, node) -> None:
        self.ctx.other_backend.enter_block(node)  # the arm of a branch for another device
        self.ctx.branches.enter_block(node.body)

    # Statements after an early exit kept for NVIDIA-only code (see hold_guarded_body).
    def visit_While(self, node) -> None:
        self.ctx.other_backend.enter(node)

    visit_With = visit_Try = visit_While

    def visit_For(self, node) -> None:
        self._mark_targets(node.target)
        self.ctx.other_backend.enter(node)

    def visit_SimpleStatementLine(self, node) -> None:
        self.ctx.other_backend.enter_statement(node)

    def visit_Dict(self, node) -> None:
        self.ctx.branches.enter(node)  # a table keyed by device names
        self.ctx.other_backend.enter_dict(node)

    def visit_DictElement(self, node) -> None:
        self.ctx.other_backend.enter(node)  # the CUDA entry of a per-device table

    def visit_IfExp(self, node) -> None:
        self.ctx.branches.enter(node)
        self.ctx.other_backend.enter_if_expression(node)

    def visit_Name(self, node) -> None:
        if node in self.ctx.non_references or node.value not in self.ctx.scopes.imported_names:
            return
        binding = self.ctx.scope.lookup(node.value)
        if isinstance(binding, ImportBinding):
            binding.uses += 1


class ScopeExit(cst.BatchableCSTVisitor):
    """Runs after the kinds, so that they leave a node in the scope they entered it."""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__()
        self.ctx = ctx

    def _leave(self, node) -> None:
        scope = self.ctx.scopes.scope_for(node)
        if scope is not None and scope.parent is not None:
            self.ctx.scope = scope.parent

    def leave_FunctionDef(self, node) -> None:
        self._leave(node)
        self.ctx.other_backend.leave(node)

    def leave_ClassDef(self, node) -> None:
        self._leave(node)
        self.ctx.other_backend.leave(node)

    def leave_Expr(self, node) -> None:
        if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self.ctx.docstring_depth -= 1

    def leave_If(self, node) -> None:
        self.ctx.branches.leave(node)
        self.ctx.other_backend.leave(node)

    def leave_Match(self, node) -> None:
        self.ctx.branches.leave(node)

    leave_Dict = leave_Match

    def leave_IndentedBlock(self, node) -> None:
        self.ctx.other_backend.leave_block(node)

    def leave_For(self, node) -> None:
        self.ctx.other_backend.leave(node)

    leave_While = leave_With = leave_Try = leave_For

    def leave_SimpleStatementLine(self, node) -> None:
        self.ctx.other_backend.leave_statement(node)

    def leave_DictElement(self, node) -> None:
        self.ctx.other_backend.leave(node)

    def leave_IfExp(self, node) -> None:
        self.ctx.branches.leave(node)
        self.ctx.other_backend.leave_if_expression(node)


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    return [found for found in descendants(node) if type(found) is cst.Name]
