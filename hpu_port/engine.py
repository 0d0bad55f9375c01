"""The per-file core: one pure function from (path, bytes, rule set) to a FileResult.

One parse, one statement walk for scopes and imports, one batched visit in
which every rule kind records findings and edits, one apply pass, one re-parse
of the output. No printing and no disk access happen here.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import re
from dataclasses import dataclass
from typing import Callable, Optional

import libcst as cst
from libcst import CSTNode

from hpu_port.edits import EditPlan, NodeEdit, apply_plan
from hpu_port.kinds import fallback_codes, get_kind
from hpu_port.positions import holding_statements, positions_in_statements, positions_of, statement_starts
from hpu_port.names import ImportBinding, Scope, ScopeIndex, qualify, spell, target_name_nodes
from hpu_port.narrow import narrow
from hpu_port.results import FileResult, Finding
from hpu_port.rules import Rule
from hpu_port.settings import RuleSet
from hpu_port.splice import splice
from hpu_port.suppressions import scan as scan_suppressions
from hpu_port.triggers import CodeView, code_view
from hpu_port.walk import walk, walk_module


class FileContext:
    """What rule kinds see of the file being ported, and how they report."""

    def __init__(self, module: cst.Module, ruleset: RuleSet, apply: bool) -> None:
        self.module = module
        self.ruleset = ruleset
        self.apply = apply
        self.scopes = ScopeIndex(module)
        self.scope: Scope = self.scopes.module
        self.plan = EditPlan()
        self.non_references: set[cst.Name] = set()
        self.docstring_depth = 0
        self.quotes = {'"': 0, "'": 0}
        self.hpu_runtime_used = False
        self.fixed_categories: set[str] = set()
        self._hits: list[Hit] = []
        self._positions: dict = {}
        # The top-level statement being walked (None after the walk), and the
        # line each one starts on, when known: positions then need only the
        # statements that hold findings generated (see hpu_port.positions).
        self.statement: Optional[cst.CSTNode] = None
        self.statement_starts: Optional[dict] = None
        self.suppressions = None
        self._claimed: set[cst.CSTNode] = set()

    # -- names ------------------------------------------------------------------

    def qualify(self, expr: cst.BaseExpression) -> Optional[tuple[str, ImportBinding]]:
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
    ) -> None:
        """Record a finding at ``node``, with the ``fix`` that rewrites it (None:
        a person must act). ``binding`` is the import whose use the fix
        replaces. Fixes are planned once the finding's place is known, so that
        a `# hpu-port: ignore` comment switches off the fix too.
        """
        has_fix = rule.has_fix and fix is not None
        fixable = has_fix and self.ruleset.fix_enabled(rule)
        hit = Hit(node, rule, message, fix if fixable else None, spelling, binding, has_fix, fixable)
        hit.statement = self.statement
        self._hits.append(hit)

    def report_at(self, rule: Rule, line: int, message: str) -> None:
        """Record a finding about a line rather than a node (a comment, say)."""
        self._hits.append(Hit(None, rule, message, None, None, None, False, False, (line, 1), (line, 1)))

    def resolve_hits(self) -> None:
        """Place the new findings, drop the suppressed ones, plan the fixes of the rest.

        Planned in `check` too, so that both commands see the same file state;
        only `rewrite` applies the plan.
        """
        new = [hit for hit in self._hits if hit.start is None]
        if not new:
            return
        self._place({hit.node: hit.statement for hit in new if hit.node is not None})
        for hit in new:
            where = self._positions.get(hit.node)
            hit.start = (where.start.line, where.start.column + 1) if where else (1, 1)
            hit.end = (where.end.line, where.end.column + 1) if where else hit.start
            if self.suppressions and self.suppressions.suppresses(hit.rule.code, hit.start[0], hit.end[0]):
                hit.suppressed = True
            elif hit.fixable:
                self._plan(hit)

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
        self.hpu_runtime_used |= hit.rule.hpu_runtime
        self.fixed_categories.add(hit.rule.category)
        hit.fix(self.plan)
        if hit.spelling is not None:
            hit.spelling.commit(self)
        if hit.binding is not None:
            hit.binding.rewritten += 1

    def replace(self, node: cst.CSTNode, edit: NodeEdit) -> Callable[[EditPlan], None]:
        """A fix that replaces ``node`` through ``edit`` (for ``report``)."""
        return lambda plan: plan.replace(node, edit)

    def findings(self) -> list[Finding]:
        self.resolve_hits()
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
            )
            for hit in self._hits
            if not hit.suppressed
        ]
        self._place(dict.fromkeys(self.plan.dropped_aliases))
        positions = self._positions
        removed_lines = {positions[a].start.line for a in self.plan.dropped_aliases if a in positions}
        fallback = fallback_codes(self.ruleset.rules)
        return _without_redundant_fallbacks(sorted(set(findings), key=Finding.sort_key), removed_lines, fallback)


def _without_redundant_fallbacks(findings: list[Finding], removed_lines: set, fallback: set) -> list[Finding]:
    """Fallback findings (a line that merely mentions CUDA) only where nothing else
    was said, and not on import lines that the rewrite removes."""
    specific_lines = {f.line for f in findings if f.code not in fallback} | removed_lines
    kept, fallback_lines = [], set()
    for finding in findings:
        if finding.code in fallback:
            if finding.line in specific_lines or finding.line in fallback_lines:
                continue
            fallback_lines.add(finding.line)
        kept.append(finding)
    return kept


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


class _ScopeEnter(cst.BatchableCSTVisitor):
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

    def visit_ClassDef(self, node) -> None:
        self.ctx.non_references.add(node.name)
        self._enter(node)

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

    def visit_For(self, node) -> None:
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

    def visit_Name(self, node) -> None:
        if node in self.ctx.non_references:
            return
        binding = self.ctx.scope.lookup(node.value)
        if isinstance(binding, ImportBinding):
            binding.uses += 1


class _ScopeExit(cst.BatchableCSTVisitor):
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

    def leave_ClassDef(self, node) -> None:
        self._leave(node)

    def leave_Expr(self, node) -> None:
        if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self.ctx.docstring_depth -= 1


class _NameCollector:
    def __init__(self) -> None:
        self.found: list[cst.Name] = []

    def visit_Name(self, name: cst.Name) -> None:
        self.found.append(name)


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    collector = _NameCollector()
    walk(node, [collector])
    return collector.found


def port_module(
    module: cst.Module, ruleset: RuleSet, apply: bool, source: bytes = b"", tree: Optional[ast.Module] = None
) -> FileContext:
    """Run every selected rule over a parsed module; edits are planned, not
    applied. ``tree``: the standard parser's tree of the same lines, if made."""
    ctx = FileContext(module, ruleset, apply)
    ctx.statement_starts = statement_starts(module, tree) if tree is not None else None
    ctx.suppressions = scan_suppressions(source, module.encoding) if source else None
    visitors: list[cst.BatchableCSTVisitor] = [_ScopeEnter(ctx)]
    for kind, rules in ruleset.by_kind():
        visitor = kind.visitor(rules, ctx)
        if visitor is not None:
            visitors.append(visitor)
    visitors.append(_ScopeExit(ctx))
    walk_module(module, visitors, lambda statement: setattr(ctx, "statement", statement))
    ctx.resolve_hits()
    # Kinds that judge the other rules' results (unused suppressions) go last.
    for kind, rules in sorted(ruleset.by_kind(), key=lambda pair: getattr(pair[0], "FINISH_LAST", False)):
        kind.finish(rules, ctx)
        ctx.resolve_hits()
    _drop_fully_rewritten_imports(ctx)
    return ctx


def _drop_fully_rewritten_imports(ctx: FileContext) -> None:
    # `from torch.cuda import synchronize as sync` is dead once every `sync`
    # became `torch.hpu.synchronize`; leaving it would keep CUDA text behind.
    # A top-level package (`import torch`) stays unless a rule owns it
    # (`import pynvml` once everything moved to pyhlml).
    owned = ctx.ruleset.removable_imports
    for binding in ctx.scopes.bindings:
        if binding.fully_rewritten and ("." in binding.target or binding.target in owned):
            ctx.plan.dropped_aliases.add(binding.alias)


# Whether `check` may stub out code no rule could act on before parsing
# (hpu_port.narrow); tests turn it off to compare.
NARROW = True
MAX_EXTRA_PASSES = 2
GENERATED_MARKER = b"@" + b"generated"  # spelled in two parts so this file is not marked
GENERATED_SCAN = 2048


def port_source(path: str, source: bytes, ruleset: RuleSet, apply: bool = True) -> FileResult:
    """Port one file's bytes. Never raises for bad input: errors become data.

    A fix can make another rule match (a fix added `import torch` to a file
    that used torch without importing it; `pin_memory=True` asks for a pinning
    device), so changed output is ported again, at most twice more, until
    nothing changes: a second run over the result is then a no-op.
    """
    with _cycle_collector_paused():
        return _port_until_stable(path, source, ruleset, apply)


