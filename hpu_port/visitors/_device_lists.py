"""Where code lists the devices it serves, in a list (`["cuda", "xpu"]`) or in
one test per device (`"cpu" not in device and "cuda" not in device`): the
edits that add the HPU beside CUDA and keep every other device as it is."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from hpu_port.visitors._references import literal_value, written


def device_chain(node: cst.BooleanOperation) -> Optional[tuple]:
    """(operator, [(string, word, test)]) when every operand of the chain is
    the same kind of test of one value against a string: `"x" not in v` or
    `v != "x"` joined by `and`, `"x" in v` or `v == "x"` joined by `or`."""
    operands, operators = [], set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BooleanOperation) and not current.lpar:
            operators.add(type(current.operator))
            stack += [current.right, current.left]
        else:
            operands.append(current)
    if len(operators) != 1:
        return None
    operator = operators.pop()
    wanted = (cst.NotIn, cst.NotEqual) if operator is cst.And else (cst.In, cst.Equal)
    tests, subjects = [], set()
    for test in operands:
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, wanted):
            return None
        left, right = test.left, test.comparisons[0].comparator
        string, subject = (left, right) if isinstance(left, cst.SimpleString) else (right, left)
        word = literal_value(written(string)) if isinstance(string, cst.SimpleString) else None
        if not isinstance(word, str) or isinstance(subject, cst.SimpleString):
            return None
        tests.append((string, word, test))
        subjects.add(written(subject))
    return (operator, tests) if len(subjects) == 1 and len(tests) > 1 else None


def extended_test(string: cst.SimpleString, word: str, operator: type):
    """An edit of a test that joins it with the same test of ``word``
    (`"cuda" not in device` -> `"cuda" not in device and "hpu" not in device`)."""

    def edit(updated):
        code = cst.Module([]).code_for_node(updated.with_changes(lpar=[], rpar=[]))
        twin = code.replace(string.value, f"{string.quote}{word}{string.quote}", 1)
        joined = cst.parse_expression(f"{code} {'and' if operator is cst.And else 'or'} {twin}")
        return joined.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    return edit


def added_after(string: cst.SimpleString, word: str):
    """An edit of a list that puts ``word`` right after ``string``, in its quotes."""

    def edit(updated):
        elements = list(updated.elements)
        at = next(i for i, e in enumerate(elements) if isinstance(e.value, cst.SimpleString) and e.value.value == string.value)
        added = cst.Element(cst.SimpleString(f"{string.quote}{word}{string.quote}"), comma=elements[at].comma)
        if isinstance(added.comma, cst.MaybeSentinel):
            added = added.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elements[at] = elements[at].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elements.insert(at + 1, added)
        return updated.with_changes(elements=elements)

    return edit
