"""Where a module's definitions and imports are: its functions and classes at
any depth, the statements of a body and of the blocks under it, and the
modules a body imports (for the ``other-backend`` kind)."""

from __future__ import annotations

import re
from typing import Callable, Iterator, Optional

import libcst as cst

from hpu_port.visitors._references import written


def statements(body, through: tuple = (cst.Try,)) -> Iterator[cst.CSTNode]:
    """The statements of ``body`` and of the blocks of its ``through`` statements."""
    for statement in body:
        yield statement
        if isinstance(statement, through):
            for block in blocks_of(statement):
                yield from statements(block, through)


def statements_outside_defs(body) -> Iterator[cst.CSTNode]:
    return statements(body, (cst.If, cst.Try))


def body_of(node) -> list:
    body = node.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else [cst.SimpleStatementLine(body.body)]


def blocks_of(statement) -> Iterator:
    body = getattr(statement, "body", None)
    if isinstance(body, cst.IndentedBlock):
        yield body.body
    for handler in getattr(statement, "handlers", ()) or ():
        yield handler.body.body
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:
        if isinstance(orelse, cst.If):
            yield orelse.body.body
            orelse = orelse.orelse
        else:
            yield orelse.body.body
            orelse = None
    final = getattr(statement, "finalbody", None)
    if final is not None:
        yield final.body.body


def imported_modules(small) -> list[str]:
    if isinstance(small, cst.Import):
        return [written(alias.name) for alias in small.names]
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return [written(small.module)]
    return []


def functions(body) -> Iterator[cst.FunctionDef]:
    yield from (node for node in definitions(body) if isinstance(node, cst.FunctionDef))


def classes(body) -> Iterator[cst.ClassDef]:
    yield from (node for node in definitions(body) if isinstance(node, cst.ClassDef))


def definitions(body) -> Iterator[cst.CSTNode]:
    """Every function and class definition, at any depth."""
    for statement in body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            yield statement
            inner = statement.body
            if isinstance(inner, cst.IndentedBlock):
                yield from definitions(inner.body)
        elif isinstance(statement, cst.BaseCompoundStatement):
            for block in blocks_of(statement):
                yield from definitions(block)


def name_words(name: str) -> list[str]:
    """The words of an identifier, lower-cased: split at `_` and where the case
    changes (`XLAFlashAttnProcessor2_0`: xla, flash, attn, processor, 2, 0)."""
    return [word.lower() for word in _WORDS.findall(name)]


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def imported_library(body, is_library: Callable[[str], object]) -> Optional[str]:
    """The first module a function imports in its own body that
    ``is_library`` says is one (also under `try:`, `import tensorrt` or
    install it and import it again). An import under an `if` or in a loop is
    one branch of a function that does more (an exporter for many formats);
    nested functions are units of their own."""
    for statement in statements(body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                for module in imported_modules(small):
                    if is_library(module):
                        return module
    return None
