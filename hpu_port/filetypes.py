"""What kind of file a path is: the one place that decides which parser reads it.

Python sources and notebooks go to libcst; every other type is a *document*
read by a parser in ``hpu_port.formats`` (shell scripts, YAML, JSON,
Dockerfiles, CMake, CUDA sources, requirements files, ...). Detection looks
at the file's name first, then, for names that say nothing (a script without
a suffix), at its first bytes.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Optional

PYTHON = "python"
NOTEBOOK = "notebook"
REQUIREMENTS = "requirements"
PYPROJECT = "pyproject"
SETUP_CFG = "setup-cfg"
SHELL = "shell"
YAML = "yaml"
JSON = "json"
DOCKERFILE = "dockerfile"
CMAKE = "cmake"
CUDA = "cuda"
TOML = "toml"
MAKEFILE = "makefile"
APPTAINER = "apptainer"
DOTENV = "dotenv"

# Types read by the document engine (everything but Python and notebooks).
DOCUMENT_TYPES = (REQUIREMENTS, PYPROJECT, SETUP_CFG, SHELL, YAML, JSON, TOML, DOCKERFILE, CMAKE, CUDA, MAKEFILE, APPTAINER, DOTENV)
ALL_TYPES = (PYTHON, NOTEBOOK, *DOCUMENT_TYPES)

# Whole names (case-sensitive, as the tools that read them are).
_NAMES = {
    "pyproject.toml": PYPROJECT,
    "setup.cfg": SETUP_CFG,
    "CMakeLists.txt": CMAKE,
    "Containerfile": DOCKERFILE,
    "Makefile": MAKEFILE,
    "makefile": MAKEFILE,
    "GNUmakefile": MAKEFILE,
    # Environment files hold `NAME=value` lines (direnv's `.envrc` is a shell script).
    ".env": DOTENV,
    # DeepSpeed's launcher exports the `NAME=value` lines of `.deepspeed_env` on every node.
    ".deepspeed_env": DOTENV,
    ".envrc": SHELL,
}
# Name patterns, tried in order.
_PATTERNS = (
    # `requirement.txt` (singular) is common enough in training repositories to count.
    ("requirement*.txt", REQUIREMENTS),
    ("*requirements.txt", REQUIREMENTS),
    ("*requirement.txt", REQUIREMENTS),
    ("requirement*.in", REQUIREMENTS),
    # Variants a project keeps beside its main one (`pyproject-gpu.toml`).
    ("pyproject[-_.]*.toml", PYPROJECT),
    ("Dockerfile", DOCKERFILE),
    ("Dockerfile.*", DOCKERFILE),
    ("Dockerfile-*", DOCKERFILE),
    ("Dockerfile_*", DOCKERFILE),
    ("*.Dockerfile", DOCKERFILE),
    ("*.dockerfile", DOCKERFILE),
    (".env.*", DOTENV),
    ("*.env", DOTENV),
)
_REQUIREMENTS_FOLDERS = frozenset({"requirements", "requirements.d"})
_SUFFIXES = {
    ".py": PYTHON,
    ".pyi": PYTHON,
    ".ipynb": NOTEBOOK,
    ".sh": SHELL,
    ".bash": SHELL,
    ".zsh": SHELL,
    ".ksh": SHELL,
    ".sbatch": SHELL,
    ".slurm": SHELL,
    ".pbs": SHELL,
    ".yml": YAML,
    ".yaml": YAML,
    ".json": JSON,
    ".toml": TOML,
    ".cmake": CMAKE,
    ".mk": MAKEFILE,
    ".cu": CUDA,
    ".cuh": CUDA,
}
_SHELLS = re.compile(rb"^#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+)?(?:-\S+\s+)*(ba|z|k|da)?sh\b")
_PYTHON_SHEBANG = re.compile(rb"^#!.*\bpython")
# Scheduler directives mark a job script even without a `#!` line.
_JOB_DIRECTIVE = re.compile(rb"^#(SBATCH|PBS|BSUB|\$)\s", re.MULTILINE)
HEAD_SIZE = 512
_APPTAINER_SUFFIX = ".def"
_CONF_SUFFIX = ".conf"
_APPTAINER_HEADER = re.compile(rb"^[ \t]*Bootstrap:", re.MULTILINE | re.IGNORECASE)


def by_name(path: str) -> Optional[str]:
    """The type a file's name alone gives, or None."""
    folder, name = os.path.split(path)
    if name in _NAMES:
        return _NAMES[name]
    # `requirements/base.txt`, `requirements/gpu.in`: the folder says it.
    if os.path.basename(folder) in _REQUIREMENTS_FOLDERS and name.endswith((".txt", ".in")):
        return REQUIREMENTS
    for pattern, kind in _PATTERNS:
        if fnmatch.fnmatchcase(name, pattern):
            return kind
    return _SUFFIXES.get(os.path.splitext(name)[1].lower())


