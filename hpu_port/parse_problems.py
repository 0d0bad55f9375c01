"""Why source does not parse, in one line: the wording of syntax errors and
the check that a rewritten file still parses before it is written."""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst


def describe_syntax_error(source: bytes, exc: cst.ParserSyntaxError) -> str:
    """One line naming the place and the problem, as Python itself would put
    it; for code Python reads but libcst does not, libcst's reason."""
    import warnings

    python_reads_it = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
        python_reads_it = True
    except SyntaxError as error:
        if error.lineno is not None:
            where = f"line {error.lineno}" + (f", column {error.offset}" if error.offset else "")
            return f"syntax error at {where}: {error.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    message = re.sub(r"^parser error: error at \d+:\d+: ", "", first_text_line(exc.message))
    if len(message) > 120:
        message = message[:117] + "..."
    where = f"line {exc.raw_line}, column {exc.raw_column + 1}"
    if python_reads_it:
        return f"valid Python that libcst, the parser hpu-port uses, cannot read: {where}: {message}"
    return f"syntax error at {where}: {message}"


def reparse_problem(new: bytes, old: bytes) -> Optional[str]:
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
        return first_text_line(str(exc))
    return None


def first_text_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text.strip()