def _port_until_stable(path: str, source: bytes, ruleset: RuleSet, apply: bool) -> FileResult:
    result = _port_once(path, source, ruleset, apply)
    current = result.new_source
    for _ in range(MAX_EXTRA_PASSES):
        if current is None or result.failed:
            break
        again = _port_once(path, current, ruleset, apply)
        if again.failed or again.new_source is None:
            break
        current = again.new_source
        result.new_source = current
        result.imports_changed = again.imports_changed
    return result


def _port_once(path: str, source: bytes, ruleset: RuleSet, apply: bool) -> FileResult:
    result = FileResult(path=path, source=source)
    rules = ruleset.for_source(source)
    if rules is None:
        return result
    if not ruleset.options.include_generated and GENERATED_MARKER in source[:GENERATED_SCAN]:
        return result  # generated code is regenerated, not edited
    limit = ruleset.options.max_file_size
    if len(source) > limit:
        result.error = (
            f"too large to port ({len(source) / 2**20:.1f} MiB > {limit / 2**20:.1f} MiB); "
            "raise --max-file-size if it is hand-written code"
        )
        return result
    view = code_view(source)
    rules = rules.for_code(source, view)
    if rules is None:
        return result
    module = _parse_what_rules_read(source, view, rules, apply, result)
    if module is None:
        return result
    ctx = port_module(module, rules, apply, source, view.tree if view is not None else None)
    result.findings = ctx.findings()
    result.imports_changed = bool(ctx.plan.new_imports or ctx.plan.dropped_aliases)
    if apply and ctx.plan:
        _apply(module, ctx.plan, source, result)
    return result


def _parse_what_rules_read(
    source: bytes, view: Optional[CodeView], rules: RuleSet, apply: bool, result: FileResult
) -> Optional[cst.Module]:
    """The file's libcst tree; when only reporting, with the code no rule
    could act on stubbed out (see hpu_port.narrow)."""
    narrowed = narrow(source, view, rules) if NARROW and not apply and view is not None else None
    if narrowed is not None:
        module = _parse(narrowed, result)
        if module is not None:
            return module
        result.error = None  # stubs of code that parses always parse; if not, parse it all
    return _parse(source, result)


def _parse(source: bytes, result: FileResult) -> Optional[cst.Module]:
    try:
        with _trusting_the_parser():
            module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        result.error = _describe_syntax_error(source, exc)
        return None
    except SyntaxError as exc:  # raised while reading the encoding declaration
        result.error = f"cannot decode: {_first_line(str(exc.msg or exc))}"
        return None
    except (UnicodeDecodeError, LookupError, ValueError) as exc:
        result.error = f"cannot decode: {_first_line(str(exc))}"
        return None
    except RecursionError:
        result.error = "too deeply nested to parse"
        return None
    result.encoding = module.encoding
    return module


@contextlib.contextmanager
def _cycle_collector_paused():
    # Syntax trees hold no reference cycles and are freed by reference
    # counting; while they are built, the cycle collector would only walk the
    # growing trees again and again (about a fifth of the parse time).
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _trusting_the_parser():
    # Every node checks its own fields when built; the parser only builds
    # valid nodes, and the checks cost about a sixth of the parse. Nodes that
    # fixes build are still checked.
    checked = CSTNode.__post_init__
    CSTNode.__post_init__ = _unchecked
    try:
        yield
    finally:
        CSTNode.__post_init__ = checked


def _unchecked(node: CSTNode) -> None:
    pass


def _apply(module: cst.Module, plan: EditPlan, source: bytes, result: FileResult) -> None:
    """Apply the plan; keep untouched bytes; refuse output that does not parse."""
    new_source = apply_plan(module, plan).bytes
    if new_source == source:
        return
    roundtrip = module.bytes
    if roundtrip != source:
        new_source = splice(source, roundtrip, new_source)
        if new_source is None:
            result.error = "cannot keep the bytes of the lines no rule changed (unusual line endings); nothing was written"
            return
    problem = _reparse_problem(new_source, source)
    if problem:
        codes = sorted({f.code for f in result.findings if f.applied})
        result.error = (
            f"internal error: rules {', '.join(codes)} produced code that does not "
            f"parse ({problem}); nothing was written"
        )
        return
    result.new_source = new_source