def by_content(head: bytes) -> Optional[str]:
    """The type the first bytes of a file without a telling name give, or None."""
    first = head.split(b"\n", 1)[0]
    if _PYTHON_SHEBANG.match(first):
        return PYTHON
    if _SHELLS.match(first) or _JOB_DIRECTIVE.search(head):
        return SHELL
    return None


def detect(path: str, head: Optional[bytes] = None) -> Optional[str]:
    """The type of the file at ``path``; ``head`` (its first bytes) is read
    from disk when needed and not given. None: no parser reads it."""
    kind = by_name(path)
    if kind is None and path.endswith(_APPTAINER_SUFFIX):
        # `.def` names many things; an Apptainer definition starts with its bootstrap agent.
        return APPTAINER if _APPTAINER_HEADER.search(head if head is not None else read_head(path)) else None
    if kind is None and path.endswith(_CONF_SUFFIX):
        # `ds_stage3.conf`: a DeepSpeed config is JSON whatever its name; other `.conf` files are not read.
        return JSON if (head if head is not None else read_head(path)).lstrip().startswith(b"{") else None
    if kind is not None or "." in os.path.basename(path).lstrip("."):
        return kind
    if head is None:
        head = read_head(path)
    return by_content(head)


def read_head(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(HEAD_SIZE)
    except OSError:
        return b""


def is_build_script(path: str) -> bool:
    """Python files that build or install the project rather than run it."""
    return os.path.basename(path) in BUILD_SCRIPTS


BUILD_SCRIPTS = frozenset({"setup.py"})


def path_words(path: str, packages: frozenset) -> frozenset:
    """The name of the file's directory and its words (`recipes/ascend_npu/`:
    ascend_npu, ascend, npu), of the package directories above it
    (``packages``: the absolute folders that hold an `__init__.py`, and their
    words: `nvshmem_copy_service/core/kernel.py` gives nvshmem_copy_service and
    nvshmem too) and the words of its own name
    (`quantizers/bitsandbytes/bnb_quantizer.py`: bitsandbytes, bnb, quantizer,
    bnb_quantizer; `llama2_flash_attn_patch.py`: flash_attn, two words in a
    row), from its absolute path, so that where the run starts
    changes nothing. Directories above the package are the user's, not the code's."""
    parent, name = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(name)[0]
    split = re.split(r"[_.\-]+", stem)
    # Two words in a row name a library too (`llama2_flash_attn_patch.py`: flash_attn).
    pairs = [f"{first}_{second}" for first, second in zip(split, split[1:])]
    folder = os.path.basename(parent)
    folders = [folder]
    if folder in _GENERIC_FOLDERS:
        # `runtime/triton_trtllm/scripts/export.py`: the scripts are the folder above's.
        folders.append(os.path.basename(os.path.dirname(parent)))
    words = {stem, *split, *pairs, *_package_directories(parent, packages)}
    for each in folders:
        words |= {each, *re.split(r"[_.\-]+", each)}
    return frozenset(word for word in words if word)


# Folders named for what their files are, not whose: the folder above says whose.
_GENERIC_FOLDERS = frozenset({"scripts", "script", "tools", "utils", "examples", "tests", "test"})


def _package_directories(directory: str, packages: frozenset):
    while directory in packages:
        directory, name = os.path.split(directory)
        if not name:
            return
        yield name
        yield from re.split(r"[_.\-]+", name)


_CI_FOLDERS = (".github/", ".circleci/", ".gitlab/", ".buildkite/", ".azure/", ".azure-pipelines/")
_CI_FILES = frozenset({".gitlab-ci.yml", ".gitlab-ci.yaml", ".travis.yml", "azure-pipelines.yml", "bitbucket-pipelines.yml", "cloudbuild.yaml"})


def is_ci_file(path: str) -> bool:
    """A CI pipeline's definition, by where it lies or its name."""
    normal = "/" + path.replace("\\", "/")
    name = normal.rsplit("/", 1)[-1]
    return any(folder in normal for folder in _CI_FOLDERS) or name in _CI_FILES or "pipeline" in name
