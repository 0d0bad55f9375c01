"""Keys the float16 rules share, whatever their kind: where a use of float16
must stay float16 and is reported instead of rewritten to bfloat16.

``keep-beside`` lists texts (``bfloat16``) that mark code choosing between
float16 and another dtype: a use in an ``if`` chain or conditional expression
whose code holds one, or beside a statement that gives the same target (or
returns) a value holding one, is its fp16 arm and is reported, not rewritten.
``keep-inside`` lists patterns (``half``, ``*export*``, matched without
regard to case) of the names of functions and classes whose code is about
what the rule replaces: ``half()`` implementations, exporters of another
runtime's fp16 format (the ``method-call`` kind takes it for any method:
HPU111 keeps the ``.cuda()`` calls of a ``cuda()`` override). ``keep-under-tests-of`` lists torch dtypes (``torch.float16``):
code under an ``if`` or conditional expression whose test compares with one
(``if x.dtype == torch.float16:``) handles values of that dtype and is
reported too.

``[roles]`` says where float16 is a format to keep rather than a precision to
compute in: ``files`` (shell-style patterns of file names: conversion and
export tools), ``functions`` (the same, of the names of the functions that
hold the float16: `convert_weights_to_fp16`), and the call names (last dotted part) that tell a function's
role: one that ``loads`` and ``saves`` weights and ``computes`` nothing
converts checkpoints; a test function that ``checks`` values compares them
with float16 references, and what it passes and what it checks must change
together. ``matched`` (patterns of names: ``*target*``, ``*box*``): a dtype
assigned to a name that also casts such values (`targets.to(self.data_type)`)
is their format too.
"""

from __future__ import annotations

from hpu_port.kinds import string_list

# key -> (type, required), merged into the KEYS of the kinds that take them.
FP16_KEYS = {
    "keep-beside": (list, False),
    "keep-inside": (list, False),
    "keep-under-tests-of": (list, False),
    "roles": (dict, False),
}

ROLE_KEYS = ("files", "functions", "loads", "saves", "computes", "checks", "matched")


def fp16_params(table: dict) -> dict:
    return {
        "keep-beside": string_list(table.get("keep-beside", []), "keep-beside"),
        "keep-inside": [p.lower() for p in string_list(table.get("keep-inside", []), "keep-inside")],
        "keep-under-tests-of": frozenset(string_list(table.get("keep-under-tests-of", []), "keep-under-tests-of")),
        "roles": roles_params(table.get("roles", {})),
    }


def roles_params(value) -> dict:
    if not isinstance(value, dict):
        raise ValueError("'roles' must be a table")
    unknown = set(value) - set(ROLE_KEYS)
    if unknown:
        raise ValueError(f"'roles': unknown keys {sorted(unknown)}")
    return {key: tuple(string_list(value.get(key, []), f"roles.{key}")) for key in ROLE_KEYS}


def positions_params(value) -> dict:
    """``positions``: where a dtype is produced (the other uses are reported).

    ``names``: keyword arguments, parameters and assignment targets that take a
    dtype to compute in (shell-style patterns: ``dtype``, ``*_dtype``);
    ``not-names``: those that name a dtype to match instead (``from_dtype``);
    ``not-arguments-of``: calls and methods whose positional argument is a
    dtype looked at, not produced (``view``, ``append``, ``finfo``). A
    positional argument of any other call is produced, and so is an argument
    of ``.to()`` unless its result is cast back at once (``.to(torch.float16).float()``).
    """
    if not isinstance(value, dict):
        raise ValueError("'positions' must be a table")
    keys = ("names", "not-names", "not-arguments-of")
    unknown = set(value) - set(keys)
    if unknown:
        raise ValueError(f"'positions': unknown keys {sorted(unknown)}")
    return {key: tuple(string_list(value.get(key, []), f"positions.{key}")) for key in keys}
