"""The per-file core: one pure function from (path, bytes, rule set) to a FileResult.

One parse, one statement walk for scopes and imports, one batched visit in
which every rule kind records findings and edits, one apply pass, one re-parse
of the output. No printing and no disk access happen here.
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import dataclasses
import gc
import os
import re
from functools import lru_cache
from typing import Optional

import libcst as cst
from libcst import CSTNode

from hpu_port import deep_stack, filetypes
from hpu_port.branches import may_choose_among_devices, names_the_hpu_in
from hpu_port.context import FileContext, PortedSnippet, ScopeEnter, ScopeExit
from hpu_port.edits import UNUSED_IMPORT_EXEMPTION, EditPlan, apply_plan
from hpu_port.files import text_problem
from hpu_port.device.evidence import of_options
from hpu_port.device.probes import probed_in
from hpu_port.frameworks import foreign_framework
from hpu_port.kinds import fallback_codes
from hpu_port.narrow import narrow_units
from hpu_port.nesting import python_nesting_problem
from hpu_port.parse_problems import describe_syntax_error, first_text_line, reparse_problem
from hpu_port.positions import statement_starts
from hpu_port.results import FileResult, Finding
from hpu_port.settings import RuleSet
from hpu_port.splice import line_map, splice
from hpu_port.suppressions import scan as scan_suppressions
from hpu_port.triggers import CodeView, code_view
from hpu_port.visitors._references import forget_written
from hpu_port.walk import walk_module


def port_bytes(path: str, source: bytes, ruleset: RuleSet, apply: bool, ahead: Optional["ParsedAhead"] = None) -> FileResult:
    """Port one file's bytes with the parser its type needs, on a stack deep
    enough for deeply nested code; bytes that are not text and exceptions
    become a result with an error. ``ahead``: what ``parse_ahead`` made of
    the same file, bytes and rule set."""
    return deep_stack.call(_port_bytes, path, source, ruleset, apply, ahead)


def _port_bytes(path: str, source: bytes, ruleset: RuleSet, apply: bool, ahead: Optional["ParsedAhead"] = None) -> FileResult:
    file_type = filetypes.detect(path, source[: filetypes.HEAD_SIZE]) or filetypes.PYTHON
    wide = _wide_encoding(source) if file_type in WIDE_TYPES else None
    if wide is not None:
        return _port_wide(path, source, ruleset, apply, *wide)
    problem = text_problem(source, file_type)
    if problem is not None:
        return FileResult(path=path, source=source, error=problem)
    try:
        if file_type == filetypes.NOTEBOOK:
            return port_notebook(path, source, ruleset, apply)
        if file_type != filetypes.PYTHON:
            from hpu_port.documents import port_document  # other file types' parsers: only when such a file comes

            return port_document(path, source, ruleset, apply, file_type)
        if filetypes.is_build_script(path):
            return port_source(path, source, ruleset.reporting_only(), apply)
        return port_source(path, source, ruleset, apply, ahead)
    except RecursionError:
        return FileResult(path=path, source=source, error="too deeply nested to process")
    except Exception as exc:  # one odd file must never stop the run
        return FileResult(path=path, source=source, error=f"internal error: {type(exc).__name__}: {exc}")


def port_module(
    module: cst.Module,
    ruleset: RuleSet,
    apply: bool,
    source: bytes = b"",
    tree: Optional[ast.Module] = None,
    path: str = "",
    selected: Optional[frozenset] = None,
    origin: Optional[bytes] = None,
    single_device: bool = False,
    code: Optional[bytes] = None,
) -> FileContext:
    """Run the rules over a parsed module; edits are planned, not applied.
    ``tree``: the standard parser's tree of the same lines, if made.
    ``selected``: the codes that report and fix (None: all of ``ruleset``);
    the others walk too, for what they tell the device analysis.
    ``origin``: the file as read, when ``module`` is an earlier pass's output.
    ``single_device``: port ``module`` as code for one CUDA device, whatever
    the file or the project serves (an HPU arm made from a CUDA arm).
    ``code``: ``source`` with comments and docstrings blanked out, if made."""
    ctx = FileContext(module, ruleset.options, apply)
    ctx.origin = origin
    ctx.selected = selected
    ctx.facts = ruleset.facts
    ctx.path = path
    ctx.source = source
    if source:
        ctx.branches.hpu_named = names_the_hpu_in(source)
        ctx.branches.choice_possible = may_choose_among_devices(source, ctx.branches.other_devices)
    ctx.tree = tree
    ctx.statement_starts = statement_starts(module, tree) if tree is not None else None
    ctx.suppressions = scan_suppressions(source, module.encoding) if source else None
    ctx.gaudi_optional = _library_module(path, module, ruleset.facts)
    # Only the file as read tells what it serves (a later pass reads the
    # port's own output, whose HPU arms are not the project's).
    served, served_code = (origin, None) if origin is not None else (source, code)
    probes_others = bool(served) and probed_in(served, ctx.branches.other_devices, served_code)
    # A file that chooses among devices runs on each of them, script or
    # module: its Gaudi imports must not fail where Gaudi's software is
    # missing, and the code it shares among devices stays theirs (reported,
    # not converted). A package's module also runs for every device its
    # package serves, and so does a test of such a package.
    several = probes_others or ruleset.facts.shared_among_devices(path)
    ctx.gaudi_optional = ctx.gaudi_optional or (several and not single_device)
    shared = ctx.gaudi_optional and several
    shared = shared and not ruleset.options.port_shared_code
    ctx.branches.serves_several = not single_device and shared
    # The HPU arm is whatever every rule makes of the CUDA arm, whichever are selected.
    ctx.port_snippet = lambda code: _port_snippet(module, code, ruleset, path)
    visitors: list[cst.BatchableCSTVisitor] = [ScopeEnter(ctx)]
    for kind, rules in ruleset.by_kind():
        if selected is not None:
            # Where two rules match the same code (a project's rule beside a
            # bundled one), the one the user selected answers first.
            rules = sorted(rules, key=lambda rule: rule.code not in selected)
        visitors.extend(kind.visitors(rules, ctx))
    visitors.append(ScopeExit(ctx))
    walk_module(module, visitors, lambda statement: setattr(ctx, "statement", statement))
    ctx.resolve_hits()
    # Kinds that judge the other rules' results (unused suppressions) go last.
    for kind, rules in sorted(ruleset.by_kind(), key=lambda pair: getattr(pair[0], "FINISH_LAST", False)):
        kind.finish(rules, ctx)
        ctx.resolve_hits()
    _drop_fully_rewritten_imports(ctx, ruleset)
    if ctx.gaudi_optional:
        ctx.plan.guard_imports = True
    return ctx


def _library_module(path: str, module: cst.Module, facts) -> bool:
    """A module of a package (a demonstration under its `__main__` test
    included, and a module in a folder without `__init__.py` under one):
    others import it, on machines with and without Gaudi's software, so its
    Gaudi imports must not fail there (a script outside any package, and a
    package's `__main__.py`, keep the plain import)."""
    if not path or os.path.basename(path) == "__main__.py":
        return False
    # Through a folder or two without `__init__.py` (a namespace package,
    # `modules/cnet_modules/face_id/arcface.py` imported as `.cnet_modules.face_id.arcface`).
    folder = os.path.dirname(os.path.abspath(path))
    return any(candidate in facts.packages for candidate in (folder, os.path.dirname(folder), os.path.dirname(os.path.dirname(folder))))


@lru_cache(maxsize=2)  # a file's arms are ported one after another; modules are keys by identity
def _imports_of(module: cst.Module) -> str:
    return "".join(module.code_for_node(s) for s in module.body if _only_imports(s))


def _port_snippet(module: cst.Module, code: str, ruleset: RuleSet, path: str) -> PortedSnippet:
    """Port ``code`` as a file of its own that imports what ``module`` imports."""
    head = _imports_of(module)
    text = f"{head}\n{code}" if head else code
    try:
        snippet = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return PortedSnippet(None, [], "")
    # The arm is ported as single-device CUDA code, whatever the file serves.
    ctx = port_module(snippet, ruleset, True, text.encode("utf-8"), None, path, single_device=True)
    fallback = fallback_codes(ruleset.rules)
    findings = ctx.findings(fallback)
    missing = next((f.message for f in findings if f.needs_person and not f.advice and f.code not in fallback), "")
    missing = missing.split(" (not rewritten: ")[0]
    ported = apply_plan(snippet, ctx.plan)
    # Whether the file reads an import's names is decided where it is inserted.
    added = [
        ported.code_for_node(s).strip().removesuffix(UNUSED_IMPORT_EXEMPTION.strip()).rstrip()
        for s in ported.body
        if _only_imports(s) and "habana_frameworks" in ported.code_for_node(s) and ported.code_for_node(s) not in head
    ]
    return PortedSnippet(ported, added, missing)


def _only_imports(statement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _drop_fully_rewritten_imports(ctx: FileContext, ruleset: RuleSet) -> None:
    # `from torch.cuda import synchronize as sync` is dead once every `sync`
    # became `torch.hpu.synchronize`; leaving it would keep CUDA text behind.
    # A top-level package (`import torch`) stays unless a rule owns it
    # (`import pynvml` once everything moved to pyhlml).
    owned = ruleset.removable_imports
    for binding in ctx.scopes.bindings:
        if binding.fully_rewritten and ("." in binding.target or binding.target in owned):
            ctx.plan.dropped_aliases.add(binding.alias)


# Whether `check` may stub out code no rule could act on before parsing
# (hpu_port.narrow), and `rewrite` parse whole only the files whose rules
# planned an edit on that narrower parse; tests turn it off to compare.
NARROW = True
MAX_EXTRA_PASSES = 2
GENERATED_MARKER = b"@" + b"generated"  # spelled in two parts so this file is not marked
GENERATED_SCAN = 2048


# JSON and YAML may be written in UTF-16 or UTF-32 with a byte order mark:
# their specifications allow it, and Python's json and PyYAML read it. Such a
# file is ported as UTF-8 and written back in its own encoding.
WIDE_TYPES = (filetypes.JSON, filetypes.YAML)
_WIDE_BOMS = (  # UTF-32's little-endian mark starts like UTF-16's: it is tried first
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
)


def _wide_encoding(source: bytes) -> Optional[tuple]:
    """(mark, codec, name) of a UTF-16 or UTF-32 file, by its byte order mark."""
    return next((entry for entry in _WIDE_BOMS if source.startswith(entry[0])), None)


def _port_wide(path: str, source: bytes, ruleset: RuleSet, apply: bool, mark: bytes, codec: str, name: str) -> FileResult:
    try:
        text = source[len(mark):].decode(codec)
    except UnicodeDecodeError as exc:
        return FileResult(path=path, source=source, error=f"cannot decode as {name}: {exc.reason} (byte {exc.start + len(mark)})")
    result = _port_bytes(path, text.encode("utf-8", "surrogatepass"), ruleset, apply)
    result.source, result.encoding = source, name
    if result.new_source is not None:
        result.new_source = mark + result.new_source.decode("utf-8", "surrogatepass").encode(codec, "surrogatepass")
    return result


def port_source(path: str, source: bytes, ruleset: RuleSet, apply: bool = True, ahead: Optional["ParsedAhead"] = None) -> FileResult:
    """Port one file's bytes. Never raises for bad input: errors become data.

    A fix can make another rule match (a fix added `import torch` to a file
    that used torch without importing it; `pin_memory=True` asks for a pinning
    device), so changed output is ported again, at most twice more, until
    nothing changes: a second run over the result is then a no-op.
    """
    with _cycle_collector_paused():
        return _port_until_stable(path, source, ruleset.python_rules, apply, ahead)


def _port_until_stable(path: str, source: bytes, ruleset: RuleSet, apply: bool, ahead: Optional["ParsedAhead"] = None) -> FileResult:
    result = _port_parsing_less(path, source, ruleset, apply, parsed=ahead)
    current = result.new_source
    for _ in range(MAX_EXTRA_PASSES):
        if current is None or result.failed:
            break
        again = _port_parsing_less(path, current, ruleset, apply, origin=source)
        if again.failed:
            break
        if again.new_source is None:
            # What is left to do is what this last pass found in the output.
            _place_in_output(result, again.findings, current)
            break
        current = again.new_source
        result.new_source = current
        result.imports_changed = again.imports_changed
    _judge_output(result, source, ruleset)
    return result


def _port_parsing_less(
    path: str, source: bytes, ruleset: RuleSet, apply: bool, origin: Optional[bytes] = None, parsed: Optional[ParsedAhead] = None
) -> FileResult:
    """``_port_once``; when rewriting, first as `check` ports (on the code
    rules could act on): most files a rewrite reads, and most second passes
    over a rewrite's output, need no change, and then that is the result.
    Only a file with an edit to apply is parsed whole and printed back.
    ``parsed``: the narrower screen and parse, if already made."""
    if apply and NARROW:
        probe, planned = _port_once_planned(path, source, ruleset, False, origin, parsed)
        if not planned and not probe.failed:
            return probe
        parsed = None
    return _port_once(path, source, ruleset, apply, origin, parsed)


def _judge_output(result: FileResult, source: bytes, ruleset: RuleSet) -> None:
    """Add what the kinds that judge a rewrite's output find in it (names it
    left unused), unless a suppression comment on the line says otherwise."""
    if result.new_source is None or result.failed:
        return
    found = [f for kind, rules in ruleset.by_kind() for f in kind.judge_output(rules, source, result.new_source)]
    suppressions = scan_suppressions(source, result.encoding or "utf-8") if found else None
    found = [f for f in found if suppressions is None or not suppressions.suppresses(f.code, f.line, f.end_line)]
    if not found:
        return
    result.findings = sorted([*result.findings, *found], key=Finding.sort_key)
    if result.output_findings is not None:
        new_line = line_map(source, result.new_source)
        moved = [dataclasses.replace(f, line=new_line(f.line), end_line=new_line(f.end_line)) for f in found]
        result.output_findings = sorted([*result.output_findings, *moved], key=Finding.sort_key)


def _place_in_output(result: FileResult, remaining: list[Finding], output: bytes) -> None:
    """The findings of a rewritten file at their lines in the new file: what
    the rewrite fixed, at the lines that replaced it; the rest as found there."""
    new_line = line_map(result.source, output)
    fixed = [dataclasses.replace(f, line=new_line(f.line), end_line=new_line(f.end_line)) for f in result.findings if f.applied]
    result.output_findings = sorted({*fixed, *remaining}, key=Finding.sort_key)


@dataclasses.dataclass
class ParsedAhead:
    """A first pass's screen and parse of a Python file (see ``parse_ahead``):
    its result so far, and when the rules need it, its tree, the standard
    parser's view of it and the rules that could act on it."""

    result: FileResult
    module: Optional[cst.Module] = None
    view: Optional[CodeView] = None
    rules: Optional[RuleSet] = None


def parse_ahead(path: str, source: bytes, ruleset: RuleSet, apply: bool) -> Optional[ParsedAhead]:
    """The screen and parse that porting the Python file ``path`` begins
    with, none of which reads the project facts: done while they are still
    being found, it leaves the port only what needs them. None for a file
    of another type or one this cannot tell (its port then does it all)."""
    file_type = filetypes.detect(path, source[: filetypes.HEAD_SIZE]) or filetypes.PYTHON
    if file_type != filetypes.PYTHON or filetypes.is_build_script(path) or text_problem(source, file_type) is not None:
        return None
    try:
        with _cycle_collector_paused():
            # A rewrite begins as `check` does (see ``_port_until_stable``).
            return deep_stack.call(_screen_and_parse, path, source, ruleset.python_rules, apply and not NARROW)
    except Exception:  # the port does it again, and says what went wrong
        return None


def _port_once(
    path: str, source: bytes, ruleset: RuleSet, apply: bool, origin: Optional[bytes] = None, parsed: Optional[ParsedAhead] = None
) -> FileResult:
    """One pass; ``origin``: the file as read, when this pass reads an earlier
    pass's output (which is never evidence of what the code was written for);
    ``parsed``: this pass's screen and parse, if already made."""
    return _port_once_planned(path, source, ruleset, apply, origin, parsed)[0]


def _port_once_planned(
    path: str, source: bytes, ruleset: RuleSet, apply: bool, origin: Optional[bytes] = None, parsed: Optional[ParsedAhead] = None
) -> tuple[FileResult, bool]:
    """``_port_once``'s result, and whether its rules planned any edit
    (`check` plans them too, without applying them)."""
    parsed = parsed or _screen_and_parse(path, source, ruleset, apply)
    result, module, view, rules = parsed.result, parsed.module, parsed.view, parsed.rules
    if module is None:
        return result, False
    forget_written()  # what an interrupted port left
    ctx = port_module(
        module, rules, apply, source, view.tree if view is not None else None, path, ruleset.selected_codes, origin,
        code=view.text if view is not None else None,
    )
    result.findings = ctx.findings(fallback_codes(rules.rules))
    result.regions = ctx.regions
    result.imports_changed = bool(ctx.plan.new_imports or ctx.plan.dropped_aliases)
    planned = bool(ctx.plan) or any(f.fixable for f in result.findings)
    if apply and ctx.plan:
        _apply(module, ctx.plan, source, result)
    ctx.release()
    forget_written()
    return result, planned


def _screen_and_parse(path: str, source: bytes, ruleset: RuleSet, apply: bool) -> ParsedAhead:
    """The rules that could act on ``source`` and its tree; without a tree,
    the result says why none is needed (or what stopped the parse)."""
    result = FileResult(path=path, source=source)
    # Every rule walks, selected or not, so a file is screened for all of them:
    # a selected rule can report what another one's analysis holds (HPU615).
    ruleset = ruleset.walked
    rules = ruleset.for_source(source)
    if rules is None:
        return ParsedAhead(result)
    if not ruleset.options.include_generated and GENERATED_MARKER in source[:GENERATED_SCAN]:
        return ParsedAhead(result)  # generated code is regenerated, not edited
    if foreign_framework(source, of_options(ruleset.options)) is not None:
        return ParsedAhead(result)  # TensorFlow, JAX, PyTorch/XLA...: not PyTorch CUDA code
    limit = ruleset.options.max_file_size
    if len(source) > limit:
        result.error = (
            f"too large to port ({len(source) / 2**20:.1f} MiB > {limit / 2**20:.1f} MiB); "
            "raise --max-file-size if it is hand-written code"
        )
        return ParsedAhead(result)
    view = code_view(source)
    rules = rules.for_code(source, view)
    if rules is None:
        return ParsedAhead(result)
    narrowed, stubbed = narrow_units(source, view, rules) if NARROW and not apply and view is not None else (None, frozenset())
    # Only the code libcst is given is measured: a stubbed unit's is not.
    result.error = python_nesting_problem(source, view.tree if view is not None else None, stubbed)
    if result.error is not None:
        return ParsedAhead(result)  # libcst would take minutes and gigabytes, or never finish
    return ParsedAhead(result, _parse_what_rules_read(source, narrowed, view, result), view, rules)


def _parse_what_rules_read(source: bytes, narrowed: Optional[bytes], view: Optional[CodeView], result: FileResult) -> Optional[cst.Module]:
    """The file's libcst tree; when only reporting, of ``narrowed``: the
    source with the code no rule could act on stubbed out (see hpu_port.narrow)."""
    if narrowed is not None:
        module = _parse(narrowed, result)
        if module is not None:
            return module
        # Stubs of code that parses always parse; if not, parse it all, once
        # all of it was measured.
        result.error = python_nesting_problem(source, view.tree if view is not None else None)
        if result.error is not None:
            return None
    return _parse(source, result)


def _parse(source: bytes, result: FileResult) -> Optional[cst.Module]:
    try:
        with _trusting_the_parser():
            module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        result.error = describe_syntax_error(source, exc)
        return None
    except SyntaxError as exc:  # raised while reading the encoding declaration
        result.error = f"cannot decode: {first_text_line(str(exc.msg or exc))}"
        return None
    except (UnicodeDecodeError, LookupError, ValueError) as exc:
        result.error = f"cannot decode: {first_text_line(str(exc))}"
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
    if module.default_newline == "\r" and b"\n" in source:
        # Lines the rules add end like the file's first line; a lone CR
        # followed by a kept empty LF line would read as one CRLF line. A
        # CRLF joins nothing (the kept lines get their own ends back below).
        module = module.with_changes(default_newline="\r\n")
    new_source = apply_plan(module, plan).bytes
    if new_source == source:
        return
    roundtrip = module.bytes
    if roundtrip != source:
        new_source = splice(source, roundtrip, new_source)
        if new_source is None:
            result.error = "cannot keep the bytes of the lines no rule changed (unusual line endings); nothing was written"
            return
    problem = reparse_problem(new_source, source)
    if problem:
        codes = sorted({f.code for f in result.findings if f.applied})
        result.error = (
            f"internal error: rules {', '.join(codes)} produced code that does not "
            f"parse ({problem}); nothing was written"
        )
        return
    result.new_source = new_source


def port_notebook(path: str, raw: bytes, ruleset: RuleSet, apply: bool = True) -> FileResult:
    """Port a Jupyter notebook: its shell lines and cells as shell, its code
    cells as Python; findings and changes name their cell."""
    from hpu_port import notebooks
    from hpu_port.documents import could_match, document_rules

    result = FileResult(path=path, source=raw)
    # The JSON's lines are not the code's: only its words are screened here,
    # the code itself by the port.
    python_rules = ruleset.python_rules.for_source(raw, shapes=False)
    shell_rules = document_rules(ruleset, filetypes.NOTEBOOK)
    if python_rules is None and not (shell_rules and could_match(shell_rules, raw.decode("utf-8", "replace"))):
        return result  # nothing any rule could act on: not even loaded
    try:
        notebook = notebooks.load(raw)
    except ValueError as exc:
        result.error = str(exc)
        return result
    module_text = notebooks.to_module(notebook)
    ported = FileResult(path=path)
    if python_rules is not None:
        ported = port_source(path, module_text.encode("utf-8"), ruleset, apply)
        notebook, module_text, ported = _without_unreadable_cells(path, raw, ruleset, apply, notebook, module_text, ported)
    shell_findings, shell_cells = [], {}
    # A notebook kept whole for NVIDIA (it drives TensorRT) keeps its shell
    # lines too: its one finding says so, for `check` as for `rewrite`.
    if not _kept_whole(ported, module_text):
        shell_findings, shell_cells = _port_notebook_shell(path, notebook, ruleset, apply, result)
        if not result.error:
            written_findings, written_cells = _port_written_files(notebook, ruleset, apply, result)
            shell_findings += written_findings
            shell_cells.update(written_cells)
    if result.error:
        return result

    def place(line: int, text: str = module_text) -> tuple[int, int]:
        number, within = notebooks.cell_of_line(notebook, text, line)
        return notebook.code_cells[number] + 1, within

    def in_cells(findings: list[Finding], text: str = module_text) -> list[Finding]:
        placed = []
        for finding in findings:
            cell, line = place(finding.line, text)
            _, end_line = place(finding.end_line, text)
            unit_line = None
            if finding.kept_unit_line is not None:
                unit_cell, unit_line = place(finding.kept_unit_line, text)
                # A unit in another cell is no line of this one.
                unit_line = max(unit_line, 1) if unit_cell == cell else None
            placed.append(
                dataclasses.replace(
                    finding, cell=cell, line=max(line, 1), end_line=max(end_line, 1), kept_unit_line=unit_line
                )
            )
        return placed

    if ported.error:
        result.error = re.sub(r"line (\d+)", lambda m: "cell %d, line %d" % place(int(m.group(1))), ported.error)
        return result
    result.findings = sorted(in_cells(ported.findings) + shell_findings, key=Finding.sort_key)
    if ported.output_findings is not None:
        placed = in_cells(ported.output_findings, ported.new_source.decode("utf-8"))
        result.output_findings = sorted(placed + shell_findings, key=Finding.sort_key)
    final_module = ported.new_source.decode("utf-8") if ported.new_source is not None else module_text
    changed = {**notebooks.new_sources(notebook, final_module), **shell_cells}
    if changed:
        old = {i: notebooks._cell_source(notebook.data["cells"][i]) for i in changed}
        result.new_source = notebooks.dumps(notebook, changed)
        result.cell_changes = {i + 1: (old[i], changed[i]) for i in changed}
    return result


# Jupyter runs each cell on its own, so a cell that is not Python (shell
# commands pasted without `!`, code for another Python) fails alone: the
# others are ported, and it is left as it is (an unread part, HPU870).
def _without_unreadable_cells(path, raw, ruleset, apply, notebook, module_text, ported):
    """When the cells do not parse as one module, port again without the
    cells that the parser cannot read on their own."""
    from hpu_port import notebooks

    error = ported.error or ""
    if not (error.startswith("syntax error") or "cannot read" in error):
        return notebook, module_text, ported
    unreadable = {number for number, lines in notebook.masked.items() if not _parses("".join(c + "\n" for c, _ in lines))}
    if not unreadable:
        return notebook, module_text, ported  # the cells only fail together: the error stands
    notebook = notebooks.load(raw)
    notebook.skipped.update(unreadable)
    module_text = notebooks.to_module(notebook)
    return notebook, module_text, port_source(path, module_text.encode("utf-8"), ruleset, apply)


def _parses(code: str) -> bool:
    try:
        cst.parse_module(code)
    except Exception:  # any failure: this parser cannot read the cell
        return False
    return True


def _kept_whole(ported: FileResult, text: str) -> bool:
    """Whether the port kept every line of ``text`` as it is, for another device or NVIDIA."""
    lines = text.count("\n") + 1
    return any(action == "keep" and first <= 1 and last >= lines - 1 for action, first, last in ported.regions)


def _port_written_files(notebook, ruleset: RuleSet, apply: bool, result: FileResult) -> tuple[list, dict]:
    """Port the body of each `%%writefile train.py` cell as the file it writes."""
    from hpu_port import notebooks
    from hpu_port.formats import notebook as notebook_shell

    findings, cells = [], {}
    for number in sorted(notebook.skipped):
        source = notebook.cell_source(number)
        name = notebook_shell.written(source)
        if name is None:
            continue
        first, body = notebooks.split_first_line(source)  # the first line with its line end
        index = notebook.code_cells[number]
        ported = port_bytes(name, body.encode("utf-8"), ruleset, apply)
        if ported.error:
            where = re.sub(r"line (\d+)", lambda m: "line %d" % (int(m.group(1)) + 1), ported.error)
            result.error = f"cell {index + 1} (%%writefile {name}): {where}"
            return [], {}
        placed = ported.findings
        findings += [
            dataclasses.replace(
                f, cell=index + 1, line=f.line + 1, end_line=f.end_line + 1,
                kept_unit_line=None if f.kept_unit_line is None else f.kept_unit_line + 1,
            )
            for f in placed
        ]
        if ported.new_source is not None:
            cells[index] = first + ported.new_source.decode("utf-8")
    return findings, cells


def _port_notebook_shell(path: str, notebook, ruleset: RuleSet, apply: bool, result: FileResult) -> tuple[list, dict]:
    """Port the shell lines and cells of a notebook (``hpu_port.formats.notebook``).
    The new masked lines go back into ``notebook.magics`` (the Python port
    restores them); returns the findings, placed in their cells, and the new
    sources of the whole cells that changed (cell index -> source)."""
    from hpu_port.documents import port_document
    from hpu_port.formats import notebook as notebook_shell

    text, units = notebook_shell.join(notebook)
    if not units:
        return [], {}
    shell = port_document(path, text.encode("utf-8"), ruleset, apply, filetypes.NOTEBOOK)
    if shell.error:
        result.error = shell.error
        return [], {}
    findings = []
    for finding in shell.findings:
        cell, line = notebook_shell.place(text, units, finding.line)
        _, end_line = notebook_shell.place(text, units, finding.end_line)
        findings.append(dataclasses.replace(finding, cell=notebook.code_cells[cell] + 1, line=line, end_line=end_line))
    cells = {}
    if shell.new_source is not None:
        new_texts = notebook_shell.split(shell.new_source.decode("utf-8"))
        if len(new_texts) != len(units):
            result.error = "internal error: the notebook's shell lines could not be put back; nothing was written"
            return [], {}
        for unit, new in zip(units, new_texts):
            if unit.key is not None and unit.more:
                lines = new.split("\n")
                if len(lines) != 1 + len(unit.more):
                    result.error = "internal error: a continued shell line of the notebook changed its line count; nothing was written"
                    return [], {}
                for key, line in zip((unit.key, *unit.more), lines):
                    notebook.magics[key] = line
            elif unit.key is not None:
                notebook.magics[unit.key] = new
            elif new + ("\n" if unit.trailing_newline else "") != notebook.cell_source(unit.cell):
                cells[notebook.code_cells[unit.cell]] = new + ("\n" if unit.trailing_newline else "")
    return findings, cells
