"""Tables of the devices a module knows, which a renamed device would miss.

Some code checks a device name against a table of its own: an enum whose
members are the devices it supports (``CUDA = ("cuda", "GPU", "nccl")``) or a
dict keyed by device names (``{"cuda": torch.cuda, "cpu": torch.cpu}``). Where
such a table lists ``"cuda"`` but not ``"hpu"``, renaming a ``"cuda"``
elsewhere in the module makes the lookup fail (``Unknown device type: hpu``)
instead of porting it: the table needs an entry first, which is for a person.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from hpu_port.visitors._references import literal_value

# What a table must list for a renamed device to be found in it.
GAUDI_DEVICE = "hpu"


def device_table(module: cst.Module, device: str, missing: str) -> Optional[str]:
    """The name of a module- or class-level table that lists ``device`` and
    one other plain name, but not ``missing``; None if there is none."""
    for name, keys in _tables(module.body):
        if device in keys and missing not in keys and len(keys) > 1:
            return name
    return None


def table_for(module: cst.Module, devices, holds_string, missing: str = GAUDI_DEVICE) -> Optional[str]:
    """For each of ``devices`` (the device evidence's ``tables``) that
    ``holds_string`` says the guarded code names: the module's table that
    lists it without ``missing``, if there is one."""
    for device in devices:
        table = device_table(module, device, missing) if holds_string(device) else None
        if table is not None:
            return table
    return None


def _tables(statements) -> Iterator[tuple[str, set]]:
    for statement in statements:
        if isinstance(statement, cst.ClassDef):
            if _is_enum(statement):
                yield statement.name.value, _member_names(statement.body.body)
            yield from _tables(statement.body.body)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                value = getattr(small, "value", None)
                target = _target_name(small)
                if isinstance(value, cst.Dict) and target is not None:
                    yield target, {key for key in map(_plain_name, _dict_keys(value)) if key}


def _is_enum(node: cst.ClassDef) -> bool:
    for base in node.bases:
        name = base.value.attr.value if isinstance(base.value, cst.Attribute) else getattr(base.value, "value", "")
        if isinstance(name, str) and name.endswith("Enum"):
            return True
    return False


def _member_names(statements) -> set:
    """The first plain-name string of each member: ``CUDA = "cuda"`` or ``CUDA = ("cuda", "GPU")``."""
    names = set()
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            value = small.value if isinstance(small, cst.Assign) else None
            if isinstance(value, cst.Tuple) and value.elements:
                value = value.elements[0].value
            name = _plain_name(value)
            if name:
                names.add(name)
    return names


def _dict_keys(node: cst.Dict) -> Iterator[cst.BaseExpression]:
    for element in node.elements:
        if isinstance(element, cst.DictElement):
            yield element.key


def _plain_name(expr) -> Optional[str]:
    if not isinstance(expr, cst.SimpleString):
        return None
    value = literal_value(expr.value)
    return value if isinstance(value, str) and value.isidentifier() and value.islower() else None


def _target_name(small) -> Optional[str]:
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
    elif isinstance(small, cst.AnnAssign):
        target = small.target
    else:
        return None
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return target.attr.value
    return None