def _describe_syntax_error(source: bytes, exc: cst.ParserSyntaxError) -> str:
    """One line naming the place and the problem, as Python itself would put it."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as error:
        where = f"line {error.lineno}" + (f", column {error.offset}" if error.offset else "")
        return f"syntax error at {where}: {error.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    message = _first_line(exc.message)
    if len(message) > 120:
        message = message[:117] + "..."
    return f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {message}"


def _reparse_problem(new: bytes, old: bytes) -> Optional[str]:
    """Why ``new`` does not parse, or None. The stdlib parser is about ten times
    faster than libcst's; libcst decides only for code this Python cannot parse
    (syntax of a newer version)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(new)
            return None
        except SyntaxError as exc:
            stdlib_problem = f"line {exc.lineno}: {exc.msg}"
        except (ValueError, RecursionError, MemoryError):
            stdlib_problem = None
        try:
            ast.parse(old)
            if stdlib_problem:
                return stdlib_problem
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    try:
        cst.parse_module(new)
    except Exception as exc:  # any failure means: do not write this output
        return _first_line(str(exc))
    return None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text.strip()


def port_notebook(path: str, raw: bytes, ruleset: RuleSet, apply: bool = True) -> FileResult:
    """Port a Jupyter notebook's code cells; findings and changes name their cell."""
    import dataclasses

    from hpu_port import notebooks

    result = FileResult(path=path, source=raw)
    if ruleset.for_source(raw) is None:
        return result
    try:
        notebook = notebooks.load(raw)
    except ValueError as exc:
        result.error = str(exc)
        return result
    module_text = notebooks.to_module(notebook)
    ported = port_source(path, module_text.encode("utf-8"), ruleset, apply)

    def place(line: int) -> tuple[int, int]:
        number, within = notebooks.cell_of_line(module_text, line)
        return notebook.code_cells[number] + 1, within

    if ported.error:
        result.error = re.sub(r"line (\d+)", lambda m: "cell %d, line %d" % place(int(m.group(1))), ported.error)
        return result
    result.findings = []
    for finding in ported.findings:
        cell, line = place(finding.line)
        _, end_line = place(finding.end_line)
        result.findings.append(dataclasses.replace(finding, cell=cell, line=max(line, 1), end_line=max(end_line, 1)))
    if ported.new_source is not None:
        changed = notebooks.new_sources(notebook, ported.new_source.decode("utf-8"))
        if changed:
            old = {i: notebooks._cell_source(notebook.data["cells"][i]) for i in changed}
            result.new_source = notebooks.dumps(notebook, changed)
            result.cell_changes = {i + 1: (old[i], changed[i]) for i in changed}
    return result


def port_dependency_file(path: str, source: bytes, ruleset: RuleSet) -> FileResult:
    """Report the requirements of a `requirements*.txt` or `pyproject.toml`
    that the selected rules ask about; nothing is rewritten."""
    result = FileResult(path=path, source=source)
    try:
        text = source.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        result.error = f"cannot decode: {exc.reason} at byte {exc.start}"
        return result
    name = os.path.basename(path)
    lines = text.splitlines()
    for rule in ruleset.rules:
        kind = get_kind(rule.kind)
        if not getattr(kind, "READS_DEPENDENCY_FILES", False):
            continue
        for line, column, end, requirement in kind.scan_file(rule, name, text):
            if _ignored_on_line(lines[line - 1], rule.code):
                continue
            message = rule.message.format(name=requirement, file=name)
            result.findings.append(Finding(rule.code, message, line, column, line, end, category=rule.category))
    result.findings.sort(key=Finding.sort_key)
    return result


_REQUIREMENT_IGNORE = re.compile(r"#\s*hpu-port:\s*ignore(?:\[([^\]]*)\])?")


def _ignored_on_line(line: str, code: str) -> bool:
    """`# hpu-port: ignore` or `# hpu-port: ignore[CODE]` at the end of a requirements line."""
    match = _REQUIREMENT_IGNORE.search(line)
    return match is not None and (match.group(1) is None or code in {c.strip() for c in match.group(1).split(",")})
