"""How the ``entry-point`` kind matches and fixes code (see ``hpu_port.kinds.entry_point``)."""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from hpu_port.context import FileContext
from hpu_port.kinds.entry_point import STANDARD_LIBRARY, TOP_LEVEL_TRAINING_CALLS
from hpu_port.model import Rule
from hpu_port.visitors._references import RulesVisitor, is_main_test, literal_value, written


def visitor(rules: list[Rule], ctx: FileContext) -> Optional[cst.BatchableCSTVisitor]:
    return _EntryPointVisitor(ctx, rules)


class _EntryPointVisitor(RulesVisitor):
    def __init__(self, ctx, rules) -> None:
        super().__init__(ctx, rules)
        self.entry: Optional[cst.BaseExpression] = None
        self.mentioned: set[str] = set()
        self.called: set[str] = set()
        self.entry_block: Optional[cst.If] = None
        # A notebook's kernel runs every cell: all of it is the entry block.
        self.notebook = ctx.path.endswith(".ipynb")
        self.inside_entry = self.notebook
        self.called_from_entry: set[str] = set()
        # Methods the `__main__` block calls (`trainer.train()`).
        self.methods_in_entry: set[str] = set()
        # Methods called by the module's own statements, outside any function
        # or class: a script without a `__main__` block that trains there.
        self.called_at_top: set[str] = set()

    def visit_If(self, node: cst.If) -> None:
        if self.entry is None and self.ctx.scope is self.ctx.scopes.module and is_main_test(node.test):
            self.entry = node.test
            self.entry_block = node
            self.inside_entry = True

    def leave_If(self, node: cst.If) -> None:
        if node is self.entry_block and not self.notebook:
            self.inside_entry = False

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = literal_value(node.value)
        if isinstance(value, str):
            self.mentioned.add(value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.called.add(node.func.attr.value)
            if self.ctx.scope is self.ctx.scopes.module:
                self.called_at_top.add(node.func.attr.value)
            if self.inside_entry:
                self.methods_in_entry.add(node.func.attr.value)
        elif self.inside_entry and isinstance(node.func, cst.Name):
            self.called_from_entry.add(node.func.value)

    def leave_Module(self, node: cst.Module) -> None:
        if self.entry is None and not self.notebook:
            return self._report_top_level_training(node)
        imported = {binding.module_path.split(".")[0] for binding in self.ctx.scopes.bindings}
        for rule in self.rules:
            params = rule.params
            if not (imported & params["imports"] or self._imports_cuda_project(imported)):
                continue
            if self.mentioned & params["unless-mentioned"]:
                continue
            if params["when-calls"] and not self.called & params["when-calls"]:
                continue
            if not self._runs_on_device(params):
                continue
            if self.notebook:
                self._report_notebook(node, rule, params)
                continue
            message = rule.message.format(name=written(self.entry))
            if not self._script_like(node, imported, params):
                message += " (not set here: the module looks like a library with a demonstration under its `__main__` test)"
                self.ctx.report(rule, self.entry, message)
                continue
            self.ctx.report(rule, self.entry, message, self._fix(node, params["set-env"]))

    def _report_notebook(self, module: cst.Module, rule: Rule, params: dict) -> None:
        """A notebook, at its first import of torch (or of a library or
        project package that brings it): the kernel that runs its cells must
        start with the setting, so the fix goes before that import."""
        if not self._notebook_trains():
            return  # a demonstration: lazy or eager, its inference runs the same
        self._report_at_import(module, rule, params, NOTEBOOK_NOTE)

    def _report_top_level_training(self, module: cst.Module) -> None:
        """A script with no `__main__` block whose own statements train
        (`loss.backward()` in a loop at the top of `train.py`): it is the
        program, and its launch lines are plain `python train.py`."""
        path = self.ctx.path or ""
        if not path.endswith(".py") or self.ctx.facts.top_package(path) or self.ctx.facts.is_test(path):
            return
        if not self.called_at_top & TOP_LEVEL_TRAINING_CALLS:
            return
        imported = {binding.module_path.split(".")[0] for binding in self.ctx.scopes.bindings}
        for rule in self.rules:
            params = rule.params
            if not imported & params["imports"] or self.mentioned & params["unless-mentioned"]:
                continue
            self._report_at_import(module, rule, params, TOP_LEVEL_NOTE)

    def _report_at_import(self, module: cst.Module, rule: Rule, params: dict, note: str) -> None:
        modules = params["imports"] | (self.ctx.facts.first_party if self.ctx.facts.uses_cuda else set())
        anchor = next((found for s in module.body if (found := _import_of(s, modules)) is not None), None)
        if anchor is None:
            return  # imported only inside a function or a block: no place the setting surely precedes
        message = rule.message.format(name=written(anchor)) + note
        self.ctx.report(rule, anchor, message, self._fix(module, params["set-env"]))

    def _notebook_trains(self) -> bool:
        """Whether a notebook trains: it calls a backward pass, a method or
        function named for training (`trainer.train()`, `train(opt)` of a
        project module whose loop the port gave mark_step), or spawns workers."""
        called = self.called | self.called_from_entry
        return any(word.lower() in NOTEBOOK_TRAINING_WORDS for name in called for word in _NAME_WORDS.split(name))

    def _imports_cuda_project(self, imported: set) -> bool:
        """A launcher of the project's own code (`from glmtuner.tuner import
        run_sft`) in a project that runs on CUDA: torch comes with it."""
        facts = self.ctx.facts
        return facts.uses_cuda and bool(imported & facts.first_party)

    def _runs_on_device(self, params: dict) -> bool:
        """Whether the program may run anything on the accelerator: its text
        names device work, or its `__main__` block hands over to a function
        imported from elsewhere (whose work this file cannot see)."""
        words = params["runs-on-device"]
        # Read from the standard parser's tree of the whole file: `check`
        # stubs out functions no rule acts on before this visitor walks them.
        if not words or self.ctx.tree is None or words & words_of_names(self.ctx.tree):
            return True
        imported = {binding.name for binding in self.ctx.scopes.bindings}
        return bool(self.called_from_entry & imported)

    def _script_like(self, module: cst.Module, imported: set, params: dict) -> bool:
        """A program: it parses a command line, trains or launches workers,
        is made to be run (`#!`) or hands its `__main__` block to `main()`
        (or to a trainer: `trainer.train()`)."""
        if not params["script-imports"] and not params["script-calls"] and not params["script-main-calls"]:
            return True
        return bool(
            imported & params["script-imports"]
            or self.called & params["script-calls"]
            or (self.called_from_entry | self.methods_in_entry) & params["script-main-calls"]
            or _has_shebang(module)
        )

    def _fix(self, module: cst.Module, settings: dict):
        if not settings:
            return None
        index = _first_statement_after_setup(module.body)
        if index is None:
            return None
        target = module.body[index]
        lines = [] if _imports_os(module.body[:index]) else ["import os"]
        lines += [f"os.environ.setdefault({_quoted(k)}, {_quoted(v)})" for k, v in settings.items()]
        return self.ctx.replace(target, lambda updated: _preceded_by(updated, lines, module.config_for_parsing))


# A notebook whose calls name one of these trains (or launches training).
NOTEBOOK_TRAINING_WORDS = frozenset({"backward", "train", "fit", "finetune", "pretrain", "spawn"})
TOP_LEVEL_NOTE = "; the script trains in its own top-level code, with no `__main__` block: it is the program its launch lines run"
NOTEBOOK_NOTE = "; a notebook's kernel is its entry point: set it in the first cell, before torch is imported, or in the kernel's environment"


def _import_of(statement, modules: set):
    """The import in a top-level statement of one of ``modules`` (top-level names), or None."""
    for small in getattr(statement, "body", ()) if isinstance(statement, cst.SimpleStatementLine) else ():
        if isinstance(small, cst.Import) and any(_root(alias.name) in modules for alias in small.names):
            return small
        if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None and _root(small.module) in modules:
            return small
    return None


# A device named in a string: `.to("cuda:0")`, `device="hpu"`.
DEVICE_STRING = re.compile(r"(cuda|hpu|gpu|mps|xla)(:\d+)?$", re.IGNORECASE)


_NAME_WORDS = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")


def words_of_names(tree: ast.AST) -> set[str]:
    """The words of every name the code uses or binds, lower-cased
    (`num_devices` -> num, devices; `GaudiTrainer` -> gaudi, trainer), and
    the devices its strings name (`"cuda:0"` -> cuda)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.update(node.name.split("."))
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update(node.module.split("."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DEVICE_STRING.match(node.value):
            names.add(node.value.split(":")[0])
    return {word.lower() for name in names for word in _NAME_WORDS.split(name) if word}


def _has_shebang(module: cst.Module) -> bool:
    first = module.header[0] if module.header else None
    return first is not None and first.comment is not None and first.comment.value.startswith("#!")


def _first_statement_after_setup(body) -> Optional[int]:
    """The index of the first statement that is not the docstring, an
    import of the standard library or `pass` (where torch may start loading)."""
    for index, statement in enumerate(body):
        if index == 0 and _is_docstring(statement):
            continue
        # A bare `pass` is also where a notebook's magic or shell line stands
        # (`!pip install ...`, `%matplotlib inline`): none of them loads torch.
        if isinstance(statement, cst.SimpleStatementLine) and all(
            _standard_import(s) or isinstance(s, cst.Pass) for s in statement.body
        ):
            continue
        return index
    return None


def _is_docstring(statement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _standard_import(small) -> bool:
    if isinstance(small, cst.Import):
        return all(_root(alias.name) in STANDARD_LIBRARY for alias in small.names)
    if isinstance(small, cst.ImportFrom):
        return not small.relative and small.module is not None and _root(small.module) in STANDARD_LIBRARY
    return False


def _root(name) -> str:
    return written(name).split(".")[0]


def _imports_os(statements) -> bool:
    for statement in statements:
        for small in getattr(statement, "body", ()):
            if isinstance(small, cst.Import) and any(
                written(a.name) == "os" and a.asname is None for a in small.names
            ):
                return True
    return False


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _preceded_by(statement, lines: list[str], config):
    """``statement`` with ``lines`` before it; they take over the comments and
    blank lines above it."""
    new = [cst.parse_statement(line, config=config) for line in lines]
    new[0] = new[0].with_changes(leading_lines=statement.leading_lines)
    return cst.FlattenSentinel([*new, statement.with_changes(leading_lines=())])
