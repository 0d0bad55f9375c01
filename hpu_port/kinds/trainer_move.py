"""Kind ``trainer-move``: a file that trains with a library's trainer moves to its Gaudi trainer.

- ``[trainers."<qualified name>"]``: a trainer class and its Gaudi
  counterpart: ``to`` (qualified name), ``positional`` (the parameters its
  calls may pass by position, in order: the Gaudi class may order the rest
  differently) and ``advice`` (said when the move is not made).
- ``[arguments."<qualified name>"]``: a class of training arguments and its
  Gaudi counterpart (``to``, ``advice``); a call of it gets the keywords of
  ``argument-defaults`` that it does not pass (``use_habana = "True"``).
- ``needs`` (in either table, optional): ``package>=A,<B``, the releases of
  the library the Gaudi class is built on. The class moves only in a project
  that pins the library within them (``ProjectFacts.pins``); elsewhere its
  uses are reported, as the ``[names]`` are.
- ``gaudi-config``: the qualified name of the Gaudi configuration class;
  ``gaudi-config-from-arguments``: the code that makes one from the
  arguments a trainer is given (``{config}`` and ``{args}`` stand for the
  class and the arguments, as written there); ``gaudi-config-default``: the
  code that makes one when the arguments are built in the call and name no
  configuration. The trainer call gets it as ``gaudi_config=``.
- ``[names]``: other names (qualified) that are only reported, with their
  advice (trainers whose Gaudi counterparts follow another API).
- ``package``: the requirement the moved code needs, as the release it was
  tested with (``optimum-habana==1.21.2``), named on the rule's page.
- ``[pinned]``: advice that depends on the version of ``package`` the
  project pins (``ProjectFacts.pins``): ``before`` when every pinned version
  is older than ``version``, ``from`` when every one is that or newer (each
  may use ``{specifiers}``), added to the trainer's findings.
- ``gaudi-options``: the fields the Gaudi arguments classes add to the plain
  ones; ``[argument-options]``: library classes of arguments (qualified name)
  and the fields they define. A parser given a moved class beside another
  class (of the module, by its annotated fields, or of this table) with one of
  these fields would refuse the pair: the file is left as it is.
- ``launch-flags``: what a script that reads the arguments from its command
  line must be launched with, said where the class is handed to a parser.

A subclass of a trainer that another module of the project defines is
found through the project facts (``Kind.project_bases``) and treated as one
defined in the file. The move is made in a module outside any package even
where it serves several devices (a script that also probes XLA): it makes
the file Gaudi's on purpose, so code shared among devices moves with it.

The move is all or nothing in a file: every trainer call must name its
arguments (``args=`` or the second argument) with a name or attribute chain,
or build them in the call; every subclass of a trainer defined in the file
either keeps the trainer's ``__init__`` or passes ``**kwargs`` on; a trainer
called with more arguments by position, with ``*args`` or ``**kwargs``, or a
subclass that takes its own parameters, leaves the whole file as it is, with
each use reported and the reason given.
"""

from __future__ import annotations

import ast
from typing import Optional

from hpu_port.device.pins import requirement_range
from hpu_port.device.subclasses import names_handed_to_parser
from hpu_port.kinds import Kind, markdown_table, register_kind, string_list, string_table
from hpu_port.triggers import name_trigger

_TRAINER_KEYS = {"to", "positional", "advice", "needs"}
_ARGUMENT_KEYS = {"to", "advice", "needs"}


