"""Kind ``loop-in-context``: report loops that run under a given context (report only).

A ``for``/``while`` loop inside ``with <context>():`` or in a function decorated
with one of the ``contexts`` (``torch.no_grad``, ``torch.inference_mode``), or
a loop whose body enters the context (``for x in loader: with torch.no_grad():``),
is reported once (the outermost such loop), unless it already calls one of the
``satisfied-by`` functions or one of the ``skip-methods`` (a loop that calls
``.backward()`` is training, not inference). A file that calls one of the
``file-satisfied-by`` functions anywhere (``wrap_in_hpu_graph(model)``) is
taken as handled; a ``satisfied-by`` call elsewhere in the file (a
``mark_step()`` in the training loop) says nothing about the inference loop. With ``forward-calls``, only loops that call something that
looks like a model are reported: a callable of the file's own (``model(x)``,
``net(x)``; not an import or a builtin), or a method named like a model or a
forward pass (``self.model(x)``, ``model.generate(...)``); loops that only
initialise weights or tidy up under ``no_grad`` are left alone.
"""

from __future__ import annotations

import ast
import re
import builtins

from hpu_port.kinds import Kind, name_context, register_kind, string_list
from hpu_port.triggers import child_statements, name_trigger


@register_kind
class LoopInContext(Kind):
    name = "loop-in-context"
    KEYS = {
        "contexts": (list, True),
        "satisfied-by": (list, False),
        "file-satisfied-by": (list, False),
        "skip-methods": (list, False),
        "forward-calls": (bool, False),
    }
    MESSAGE_FIELDS = frozenset({"name"})

    def context(self, rule):
        # A `file-satisfied-by` call anywhere marks the whole file as handled.
        return name_context(rule.params["file-satisfied-by"])

    def build_params(self, table):
        return {
            "contexts": set(string_list(table["contexts"], "contexts")),
            "satisfied-by": set(string_list(table.get("satisfied-by", []), "satisfied-by")),
            "file-satisfied-by": set(string_list(table.get("file-satisfied-by", []), "file-satisfied-by")),
            "skip-methods": set(string_list(table.get("skip-methods", []), "skip-methods")),
            "forward-calls": table.get("forward-calls", False),
        }

    def triggers(self, rule):
        return [name_trigger(name) for name in rule.params["contexts"]]

    def screen(self, rule, view):
        return bool(self.places(rule, view))

    def places(self, rule, view):
        # Each statement loop under a `with` or a decorator whose expression
        # ends in one of the contexts' names (and, with `forward-calls`, that
        # may run a model); imports are not resolved here, so this only ever
        # keeps too much. A loop's context is in the function that holds it.
        return view.remembered(("loop-in-context", rule.code), lambda: _loops_in_context(rule, view))


def _loops_in_context(rule, view) -> list[tuple[int, int]]:
    last_parts = {name.rsplit(".", 1)[-1] for name in rule.params["contexts"]}
    loops = list(_loops_under(view.tree, last_parts))
    if rule.params["forward-calls"]:
        loops = [loop for loop in loops if _may_run_a_model(loop, view)]
    return [(loop.lineno, loop.end_lineno) for loop in loops]


def _may_run_a_model(loop: ast.AST, view) -> bool:
    called = set()
    if _calls_a_model_method(loop, called):
        return True
    # Imports and builtins are no model, unless the file rebinds the name
    # (which takes walking every expression, so it is asked last).
    if called - view.remembered("imported names", view.imported_names) - _BUILTINS:
        return True
    return bool(called) and bool(called & view.remembered("bound names", lambda: _bound_names(view)))


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


_WITHS = (ast.With, ast.AsyncWith)


def _loops_under(tree: ast.AST, last_parts: set[str]):
    stack = [(statement, False) for statement in getattr(tree, "body", [])]
    while stack:
        statement, inside = stack.pop()
        if isinstance(statement, _LOOPS) and (inside or _holds_a_context(statement, last_parts)):
            yield statement
            continue
        if isinstance(statement, _WITHS):
            inside = inside or any(_ends_in(item.context_expr, last_parts) for item in statement.items)
        elif isinstance(statement, _FUNCTIONS):
            inside = inside or any(_ends_in(d, last_parts) for d in statement.decorator_list)
        for child in child_statements(statement):
            stack.append((child, inside))


def _holds_a_context(loop: ast.AST, last_parts: set[str]) -> bool:
    """Whether a `with <context>():` stands inside the loop (`for x in loader:
    with torch.no_grad(): ...`): the loop is then run under the context too."""
    # `with` is a statement: the loop's statements are enough, not every expression.
    stack = child_statements(loop)
    while stack:
        node = stack.pop()
        if isinstance(node, _WITHS) and any(_ends_in(item.context_expr, last_parts) for item in node.items):
            return True
        stack.extend(child_statements(node))
    return False


def _bound_names(view) -> set:
    """Names the file assigns or takes as parameters (they may hide imports and builtins)."""
    bound = {n.id for n in view.nodes(ast.Name) if isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for a in view.nodes(ast.arg)}
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        bound |= {n.name for n in view.nodes(kind)}
    return bound


def _calls_a_model_method(loop: ast.AST, called: set) -> bool:
    """The standard-parser twin of `_looks_like_a_model`, for the screen:
    whether ``loop`` calls a method named like a model's; the plain names it
    calls are added to ``called``."""
    for node in ast.walk(loop):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            called.add(func.id)
        elif isinstance(func, ast.Attribute) and (func.attr in _MODEL_METHODS or "model" in func.attr.lower()):
            return True
        if isinstance(func, ast.Attribute) and not is_bookkeeping(func.attr) and names_a_model(_last_ast_name(func.value)):
            return True  # `model.get_intermediate_layers(x)`
        if any(names_a_model(_last_ast_name(arg)) for arg in node.args):
            return True  # `self.p_sample(model, x, t)`
    return False


def _last_ast_name(expr: ast.AST) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else ""


def names_a_model(name: str) -> bool:
    """`model`, `ema_model`, `teacherModel`: a name a model is kept under (its
    last word is `model`; `model_type` and `model_name` are not)."""
    words = re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name)
    return bool(words) and words[-1].lower() == "model"


# Methods of a model that run no batch: a loop calling only these runs no forward pass.
MODEL_BOOKKEEPING = frozenset({
    "parameters", "buffers", "state_dict", "load_state_dict", "get_parameter", "get_buffer", "get_submodule",
    "eval", "train", "to", "cpu", "cuda", "half", "float", "bfloat16", "zero_grad", "apply",
    "modules", "children", "requires_grad_",
})
# ...and methods whose names begin so (`named_parameters`, `register_buffer`).
MODEL_BOOKKEEPING_PREFIXES = ("named_", "register_", "set_", "load_")


def is_bookkeeping(method: str) -> bool:
    return method in MODEL_BOOKKEEPING or method.startswith(MODEL_BOOKKEEPING_PREFIXES)


def _ends_in(expr: ast.AST, last_parts: set[str]) -> bool:
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Attribute):
        return expr.attr in last_parts
    return isinstance(expr, ast.Name) and expr.id in last_parts


_MODEL_METHODS = frozenset({"forward", "generate", "predict", "sample", "net", "encoder", "decoder", "backbone", "unet", "vae", "pipe", "pipeline"})


_BUILTINS = frozenset(dir(builtins))
