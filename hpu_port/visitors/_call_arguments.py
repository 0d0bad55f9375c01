"""Reading and writing a call's arguments without disturbing its layout.

Shared by the kinds that rewrite calls: arguments named by parameter, new
keyword arguments, and the commas and line breaks between them.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst


def named_arguments(call: cst.Call, positional: list[str]) -> Optional[dict[str, cst.Arg]]:
    """Arguments by parameter name; None when they cannot be named (*args, too many)."""
    named: dict[str, cst.Arg] = {}
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(positional):
                return None
            named[positional[index]] = arg
            index += 1
        else:
            named[arg.keyword.value] = arg
    return named


def keyword_arg(name: str, value, comma=cst.MaybeSentinel.DEFAULT) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        comma=comma,
    )


def with_commas(args: list, old_last: Optional[cst.Arg]) -> list:
    """Commas between ``args``; the last one ends as the call's old last
    argument did (its trailing comma, and the line break before a closing
    parenthesis on a line of its own), wherever that argument now stands.
    In a call laid out one argument per line, each argument keeps a line of
    its own, and a comment after the old last argument stays on its line."""
    last_comma = old_last.comma if old_last is not None else cst.MaybeSentinel.DEFAULT
    closing = old_last.whitespace_after_arg if old_last is not None else cst.SimpleWhitespace("")
    between = _line_between(args, old_last)
    separator = cst.Comma(whitespace_after=between if between is not None else cst.SimpleWhitespace(" "))
    fixed = []
    for index, arg in enumerate(args):
        was_last = arg is old_last
        if arg.whitespace_after_arg is closing:
            arg = arg.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
        if index == len(args) - 1:
            ending = closing
            if not was_last:
                last_comma = _without_comment(last_comma)
                if isinstance(closing, cst.ParenthesizedWhitespace):
                    ending = closing.with_changes(first_line=cst.TrailingWhitespace())
            fixed.append(arg.with_changes(comma=last_comma, whitespace_after_arg=ending))
        elif was_last and between is not None:
            ended = arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else closing
            first = ended.first_line if isinstance(ended, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
            fixed.append(arg.with_changes(comma=cst.Comma(whitespace_after=between.with_changes(first_line=first))))
        elif not isinstance(arg.comma, cst.Comma):
            fixed.append(arg.with_changes(comma=separator))
        else:
            fixed.append(arg)
    return fixed


def _line_between(args: list, old_last: Optional[cst.Arg]):
    """The line break between two arguments (comments left out), when the
    call was laid out one argument per line: its old last argument ends its
    line too; None otherwise."""
    if old_last is None:
        return None
    ended = old_last.comma.whitespace_after if isinstance(old_last.comma, cst.Comma) else old_last.whitespace_after_arg
    if not isinstance(ended, cst.ParenthesizedWhitespace):
        return None
    for arg in args:
        if arg is not old_last and isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            return arg.comma.whitespace_after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return None


def _without_comment(comma):
    """``comma`` without the comment on the line it ends: it belongs to the
    argument it followed, which keeps it."""
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=cst.TrailingWhitespace()))
    return comma