@register_kind
class TrainerMove(Kind):
    name = "trainer-move"
    KEYS = {
        "trainers": (dict, True),
        "arguments": (dict, True),
        "argument-defaults": (dict, True),
        "gaudi-config": (str, True),
        "gaudi-config-from-arguments": (str, True),
        "gaudi-config-default": (str, True),
        "names": (dict, False),
        "launch-flags": (str, False),
        "package": (str, True),
        "pinned": (dict, False),
        "gaudi-options": (list, False),
        "argument-options": (dict, False),
    }
    MESSAGE_FIELDS = frozenset({"name", "advice"})

    def build_params(self, table):
        trainers = {name: _entry(name, entry, _TRAINER_KEYS, "trainers") for name, entry in table["trainers"].items()}
        for name, entry in trainers.items():
            entry["positional"] = string_list(entry.get("positional", []), f"trainers.{name}.positional")
        arguments = {name: _entry(name, entry, _ARGUMENT_KEYS, "arguments") for name, entry in table["arguments"].items()}
        for template_key in ("gaudi-config-from-arguments", "gaudi-config-default"):
            _check_expression(table[template_key].format(config="C", args="a"), template_key)
        defaults = string_table(table["argument-defaults"], "argument-defaults")
        for keyword, code in defaults.items():
            _check_expression(code, f"argument-defaults.{keyword}")
        return {
            "trainers": trainers,
            "arguments": arguments,
            "argument-defaults": defaults,
            "gaudi-config": _dotted(table["gaudi-config"], "gaudi-config"),
            "gaudi-config-from-arguments": table["gaudi-config-from-arguments"],
            "gaudi-config-default": table["gaudi-config-default"],
            "names": string_table(table.get("names", {}), "names"),
            "launch-flags": table.get("launch-flags", ""),
            "package": _requirement(table["package"]),
            "pinned": _pinned(table.get("pinned")),
            "gaudi-options": frozenset(string_list(table.get("gaudi-options", []), "gaudi-options")),
            "argument-options": {
                name: frozenset(string_list(options, f"argument-options.{name}")) for name, options in table.get("argument-options", {}).items()
            },
        }

    def describe(self, rule):
        moves = {name: entry["to"] for table in ("trainers", "arguments") for name, entry in rule.params[table].items()}
        table = f"The moved code needs `{rule.params['package']}` (`pip install {rule.params['package']}`).\n\n"
        table += markdown_table(("name", "moves to"), moves, code_values=True)
        needs = {name: entry["needs"] for table in ("trainers", "arguments") for name, entry in rule.params[table].items() if "needs" in entry}
        if needs:
            table += "\n\nMoved only in a project that pins these releases (elsewhere reported):\n\n"
            table += markdown_table(("name", "needs"), needs, code_values=True)
        if rule.params["names"]:
            table += "\n\nReported only:\n\n" + markdown_table(("name", "what to do"), rule.params["names"], code_values=False)
        return table

    def handled_names(self, rule):
        return set(rule.params["trainers"]) | set(rule.params["arguments"]) | set(rule.params["names"])

    def triggers(self, rule):
        return [name_trigger(name) for name in self.handled_names(rule)]

    def screen(self, rule, view):
        # `Trainer` is a word of most training code; a use of the library's
        # needs an import that makes some name refer to it.
        return view.may_reference(frozenset(self.handled_names(rule)))

    def project_bases(self, rule):
        return frozenset(rule.params["trainers"]) | frozenset(rule.params["arguments"])

    def argument_fields(self, rule):
        return {"": rule.params["gaudi-options"], **rule.params["argument-options"]}

    def places(self, rule, view):
        # A subclass's calls and `__init__` hold no trainer name, yet the move
        # edits them: every line that names a trainer, or a class of the file
        # built on one, is a place.
        last_parts = {name.rsplit(".", 1)[-1] for name in self.handled_names(rule)}
        local = _subclasses(view.tree, last_parts)
        wanted = last_parts | local
        spans, classes, handed = [], [], set()
        for node in ast.walk(view.tree):
            if isinstance(node, ast.Name) and node.id in wanted or isinstance(node, ast.Attribute) and node.attr in wanted:
                spans.append((node.lineno, node.end_lineno))
            elif isinstance(node, ast.ClassDef):
                classes.append(node)
                if node.name in local:
                    spans.extend((item.lineno, item.end_lineno) for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__")
            elif isinstance(node, ast.Call):
                handed |= names_handed_to_parser(node)
        # The fields of a class handed to a parser are options beside the moved class's.
        spans += [(node.lineno, node.end_lineno) for node in classes if node.name in handed]
        return spans


def _subclasses(tree: ast.Module, bases: set) -> set:
    """The names of the module's classes built on one of ``bases`` (by last
    name), directly or through another such class of the module."""
    found: set = set()
    grown = True
    while grown:
        grown = False
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name not in found:
                names = {base.id if isinstance(base, ast.Name) else getattr(base, "attr", None) for base in node.bases}
                if names & (bases | found):
                    found.add(node.name)
                    grown = True
    return found


def _entry(name: str, entry, keys: set, table: str) -> dict:
    where = f"{table}.{name}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where!r} must be a table")
    unknown = set(entry) - keys
    if unknown:
        raise ValueError(f"{where!r}: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(keys))})")
    for key in ("to", "advice"):
        if not isinstance(entry.get(key), str):
            raise ValueError(f"{where!r}: {key!r} must be a string")
    _dotted(name, table)
    _dotted(entry["to"], f"{where}.to")
    entry = dict(entry)
    if "needs" in entry:
        needs_range = requirement_range(entry["needs"]) if isinstance(entry["needs"], str) else None
        if needs_range is None:
            raise ValueError(f"{where!r}: 'needs' must be written `package>=A,<B`, got {entry['needs']!r}")
        entry["needs-range"] = needs_range  # (package, lowest, below), read for every file
    return entry


def _pinned(table) -> Optional[dict]:
    if table is None:
        return None
    pinned = string_table(table, "pinned")
    missing = {"package", "version", "before", "from"} - set(pinned)
    if missing:
        raise ValueError(f"'pinned' needs {', '.join(sorted(missing))}")
    return pinned


def _requirement(text: str) -> str:
    name, _, version = text.partition("==")
    if not name or not version or not all(part.isdigit() for part in version.split(".")):
        raise ValueError(f"'package': {text!r} is not `name==version`")
    return text


def _dotted(name: str, key: str) -> str:
    if not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"{key!r}: {name!r} is not a dotted Python name")
    return name


def _check_expression(code: str, key: str) -> None:
    try:
        ast.parse(code, mode="eval")
    except SyntaxError:
        raise ValueError(f"{key!r}: {code!r} is not a Python expression") from None
