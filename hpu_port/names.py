"""A light, flow-insensitive model of scopes and import bindings.

libcst's QualifiedNameProvider needs full scope analysis, which costs several
parses per file. hpu-port only needs to know which imported module or object a
dotted name refers to, and whether a local name shadows it, so this module walks
statements once and records, per scope, the names bound by imports and the names
bound locally (parameters, assignments, loop targets, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

import libcst as cst


@dataclass(eq=False)
class ImportBinding:
    """A name bound by an import: ``import torch.cuda as tc`` binds tc -> torch.cuda."""

    name: str
    target: str
    statement: Union[cst.Import, cst.ImportFrom]
    alias: cst.ImportAlias
    module_path: str = ""
    uses: int = 0
    rewritten: int = 0
    reused: bool = False
    # Imported under a condition (try, if, with, a loop) or inside a function
    # or class: an import that replaces it must not become unconditional.
    guarded: bool = False
    # Imported in one branch of a function (`else: import torch.nn as nn`):
    # the name is local to the whole function but bound on that path only.
    in_branch: bool = False

    @property
    def fully_rewritten(self) -> bool:
        """Every use was replaced by a rule and nothing new refers to it."""
        return self.uses > 0 and self.uses == self.rewritten and not self.reused


LOCAL = "<local>"


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    parent: Optional["Scope"]
    is_class: bool = False
    imports: dict[str, ImportBinding] = field(default_factory=dict)
    locals: set[str] = field(default_factory=set)
    # Names declared `global` (bound in the module) or `nonlocal` (bound in
    # an enclosing function) here.
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)

    def module_scope(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def chain(self) -> Iterator["Scope"]:
        """Scopes a name lookup visits: class bodies only when they are innermost."""
        scope: Optional[Scope] = self
        first = True
        while scope is not None:
            if not scope.is_class or first:
                yield scope
            first = False
            scope = scope.parent

    def lookup(self, name: str) -> Union[ImportBinding, str, None]:
        """The import binding for ``name``, ``LOCAL`` if shadowed, None if unbound."""
        scope = self.binding_scope(name)
        return scope.binding_here(name) if scope is not None else None

    def binding_scope(self, name: str) -> Optional["Scope"]:
        """The scope whose binding of ``name`` a use here sees, if any."""
        for scope in self.chain():
            if name in scope.global_names:
                return scope.module_scope()
            if name in scope.nonlocal_names:
                continue
            if scope.binding_here(name) is not None:
                return scope
        return None

    def binding_here(self, name: str) -> Union[ImportBinding, str, None]:
        """What binds ``name`` in this scope itself, whatever encloses it."""
        # An import wins over another binding of the same name in the same
        # scope: that is the `try: import x / except ImportError: x = None` idiom.
        if name in self.imports:
            return self.imports[name]
        if name in self.locals:
            return LOCAL
        return None

    def visible_imports(self) -> Iterator[ImportBinding]:
        seen: set[str] = set()
        for scope in self.chain():
            for name, binding in scope.imports.items():
                if name not in seen and self.lookup(name) is binding:
                    seen.add(name)
                    yield binding


def dotted_parts(expr: cst.BaseExpression) -> Optional[list[str]]:
    """``a.b.c`` -> ["a", "b", "c"]; None when the chain does not end in a Name."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    parts.reverse()
    return parts


def dotted_name(expr: cst.BaseExpression) -> Optional[str]:
    parts = dotted_parts(expr)
    return ".".join(parts) if parts else None


def qualify(expr: cst.BaseExpression, scope: Scope) -> Optional[tuple[str, ImportBinding]]:
    """The qualified name a Name/Attribute chain refers to through the imports in scope."""
    parts = dotted_parts(expr)
    if not parts:
        return None
    binding = scope.lookup(parts[0])
    if not isinstance(binding, ImportBinding):
        return None
    return ".".join([binding.target, *parts[1:]]), binding


def spell(qualified: str, scope: Scope) -> Optional[tuple[str, Optional[ImportBinding]]]:
    """How to write ``qualified`` at ``scope`` using an import already visible there.

    Picks the binding whose target is the longest module prefix, so that
    ``import torch as T`` yields ``T.hpu.synchronize``. None when no binding
    fits. An import in one branch of a function is not used: elsewhere in the
    function its name is unbound.
    """
    best: Optional[ImportBinding] = None
    for binding in scope.visible_imports():
        if binding.in_branch:
            continue  # unbound on the other paths through the function
        target = binding.target
        if qualified == target or qualified.startswith(target + "."):
            if best is None or len(target) > len(best.target):
                best = binding
    if best is None:
        return None
    return best.name + qualified[len(best.target):], best


