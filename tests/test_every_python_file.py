"""Every Python file this interpreter can find ports: its standard library and
the test environment's site-packages, each with CUDA code appended so that it
is really parsed and rewritten, in memory, through the engine's per-file entry.

No file fails but those listed below with their error (test data that is not
valid Python, valid Python that libcst itself cannot read); every output
parses (with libcst, and with Python's own parser when the input did); a
second run over the output changes nothing; `check` can analyse every file
`rewrite` can rewrite.

By default a fixed sample of the files runs (chosen by a hash of their names,
so the same files run everywhere); `--all-files` (or HPU_PORT_ALL_FILES=1)
runs all of them. Files are ported in one process per CPU.
"""

from __future__ import annotations

import hashlib
import os
import sysconfig
from pathlib import Path

import libcst as cst
import pytest

from tests.test_properties import parses

from hpu_port import deep_stack, filetypes
from hpu_port.engine import GENERATED_MARKER, GENERATED_SCAN, port_bytes
from tests.conftest import make_ruleset, native_recursion_is_capped

CUDA_TAIL = b"import torch\ntorch.cuda.synchronize()\n"
PORTED_TAIL = b"torch.hpu.synchronize()"
# About one file in this many runs by default; the files below always do.
SAMPLE_ONE_IN = 25
ALWAYS = [
    "stdlib/pydoc_data/topics.py",  # thousands of implicitly concatenated strings
]
TOO_DEEP = "too deeply nested to process"
LIBCST_CANNOT_READ = "valid Python that libcst, the parser hpu-port uses, cannot read"
# The files that fail, with the start of the error they get: test data that
# is not valid Python on purpose, and valid Python libcst cannot read.
EXPECTED_ERRORS = {
    # Python 2 code: test data for lib2to3.
    "stdlib/lib2to3/tests/data/bom.py": "syntax error",
    "stdlib/lib2to3/tests/data/crlf.py": "syntax error",
    "stdlib/lib2to3/tests/data/different_encoding.py": "syntax error",
    "stdlib/lib2to3/tests/data/false_encoding.py": "syntax error",
    "stdlib/lib2to3/tests/data/py2_test_grammar.py": "syntax error",
    # Test data for Python's tokenizer: declarations and characters it refuses.
    "stdlib/test/tokenizedata/bad_coding.py": "cannot decode: unknown encoding: uft-8",
    "stdlib/test/tokenizedata/bad_coding2.py": "cannot decode: encoding problem",
    "stdlib/test/tokenizedata/badsyntax_3131.py": "syntax error at line 2, column 1: invalid character",
    "stdlib/test/tokenizedata/badsyntax_pep3120.py": "cannot decode as utf-8",
    # libcst cannot read a parenthesized annotated name: `(x): int`.
    "stdlib/test/test_grammar.py": LIBCST_CANNOT_READ,
    "stdlib/test/typinganndata/ann_module.py": LIBCST_CANNOT_READ,
}

_RULES = None


def rules():
    """Every rule, unsafe fixes and float16 rewriting on: the most any run rewrites."""
    global _RULES
    if _RULES is None:
        _RULES = make_ruleset(["ALL"], unsafe_fixes=True, fp16_to_bf16=True)
    return _RULES


def corpus() -> dict[str, Path]:
    """Every .py file of the standard library and of site-packages, by a name
    that is the same on every machine (``stdlib/json/decoder.py``)."""
    paths = sysconfig.get_paths()
    found: dict[str, Path] = {}
    stdlib = Path(paths["stdlib"])
    for path in stdlib.rglob("*.py"):
        relative = path.relative_to(stdlib)
        if not {"site-packages", "dist-packages"} & set(relative.parts):
            found[f"stdlib/{relative.as_posix()}"] = path
    for root in {Path(paths["purelib"]), Path(paths["platlib"])}:
        for path in root.rglob("*.py"):
            found.setdefault(f"site-packages/{path.relative_to(root).as_posix()}", path)
    return dict(sorted(found.items()))


def in_sample(name: str) -> bool:
    digest = hashlib.sha256(name.encode()).digest()
    return name in ALWAYS or int.from_bytes(digest[:4], "big") % SAMPLE_ONE_IN == 0


def with_cuda_code(source: bytes) -> bytes:
    if source and not source.endswith((b"\n", b"\r")):
        source += b"\n"
    return source + CUDA_TAIL


def problems_of(name: str, path: Path) -> list[str]:
    """What went wrong porting one file (nothing, for a file that ports)."""
    return deep_stack.call(_problems_of, name, path.read_bytes())


def _problems_of(name: str, original: bytes) -> list[str]:
    source = with_cuda_code(original)
    result = port_bytes(name, source, rules(), True)
    if result.error:
        expected = EXPECTED_ERRORS.get(name)
        if expected is not None and result.error.startswith(expected):
            return []
        if result.error == TOO_DEEP and native_recursion_is_capped():
            return []  # this Python cannot go deep enough for the file
        return [f"{name}: {result.error}"]
    problems = []
    checked = port_bytes(name, source, rules(), False)
    if checked.error:
        problems.append(f"{name}: check: {checked.error}")
    output = result.new_source if result.new_source is not None else source
    # Generated files and build scripts (setup.py) are reported on, not rewritten.
    rewritten_here = GENERATED_MARKER not in source[:GENERATED_SCAN] and not filetypes.is_build_script(name)
    if rewritten_here and PORTED_TAIL not in output:
        problems.append(f"{name}: the appended CUDA line was not rewritten")
    problems.extend(f"{name}: {problem}" for problem in _parse_problems(source, output))
    again = port_bytes(name, output, rules(), True)
    if again.error or again.new_source not in (None, output):
        problems.append(f"{name}: a second run changed the output ({again.error or 'new edits'})")
    return problems


def _parse_problems(source: bytes, output: bytes) -> list[str]:
    problems = []
    try:
        cst.parse_module(output)
    except Exception as exc:
        problems.append(f"the output does not parse with libcst: {str(exc).splitlines()[0]}")
    if _python_parses(source) and not _python_parses(output):
        problems.append("the output does not parse with Python's parser")
    return problems


def _python_parses(code: bytes) -> bool:
    return parses(code)


def _problems_of_item(item: tuple) -> list[str]:
    return problems_of(*item)


def run_all(files: dict[str, Path], jobs: int) -> list[str]:
    items = list(files.items())
    if jobs <= 1:
        return [problem for item in items for problem in _problems_of_item(item)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return [problem for found in pool.map(_problems_of_item, items, chunksize=8) for problem in found]


@pytest.fixture(scope="module")
def all_files(request) -> bool:
    return request.config.getoption("--all-files") or os.environ.get("HPU_PORT_ALL_FILES") == "1"


@pytest.mark.corpus
def test_every_file_of_the_standard_library_and_site_packages_ports(all_files):
    files = corpus()
    assert len(files) > 1000  # the standard library alone has more
    if not all_files:
        files = {name: path for name, path in files.items() if in_sample(name)}
    from hpu_port.parallel import default_jobs

    problems = run_all(files, default_jobs())
    assert problems == []
