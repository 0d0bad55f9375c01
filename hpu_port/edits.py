"""Edits collected during the match pass, and the one transformer that applies them.

Rules never change the tree while matching. They record edits keyed by the
original node; a single CSTTransformer applies them bottom-up. A node edit is a
function of the *updated* node, so edits on a parent see the edits already made
to its children. Statement-level edits (remove a statement, insert one after
another, add an import) are applied where the statements live, in the bodies of
modules and blocks, so that comments above a removed statement are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Union

import libcst as cst

from hpu_port.import_order import imports_torch, in_sorted_order, is_import_line, merged_from_imports, place_at, sorted_place
from hpu_port.lint_config import DEFAULT_STYLE, ImportStyle

NodeEdit = Callable[[cst.CSTNode], cst.CSTNode]


@dataclass
class EditPlan:
    node_edits: dict[cst.CSTNode, list[NodeEdit]] = field(default_factory=dict)
    removed_statements: set[cst.CSTNode] = field(default_factory=set)
    dropped_aliases: set[cst.ImportAlias] = field(default_factory=set)
    inserted_after: dict[cst.CSTNode, list[str]] = field(default_factory=dict)
    new_imports: list[str] = field(default_factory=list)
    # The file serves several devices: Gaudi's imports must not make it fail
    # to import where Gaudi's software is not installed.
    guard_imports: bool = False
    # The import order the project's ruff or isort configuration asks for.
    import_style: ImportStyle = DEFAULT_STYLE

    def replace(self, node: cst.CSTNode, edit: NodeEdit) -> None:
        self.node_edits.setdefault(node, []).append(edit)

    def remove_statement(self, small_statement: cst.BaseSmallStatement) -> None:
        self.removed_statements.add(small_statement)

    def insert_after(self, small_statement: cst.BaseSmallStatement, code: str) -> None:
        lines = self.inserted_after.setdefault(small_statement, [])
        if code not in lines:
            lines.append(code)

    def add_import(self, statement: str) -> None:
        if statement not in self.new_imports:
            self.new_imports.append(statement)

    def __bool__(self) -> bool:
        return bool(
            self.node_edits
            or self.removed_statements
            or self.dropped_aliases
            or self.inserted_after
            or self.new_imports
        )


def apply_plan(module: cst.Module, plan: EditPlan) -> cst.Module:
    return module.visit(_ApplyPlan(plan, module))


class _ApplyPlan(cst.CSTTransformer):
    def __init__(self, plan: EditPlan, module: cst.Module) -> None:
        super().__init__()
        self.plan = plan
        self.config = module.config_for_parsing
        # Statements to drop and to add after, keyed by the *updated* node:
        # containers only ever see updated nodes. Nodes hash by identity, and
        # holding them here keeps that identity from being reused.
        self._drop: set[cst.CSTNode] = set()
        self._after: dict[cst.CSTNode, list[str]] = {}

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        if isinstance(updated, cst.CSTNode):
            for edit in self.plan.node_edits.get(original, ()):
                updated = edit(updated)
            if original in self.plan.removed_statements:
                self._drop.add(updated)
            if original in self.plan.inserted_after:
                self._after[updated] = [self._guarded(code) for code in self.plan.inserted_after[original]]
        return updated

    def _guarded(self, code: str) -> str:
        """``code`` behind a test of the name it calls through, when that name
        comes from a Gaudi import this plan adds in a `try` block (it is None
        where Gaudi's software is missing)."""
        if not self.plan.guard_imports:
            return code
        for statement in self.plan.new_imports:
            if "habana_frameworks" in statement and " as " in statement:
                alias = statement.rsplit(" as ", 1)[1].strip()
                if code.startswith(f"{alias}."):
                    return behind_name_test(alias, code, self.config)
        return code

    # -- imports losing names --------------------------------------------------

    def leave_Import(self, original, updated):
        return self._drop_aliases(original, updated)

    def leave_ImportFrom(self, original, updated):
        if isinstance(updated.names, cst.ImportStar):
            return updated
        return self._drop_aliases(original, updated)

    def _drop_aliases(self, original, updated):
        kept = [
            new
            for old, new in zip(original.names, updated.names)
            if old not in self.plan.dropped_aliases
        ]
        if len(kept) == len(updated.names):
            return updated
        if not kept:
            self._drop.add(updated)
            return updated
        kept[-1] = kept[-1].with_changes(comma=updated.names[-1].comma)
        changes = {"names": kept}
        if isinstance(updated, cst.ImportFrom) and updated.lpar is not None and len(kept) == 1:
            changes["names"] = [kept[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        return updated.with_changes(**changes)

    # -- statement containers ----------------------------------------------------

    def leave_SimpleStatementLine(self, original, updated):
        if any(small in self._after for small in updated.body):
            return self._lines_with_insertions(updated)
        body = self._rebuild_small(updated.body)
        if not body:
            self._drop.add(updated)
            return updated
        return updated.with_changes(body=body)

    def _lines_with_insertions(self, line: cst.SimpleStatementLine):
        """One statement per line, each inserted statement on a line after its anchor.

        `loss.backward(); opt.step()` with insertions reads best split up; the
        comment at the end of the line stays with the last original statement.
        """
        kept = [small for small in line.body if small not in self._drop]
        lines = []
        for index, small in enumerate(kept):
            is_last = index == len(kept) - 1
            lines.append(
                cst.SimpleStatementLine(
                    body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)],
                    leading_lines=line.leading_lines if index == 0 else (),
                    trailing_whitespace=line.trailing_whitespace if is_last else cst.TrailingWhitespace(),
                )
            )
            for code in self._after.get(small, ()):
                lines.append(cst.parse_statement(code, config=self.config))
        if not lines:
            self._drop.add(line)
            return line
        return cst.FlattenSentinel(lines)

    def leave_SimpleStatementSuite(self, original, updated):
        body = self._rebuild_small(updated.body)
        if not body:
            body = [cst.Pass()]
        return updated.with_changes(body=body)

    def leave_IndentedBlock(self, original, updated):
        body = self._rebuild_statements(updated.body)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body)

    def leave_Module(self, original, updated):
        body = self._rebuild_statements(updated.body)
        if self.plan.new_imports:
            body = _insert_imports(body, self.plan.new_imports, self.config, self.plan.guard_imports, self.plan.import_style)
        return updated.with_changes(body=body)

    def _rebuild_small(self, statements):
        result = []
        for statement in statements:
            if statement in self._drop:
                continue
            result.append(statement)
            for code in self._after.get(statement, ()):
                result.append(cst.parse_statement(code, config=self.config).body[0])
        # Keep the line readable: the last small statement takes no trailing `;`.
        if result and result[-1].semicolon is not cst.MaybeSentinel.DEFAULT:
            if len(result) != len(statements):
                result[-1] = result[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return result

    def _rebuild_statements(self, statements):
        result = []
        carried: list[cst.EmptyLine] = []
        for statement in statements:
            if statement in self._drop:
                # The comments above a removed statement stay, above the next one.
                carried.extend(statement.leading_lines)
                continue
            if carried:
                lines = _merge_leading_lines(carried, list(statement.leading_lines), at_start=not result)
                statement = statement.with_changes(leading_lines=lines)
                carried = []
            result.append(statement)
        return result


def _merge_leading_lines(carried: list, own: list, at_start: bool) -> list:
    """Lines above removed statements joined to the next statement's own.

    Comments are kept; blank lines are not stacked on a statement that has its
    own, and a body does not start with a blank line it did not have.
    """
    if all(line.comment is None for line in carried) and own:
        carried = []
    lines = [*carried, *own]
    if at_start:
        while lines and lines[0].comment is None:
            lines.pop(0)
    return lines


def _insert_imports(body, imports: list[str], config, guarded: bool = False, style: ImportStyle = DEFAULT_STYLE) -> list:
    """Insert after the docstring, `__future__` imports and the leading import
    block; or, where torch is first imported further down (after code that
    must run before it: environment set-up, `import comet_ml`) and nothing
    above it uses CUDA, after the import block that holds it. Environment settings among the imports count
    as part of the block (they must come before Gaudi's modules load)."""
    index = 0
    if body and _is_docstring(body[0]):
        index = 1
    while index < len(body) and (is_import_line(body[index]) or _is_environment_line(body[index])):
        index += 1
    torch_at = next((i for i, s in enumerate(body) if is_import_line(s) and imports_torch(s)), None)
    first_use = _first_device_use(body, index, torch_at)
    if first_use is not None:
        # After the imports above that first use, the nearest to it.
        index = max((i + 1 for i in range(index, first_use) if is_import_line(body[i])), default=index)
    elif torch_at is not None and torch_at >= index:
        index = torch_at + 1
        while index < len(body) and is_import_line(body[index]):
            index += 1
    imports = _exempt_unused_gaudi_imports(merged_from_imports(imports), cst.Module(body=body).code)
    if not guarded:
        body, index, imports = _place_sorted(body, index, imports, config, style)
    new = [cst.parse_statement(code, config=config) for code in (_guarded(imports, config) if guarded else imports)]
    if guarded and new and 0 < index and is_import_line(body[index - 1]) and not is_import_line(new[0]):
        # A `try` block is code to isort: set apart from the imports above, as it sets imports apart from code.
        new[0] = new[0].with_changes(leading_lines=[cst.EmptyLine()])
    rest = body[index:]
    if new and rest and not is_import_line(rest[0]) and not rest[0].leading_lines:
        # Set the new imports apart from the code that follows, as an import block is.
        rest = [rest[0].with_changes(leading_lines=[cst.EmptyLine()]), *rest[1:]]
    return [*body[:index], *new, *rest]


def _place_sorted(body: list, index: int, imports: list[str], config, style: ImportStyle) -> tuple[list, int, list[str]]:
    """Put each import that has a place in the module's sorted imports there
    (isort's order, see ``import_order``); the others are left to go at
    ``index``, in that order among themselves."""
    left = []
    for code in in_sorted_order(imports):
        place = sorted_place(body, index, code, style)
        if place is None:
            left.append(code)
            continue
        body = place_at(body, place, [cst.parse_statement(code, config=config)])
        index += 1
    return body, index, left


# What ruff and flake8 read as "this import is meant to be unused".
UNUSED_IMPORT_EXEMPTION = "  # noqa: F401"


def _exempt_unused_gaudi_imports(imports: list[str], code: str) -> list[str]:
    """Gaudi's imports whose names nothing in ``code`` reads, marked as kept
    on purpose: importing Gaudi's modules registers the HPU device and its
    collectives, and `ruff check --fix` (F401) would otherwise delete them."""
    return [
        statement + UNUSED_IMPORT_EXEMPTION
        if "habana_frameworks" in statement and "#" not in statement and not _names_read(_bound_names(statement), code)
        else statement
        for statement in imports
    ]


def _bound_names(statement: str) -> list[str]:
    """What an `import` statement written as one line binds, as it is read back
    (`htcore`; `habana_frameworks.torch.distributed.hccl` for a plain import)."""
    if statement.startswith("from "):
        names = statement.split(" import ", 1)[1].strip("() ")
        return [part.rsplit(" as ", 1)[-1].strip() for part in names.split(",") if part.strip()]
    return [part.rsplit(" as ", 1)[-1].strip() for part in statement[len("import "):].split(",")]


def _names_read(names: list[str], code: str) -> bool:
    """Whether ``code`` reads every one of ``names``."""
    return all(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code) for name in names)