class ScopeIndex:
    """Every scope of a module, found from its defining node."""

    def __init__(self, module: cst.Module) -> None:
        self.module = Scope(module, None)
        self.by_node: dict[cst.CSTNode, Scope] = {module: self.module}
        self.bindings: list[ImportBinding] = []
        # Every name an import binds, in any scope: most names of a file are
        # none of them, and need no lookup through the scopes.
        self.imported_names: set[str] = set()
        self._compound_depth = 0
        # Each function's scope -> the compound depth its body starts at.
        self._depth_at: dict = {}
        self._walk_statements(module.body, self.module)

    def scope_for(self, node: cst.CSTNode) -> Optional[Scope]:
        return self.by_node.get(node)

    def module_imports(self) -> Iterator[ImportBinding]:
        return iter(self.module.imports.values())

    # -- the statement walk -------------------------------------------------

    def _walk_statements(self, statements, scope: Scope) -> None:
        for statement in statements:
            self._walk_statement(statement, scope)

    def _walk_block(self, block, scope: Scope) -> None:
        if isinstance(block, cst.SimpleStatementSuite):
            for small in block.body:
                self._walk_small(small, scope)
        else:
            self._walk_statements(block.body, scope)

    def _walk_statement(self, statement, scope: Scope) -> None:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                self._walk_small(small, scope)
        elif isinstance(statement, cst.FunctionDef):
            scope.locals.add(statement.name.value)
            inner = self._new_scope(statement, scope)
            for param in _params(statement.params):
                inner.locals.add(param)
            self._walk_block(statement.body, inner)
        elif isinstance(statement, cst.ClassDef):
            scope.locals.add(statement.name.value)
            self._walk_block(statement.body, self._new_scope(statement, scope, True))
        else:
            self._walk_compound(statement, scope)

    def _walk_compound(self, statement, scope: Scope) -> None:
        self._compound_depth += 1
        try:
            self._walk_compound_blocks(statement, scope)
        finally:
            self._compound_depth -= 1

    def _walk_compound_blocks(self, statement, scope: Scope) -> None:
        if isinstance(statement, cst.For):
            scope.locals.update(target_names(statement.target))
        elif isinstance(statement, cst.With):
            for item in statement.items:
                if item.asname is not None:
                    scope.locals.update(target_names(item.asname.name))
        for child in _child_blocks(statement):
            if isinstance(child, cst.ExceptHandler) or type(child).__name__ == "ExceptStarHandler":
                if child.name is not None:
                    scope.locals.update(target_names(child.name.name))
                self._walk_block(child.body, scope)
            else:
                self._walk_block(child, scope)

    def _new_scope(self, node, parent: Scope, is_class: bool = False) -> Scope:
        scope = Scope(node, parent, is_class)
        self.by_node[node] = scope
        self._depth_at[scope] = self._compound_depth
        return scope

    def _walk_small(self, small, scope: Scope) -> None:
        if isinstance(small, cst.Import):
            for alias in small.names:
                self._bind_import(small, alias, scope)
        elif isinstance(small, cst.ImportFrom):
            self._bind_import_from(small, scope)
        elif isinstance(small, cst.Assign):
            for target in small.targets:
                scope.locals.update(target_names(target.target))
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            scope.locals.update(target_names(small.target))
        elif isinstance(small, cst.Global) and scope.parent is not None:
            # At module level, `global x` changes nothing: x is global already.
            scope.global_names.update(item.name.value for item in small.names)
        elif isinstance(small, cst.Nonlocal):
            scope.nonlocal_names.update(item.name.value for item in small.names)

    def _bind_import(self, statement: cst.Import, alias: cst.ImportAlias, scope: Scope) -> None:
        full = dotted_name(alias.name)
        if full is None:
            return
        if alias.asname is not None:
            name = _asname(alias)
            target = full
        else:
            name = target = full.split(".")[0]
        self._add_binding(ImportBinding(name, target, statement, alias, full), scope)

    def _bind_import_from(self, statement: cst.ImportFrom, scope: Scope) -> None:
        if isinstance(statement.names, cst.ImportStar):
            return
        module = dotted_name(statement.module) if statement.module is not None else None
        for alias in statement.names:
            name = _asname(alias) if alias.asname is not None else alias.name.value
            if statement.relative or module is None:
                scope.locals.add(name)  # relative imports: bound, but not resolvable here
                continue
            target = f"{module}.{alias.name.value}"
            self._add_binding(ImportBinding(name, target, statement, alias, target), scope)

    def _add_binding(self, binding: ImportBinding, scope: Scope) -> None:
        # The binding does not point back at its scope: a cycle would leave
        # each file's trees to the cycle collector instead of freeing them.
        binding.guarded = self._compound_depth > 0 or scope.parent is not None
        in_function = scope.parent is not None and not scope.is_class
        binding.in_branch = in_function and self._compound_depth > self._depth_at.get(scope, 0)
        scope.imports[binding.name] = binding
        self.bindings.append(binding)
        self.imported_names.add(binding.name)


def _asname(alias: cst.ImportAlias) -> str:
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else cst.Module([]).code_for_node(name)


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    """Plain names bound by an assignment target (tuples and starred unpacked)."""
    for node in target_name_nodes(target):
        yield node.value


def target_name_nodes(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_name_nodes(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_name_nodes(target.value)


def _params(params: cst.Parameters) -> Iterator[str]:
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        yield param.name.value
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            yield star.name.value


def _child_blocks(statement) -> Iterator:
    """The statement blocks of a compound statement, in source order."""
    for name in ("body", "handlers", "orelse", "finalbody", "cases"):
        child = getattr(statement, name, None)
        if child is None:
            continue
        if isinstance(child, (list, tuple)):
            for item in child:
                if isinstance(item, (cst.ExceptHandler,)) or type(item).__name__ in (
                    "ExceptStarHandler",
                ):
                    yield item
                elif hasattr(item, "body"):  # match cases
                    yield item.body
        elif isinstance(child, (cst.Else, cst.Finally)):
            yield child.body
        elif isinstance(child, cst.If):  # elif chain
            yield child.body
            yield from _child_blocks_of_elif(child)
        elif isinstance(child, cst.BaseSuite):
            yield child


def _child_blocks_of_elif(node: cst.If) -> Iterator:
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        yield orelse.body
        yield from _child_blocks_of_elif(orelse)
    elif isinstance(orelse, cst.Else):
        yield orelse.body
