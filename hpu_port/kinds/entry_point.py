"""Kind ``entry-point``: what a script run as a program must set before torch starts.

An entry point is a module with a top-level ``if __name__ == "__main__":``,
a notebook (its kernel runs the cells as a program), or a module outside any
package whose own statements (outside its functions and classes) call
``backward``: a script that trains at its top, with no ``__main__`` block.
The last two are reported at their first import of torch. The rule speaks once
per entry point (at that ``if``; in a notebook, at its first import of torch) when the file imports
one of ``imports`` (top-level modules: ``torch``, ``habana_frameworks``) and
none of the ``unless-mentioned`` strings occurs in it as a string literal
(``"PT_HPU_LAZY_MODE"`` in ``os.environ[...]``, ``setdefault`` or a launch
command means the script already handles the setting). With ``when-calls``
(method names such as ``backward``), only scripts that call one of them count
(training scripts).

``set-env`` (variable -> value) gives the fix: ``os.environ.setdefault(...)``
for each variable, before the first top-level statement that is neither the
docstring nor an import of the standard library, so before torch or anything
that may import it is imported (the Gaudi bridge reads these variables once,
when it loads). A value given in the environment still wins. With
``script-imports`` (command-line parsers) and ``script-calls`` (method names:
``backward``, ``spawn``), the fix is made only in a file that shows one of
them: a script, not a library module with a demonstration under its
``__main__`` test, which is reported only. A file that starts with a ``#!``
line, or whose ``__main__`` block calls one of ``script-main-calls``
(``main``: the block hands over to the program), is a script too.

With ``runs-on-device`` (words such as ``device``, ``backward``,
``trainer``), a script none of whose names has such a word as a part
(`num_devices`, `use_cuda`, `Trainer`), that writes no device string
(`"cuda:0"`), and whose ``__main__`` block hands over to no imported function
runs nothing on the accelerator (it writes a config, converts a checkpoint on
the CPU): the rule is silent there.
"""

from __future__ import annotations

import ast

from hpu_port import notebooks
from hpu_port.kinds import Kind, register_kind, string_list, string_table, word_context
from hpu_port.triggers import Trigger, text_trigger

# Importing these runs nothing of torch's, so settings may follow them.
STANDARD_LIBRARY = frozenset(
    "__future__ abc argparse ast asyncio atexit base64 bisect builtins collections contextlib copy csv "
    "dataclasses datetime enum errno functools gc getpass glob gzip hashlib heapq importlib inspect io "
    "itertools json logging math multiprocessing operator os pathlib pickle platform pprint queue random "
    "re shutil signal socket string struct subprocess sys tempfile textwrap threading time timeit "
    "traceback types typing unittest urllib uuid warnings weakref zipfile".split()
)


@register_kind
class EntryPoint(Kind):
    name = "entry-point"
    KEYS = {
        "imports": (list, True),
        "unless-mentioned": (list, False),
        "when-calls": (list, False),
        "set-env": (dict, False),
        "script-imports": (list, False),
        "script-calls": (list, False),
        "script-main-calls": (list, False),
        "runs-on-device": (list, False),
    }
    MESSAGE_FIELDS = frozenset({"name"})

    def build_params(self, table):
        settings = string_table(table.get("set-env", {}), "set-env")
        for variable in settings:
            if not variable.replace("_", "").isalnum():
                raise ValueError(f"'set-env': {variable!r} is not an environment variable name")
        return {
            "imports": set(string_list(table["imports"], "imports")),
            "unless-mentioned": set(string_list(table.get("unless-mentioned", []), "unless-mentioned")),
            "when-calls": set(string_list(table.get("when-calls", []), "when-calls")),
            "set-env": settings,
            "script-imports": set(string_list(table.get("script-imports", []), "script-imports")),
            "script-calls": set(string_list(table.get("script-calls", []), "script-calls")),
            "script-main-calls": set(string_list(table.get("script-main-calls", []), "script-main-calls")),
            "runs-on-device": {word.lower() for word in string_list(table.get("runs-on-device", []), "runs-on-device")},
        }

    def describe(self, rule):
        settings = rule.params["set-env"]
        if not settings:
            return ""
        lines = ["With `--unsafe-fixes`, before torch is first imported:", "", "```python", "import os"]
        lines += [f'os.environ.setdefault("{k}", "{v}")' for k, v in settings.items()]
        return "\n".join(lines + ["```", ""])

    def triggers(self, rule):
        if rule.params["when-calls"]:
            return [text_trigger(f".{method}(") for method in sorted(rule.params["when-calls"])]
        # A notebook is an entry point too: its kernel runs the cells as a
        # program. The module its cells are joined into starts with a marker
        # (a pattern, which counts as found in the notebook's JSON).
        return [text_trigger("__main__"), Trigger(pattern=notebooks.CELLS_MODULE_START), text_trigger(".backward(")]

    def screen(self, rule, view):
        # A top-level `if __name__ == "__main__":` (or a notebook's cells) in a
        # file that imports one of the modules; most files that merely mention
        # `__main__` have neither.
        if not (
            notebooks.is_cells_module(view.first_line)
            or any(_is_main_check(node) for node in view.tree.body)
            or _trains_at_top(view.tree, TOP_LEVEL_TRAINING_CALLS)
        ):
            return False
        if view.imported_names(rule.params["imports"]):
            return True
        # Or another package, maybe the project's own (`from glmtuner.tuner
        # import run_sft`), which brings torch with it: the project facts decide.
        return any(root not in STANDARD_LIBRARY for root in _imported_roots(view))

    def context(self, rule):
        # The setting may be made in any function (`def setup_env():`), and
        # what makes the file a script may be in any (`loss.backward()`).
        return word_context(rule.params["unless-mentioned"] | rule.params["script-calls"])


def _imported_roots(view) -> set:
    roots = {alias.name.split(".")[0] for node in view.nodes(ast.Import) for alias in node.names}
    for node in view.nodes(ast.ImportFrom):
        roots.add(node.module.split(".")[0] if node.level == 0 and node.module else ".")
    return roots


# A call the module's own statements make that shows a script training there.
TOP_LEVEL_TRAINING_CALLS = frozenset({"backward"})


def _trains_at_top(tree: ast.Module, methods: frozenset) -> bool:
    """Whether the module's own statements (outside its functions and
    classes) call one of ``methods``: a script that trains at its top."""
    if not methods:
        return False
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
                return True
    return False


def _is_main_check(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.dump(node.test)
