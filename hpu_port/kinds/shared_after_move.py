"""Kind ``shared-after-move``: tying parameters after the module was moved to the device (report only).

In a block of statements, once ``model.to(...)`` (or another of the
``move-methods``) was called on a name, an assignment of one attribute chain of
that name to another (``model.decoder.weight = model.encoder.weight``) is
reported: the tie should happen before the move, inside the module.
"""

from __future__ import annotations

import ast
import dataclasses

from hpu_port.kinds import Kind, register_kind, string_list
from hpu_port.shapes import TieOfMoved, method_call
from hpu_port.triggers import Trigger, ast_root, text_trigger


@register_kind
class SharedAfterMove(Kind):
    name = "shared-after-move"
    KEYS = {"move-methods": (list, True)}
    MESSAGE_FIELDS = frozenset({"name", "module"})

    def build_params(self, table):
        return {"move-methods": set(string_list(table["move-methods"], "move-methods"))}

    def triggers(self, rule):
        # `.to(` is in most files; a name tied to itself (`m.a.w = m.b.w`) that is also moved, in few.
        tie = (Trigger(pattern=TieOfMoved(tuple(sorted(rule.params["move-methods"])))),)
        return [dataclasses.replace(text_trigger(f".{m}("), alongside=tie) for m in sorted(rule.params["move-methods"])]

    def screen(self, rule, view):
        # Some name has one attribute assigned another (a statement, so cheap
        # to find) and is moved (`m.to(...)`).
        tied = set()
        for node in view.nodes(ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and isinstance(node.value, ast.Attribute):
                root = ast_root(node.targets[0])
                if root is not None and root == ast_root(node.value):
                    tied.add(root)
        if not tied:
            return False
        methods = rule.params["move-methods"]
        return any(
            isinstance(call.func, ast.Attribute) and call.func.attr in methods and isinstance(call.func.value, ast.Name)
            and call.func.value.id in tied
            for call in view.nodes_on_lines(ast.Call, view.lines_matching(method_call(tuple(sorted(methods)))))
        )