_NAMES_A_DEVICE = re.compile(r"(?<![\w-])(cuda|hpu)(?![\w-])")


def _first_device_use(body, start: int, torch_at) -> "int | None":
    """Where code before torch's import already uses a device (a notebook's
    `model = build().cuda()` above the cell that imports torch, by now
    perhaps ported to the HPU): the HPU must be registered before it."""
    if torch_at is None or torch_at < start:
        return None
    empty = cst.Module(body=[])
    return next((i for i in range(start, torch_at) if _NAMES_A_DEVICE.search(empty.code_for_node(body[i]))), None)


def behind_name_test(name: str, code: str, config) -> str:
    """``code`` run only where ``name`` is not None, over two lines in the
    file's own indentation: `if x: call()` on one line is E701 to linters."""
    newline = config.default_newline
    return f"if {name} is not None:{newline}{config.default_indent}{code}{newline}"


def _guarded(imports: list[str], config) -> list[str]:
    """Gaudi's imports in a `try` block, the others as they are. Without
    Gaudi's software, the names they bind are None (what the fixes test
    before they use one: `if htcore is not None: htcore.mark_step()`)."""
    gaudi = [code for code in imports if "habana_frameworks" in code]
    if not gaudi:
        return imports
    newline, indent = config.default_newline, config.default_indent
    bound = [code.split("#", 1)[0].rsplit(" as ", 1)[1].strip() for code in gaudi if " as " in code]
    fallback = "".join(f"{indent}{name} = None{newline}" for name in bound) or f"{indent}pass{newline}"
    block = (
        f"try:{newline}"
        + "".join(f"{indent}{code}{newline}" for code in gaudi)
        + f"except ImportError:  # Gaudi's software is optional: this module imports without it{newline}"
        + fallback
    )
    return [code for code in imports if code not in gaudi] + [block]


def _is_environment_line(statement) -> bool:
    """`os.environ[...] = ...` or `os.environ.setdefault(...)` on a line of its own."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        return isinstance(target, cst.Subscript) and _ends_with_environ(target.value)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        return isinstance(func, cst.Attribute) and func.attr.value in ("setdefault", "update") and _ends_with_environ(func.value)
    return False


def _ends_with_environ(expr) -> bool:
    return (isinstance(expr, cst.Attribute) and expr.attr.value == "environ") or (
        isinstance(expr, cst.Name) and expr.value == "environ"
    )


def _is_docstring(statement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def replace_expression(new_code: str) -> NodeEdit:
    """An edit that puts ``new_code`` in place of an expression, keeping its parentheses."""

    def edit(updated: Union[cst.BaseExpression, cst.CSTNode]) -> cst.CSTNode:
        new = cst.parse_expression(new_code)
        return new.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    return edit
