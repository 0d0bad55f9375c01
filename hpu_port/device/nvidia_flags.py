"""Command-line options of the project whose values pick NVIDIA-only code.

`parser.add_argument("--sync_bn", default="pytorch")` and later `if
args.sync_bn == "apex": model = apex.parallel.convert_syncbn_model(model)`:
a launch line that passes `--sync_bn apex` sends a Gaudi run down apex's
CUDA path, though the Python port leaves the branch as it is (it is the
NVIDIA run's too). Found with the standard parser in the files that define
options and name an NVIDIA-only library; the options' values are read from
the `if` tests that compare them (`== "apex"`, `in ("apex", "nvidia")`) or
test them alone (`if args.use_fp16:`, a switch turned on).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterable, Optional

from hpu_port.device.judging import is_library

# apex as a whole: its amp, parallel and fused modules are NVIDIA's, and Gaudi
# has its own for each (autocast, DDP, hpex's fused optimizers).
_ALSO = frozenset({"apex"})
# How a switch given on the command line reads when turned on ("": a
# `store_true` option, given alone).
SWITCHED_ON = "(?i:true|1|yes|on)"


def nvidia_flag_values(sources: dict, libraries: frozenset, holding: Callable) -> tuple:
    """(option string, pattern of its values, why), sorted, for the options
    whose values pick a branch that uses an NVIDIA-only library."""
    words = tuple(sorted({_stem(name) for name in (*libraries, *_ALSO) if _stem(name)}))
    candidates = {
        path: source for path, source in sources.items()
        if isinstance(source, bytes) and b"add_argument" in source and any(word in source for word in words)
    }
    found = set()
    for path, tree in holding(candidates, (b"add_argument",)):
        options, switches = _options(tree)
        bound = _library_names(tree, libraries | _ALSO)
        if not options or not bound:
            continue
        for branch in (node for node in ast.walk(tree) if isinstance(node, ast.If)):
            used = _library_used(branch.body, bound)
            if used is None:
                continue
            for dest, pattern in _tested_values(branch.test, options):
                if pattern == SWITCHED_ON and dest in switches:
                    pattern = ""  # `--use_apex` alone turns it on
                why = f"`{os.path.basename(path)}:{branch.lineno}` uses `{used}` when it is given"
                found.update((option, pattern, why) for option in options[dest])
    return tuple(sorted(found))


def nvidia_config_values(sources: dict, libraries: frozenset, holding: Callable, imports_a_library: Callable) -> tuple:
    """(config key path, pattern of its values, why), sorted, for the config
    keys whose values pick a branch that uses an NVIDIA-only library:
    `if cfg.BN.NORM_TYPE == "sync_batchnorm_apex": import apex ...` makes
    `BN.NORM_TYPE` (the path under the config object) such a key. Only the
    files that import such a library (``imports_a_library``, on bytes) are
    parsed: the library's name alone is in most files of a large tree."""
    candidates = {
        path: source for path, source in sources.items()
        if isinstance(source, bytes) and (imports_a_library(source) or _IMPORTS_ALSO.search(source)) and _CONFIG_COMPARISON.search(source)
    }
    found = set()
    for path, tree in holding(candidates, (b"==", b" in ")):
        bound = _library_names(tree, libraries | _ALSO)
        if not bound:
            continue
        for branch in (node for node in ast.walk(tree) if isinstance(node, ast.If)):
            used = _library_used(branch.body, bound)
            if used is None:
                continue
            for key, texts in _config_comparisons(branch.test):
                why = f"`{os.path.basename(path)}:{branch.lineno}` uses `{used}` when it is given"
                found.add((key, "|".join(re.escape(text) for text in texts), why))
    return tuple(sorted(found))


_IMPORTS_ALSO = re.compile(rb"\b(?:import|from)[ \t]+(?:" + b"|".join(name.encode() for name in sorted(_ALSO)) + rb")\b")
# `cfg.BN.NORM_TYPE == "..."`, `cfg.X.Y in ("...", ...)`: what a parse would confirm.
_CONFIG_COMPARISON = re.compile(rb"\w\.\w+\.\w+[ \t]*(?:==|in)[ \t]*[\"'(\[]")


def _config_comparisons(test: ast.expr) -> Iterable[tuple]:
    """(key path, texts) for each `cfg.A.B == "text"` (or `in (...)`) the
    test makes, parts of an `and` too: an attribute chain two deep or more
    under a plain name (`args.x` is an option's, read by the flags)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], (ast.Eq, ast.In))):
            continue
        chain = _attribute_chain(part.left)
        texts = _texts(part.comparators[0])
        if chain is not None and len(chain) >= 3 and texts:
            yield ".".join(chain[1:]), texts


def _attribute_chain(node: ast.expr) -> Optional[list]:
    names = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    return [node.id, *names] if isinstance(node, ast.Name) else None


def _stem(name: str) -> bytes:
    return name.split(".")[0].rstrip("*").encode()


def _options(tree: ast.Module) -> tuple[dict, set]:
    """dest -> the option strings of each `add_argument` call that names one;
    and the dests of switches that take no value (`action="store_true"`)."""
    found: dict = {}
    switches = set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
        if call.func.attr != "add_argument":
            continue
        strings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
        if not strings:
            continue
        dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
        if not isinstance(dest, str):
            long = next((s for s in strings if s.startswith("--")), strings[0])
            dest = long.lstrip("-").replace("-", "_")
        found.setdefault(dest, []).extend(strings)
        if any(k.arg == "action" and isinstance(k.value, ast.Constant) and k.value.value == "store_true" for k in call.keywords):
            switches.add(dest)
    return found, switches


def _library_names(tree: ast.Module, libraries: frozenset) -> dict:
    """Name bound by an import of an NVIDIA-only library -> the library."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_library(alias.name, libraries):
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and is_library(node.module, libraries):
            for alias in node.names:
                bound[alias.asname or alias.name] = node.module
    return bound


def _library_used(body: list, bound: dict) -> Optional[str]:
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id in bound:
                return bound[node.id]
    return None


def _tested_values(test: ast.expr, options: dict) -> Iterable[tuple]:
    """(dest, pattern) for each option the test reads: compared with text,
    or tested alone (a switch); parts of an `and` too."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        dest = _option_read(part, options)
        if dest is not None:
            yield dest, SWITCHED_ON
        elif isinstance(part, ast.Compare) and len(part.ops) == 1:
            dest = _option_read(part.left, options)
            texts = _texts(part.comparators[0])
            if dest is not None and texts and isinstance(part.ops[0], (ast.Eq, ast.In)):
                yield dest, "|".join(re.escape(text) for text in texts)


def _option_read(node: ast.expr, options: dict) -> Optional[str]:
    """`args.sync_bn` (any object's attribute of an option's name)."""
    return node.attr if isinstance(node, ast.Attribute) and node.attr in options else None


def _texts(node: ast.expr) -> list:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []
