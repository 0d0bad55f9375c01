"""The package's layers: every import goes down, and the declaring side never needs libcst.

Each module sits on one floor; it may import only modules on lower floors
(imports inside functions included). Floors, top to bottom: the command line;
running over paths, rule selection, reports and docs; the per-file engine and
what drives it; the libcst matching of each kind; the loaded rule set; the
kinds' declarations; the context kinds report through; small leaves.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hpu_port"

FLOORS = [
    ["__main__"],
    ["entry"],
    ["cli"],
    ["terminal"],
    ["runner", "selection", "report", "docs", "options", "rule_listing"],
    # What a run does once every file is ported (the launch lines of moved scripts).
    ["launch_flags"],
    ["parallel", "examples", "report_sarif", "report_markdown", "report_ci", "report_html", "baseline", "mode_choice"],
    ["engine", "planning", "toolkit_log"],
    ["narrow", "nesting", "visitors", "documents", "parse_problems"],
    ["settings", "rules"],
    ["kinds", "rule_cache"],
    ["context"],
    ["positions", "branches", "cache", "config"],
    ["files", "formats"],
    ["sealed"],
    ["model", "filetypes", "results", "frameworks", "triggers", "walk", "names", "edits", "suppressions", "splice",
     "notebooks", "gitignore", "deep_stack", "tempfiles", "project", "left_unused", "imported_modules"],
    # Searching ranges and matching sequences in bounded time.
    ["intervals", "diffing"],
    # Where isort would put a new import.
    ["import_order"],
    # What the project's ruff or isort configuration says of import order.
    ["lint_config"],
    # The device evidence: data every floor above may read (frameworks too).
    ["device"],
    # The standard parser's node fields, and a fast walk over them.
    ["ast_nodes"],
    # Name patterns answered without a regular expression per pattern; a
    # file's words, and the statement shapes looked for in its bytes.
    ["patterns", "words", "shapes"],
    ["_compat"],
]
# A larger number is a lower floor.
FLOOR = {name: number for number, names in enumerate(FLOORS) for name in names}

# What loading rules, screening files and answering from the cache use: none
# of it may import libcst, whose import costs more than the rest of such a run.
WITHOUT_LIBCST = ["kinds", "settings", "rules", "rule_cache", "selection", "runner", "parallel", "cache", "files",
                  "config", "results", "model", "triggers", "narrow", "report", "report_sarif", "report_markdown",
                  "report_ci", "report_html", "planning", "toolkit_log", "baseline", "mode_choice",
                  "cli", "terminal", "options", "rule_listing", "suppressions", "notebooks", "gitignore", "_compat", "documents",
                  "formats", "filetypes", "deep_stack", "tempfiles", "sealed", "device", "frameworks", "project",
                  "nesting", "intervals", "diffing", "lint_config", "left_unused", "ast_nodes", "shapes", "launch_flags",
                  "imported_modules"]


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts == ("__init__",):
            continue
        yield parts[0], path


def imported(path: Path, top_level_only: bool = False):
    """(module, line) of every import in ``path``: hpu-port's by their first
    component under the package, others by their top-level name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = _top_level(tree) if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "hpu_port":
                yield from ((a.name, node.lineno) for a in node.names if a.name != "__version__")
            else:
                yield _component(node.module), node.lineno
        elif isinstance(node, ast.Import):
            yield from ((_component(a.name), node.lineno) for a in node.names)


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if parts[0] == "hpu_port" and len(parts) > 1 else parts[0]


def _top_level(tree):
    """Statements run at import, outside `if TYPE_CHECKING:` blocks."""
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        yield from ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else _class_level(node)


def _class_level(node):
    if isinstance(node, ast.ClassDef):
        for child in node.body:
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from ast.walk(child)


def test_every_module_has_a_floor():
    missing = sorted({name for name, _ in modules()} - set(FLOOR))
    assert not missing, f"give these modules a floor in FLOORS: {missing}"


@pytest.mark.parametrize("name,path", list(modules()), ids=lambda v: str(v) if isinstance(v, str) else "")
def test_imports_only_go_down(name, path):
    upward = [
        f"{path.relative_to(PACKAGE)}:{line} imports {target}, which is not on a lower floor"
        for target, line in imported(path)
        if target in FLOOR and target != name and FLOOR[target] <= FLOOR[name]
    ]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("name", WITHOUT_LIBCST)
def test_the_declaring_side_never_imports_libcst(name):
    paths = [path for module, path in modules() if module == name]
    assert paths
    found = [f"{p.relative_to(PACKAGE)}:{line}" for p in paths for target, line in imported(p, True) if target == "libcst"]
    assert not found, found


def test_the_checks_see_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from hpu_port.cli import main\nimport libcst as cst\n")
    assert ("cli", 1) in set(imported(bad))
    assert ("libcst", 2) in set(imported(bad, True))


def test_no_public_class_is_defined_twice():
    # A copy of a class one layer up (an Options beside model.Options) silently
    # splits the program's data in two: equal values stop comparing equal.
    homes: dict = {}
    for _, path in modules():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                homes.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    twice = {name: places for name, places in homes.items() if len(places) > 1}
    assert not twice, twice


def test_every_kind_is_found_in_the_module_named_for_it():
    """get_kind imports only the module a kind's name points to; a kind
    declared elsewhere would still be found, but only after importing all."""
    from hpu_port import kinds

    for name in kinds.kind_names():
        assert type(kinds.get_kind(name)).__module__ == kinds.declaring_module(name), name


def test_a_kind_with_a_visitor_module_says_it_reads_python():
    """Python files are screened with the rules whose kind says it reads
    Python: a visitor of a kind that does not say so would never run."""
    from hpu_port import kinds

    for name in kinds.kind_names():
        kind = kinds.get_kind(name)
        module = type(kind).__module__.rsplit(".", 1)[1]
        if (PACKAGE / "visitors" / f"{module}.py").exists():
            assert kind.READS_PYTHON, name
        if not kind.READS_PYTHON:
            assert isinstance(kind, kinds.DocumentKind), name
