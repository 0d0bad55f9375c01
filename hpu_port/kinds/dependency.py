"""Kind ``dependency``: requirements that name one of ``packages`` (report only).

Read in `requirements*.txt` files, in `pyproject.toml` (`[project]`
dependencies, optional dependencies and dependency groups, Poetry
dependencies), in `setup.cfg` (`install_requires`, `extras_require`), in conda
environment files (`dependencies`, with their `pip:` list), in the packages
that `pip install` / `conda install` commands name (scripts, Dockerfile `RUN`
lines, CI scripts, notebook `!pip` lines) and in the
``keywords`` of a `setup()` call in Python (``install_requires``,
``extras_require``). Package names are compared as pip compares them (case,
``-``, ``_`` and ``.`` do not matter); a name may end in ``*`` (``nvidia-*``),
and ``not-packages`` names those such a pattern would take wrongly.
``packages`` is a list, or a table from package to the advice the message
shows as ``{advice}``. With ``outside-ci``, the scripts of CI pipelines
are not read (what a CI job installs is that job's own environment); with
``pinned-only``, only requirements that pin a version or bound it from above
(`torch==2.1.0`, `torch<2.3`) are reported: a bare name or a lower bound is
satisfied by the build that is installed, and pip leaves it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Iterator, Optional

from hpu_port import filetypes
from hpu_port.kinds import DocumentKind, Match, register_kind, string_list, string_table
from hpu_port.triggers import name_trigger

# A version pin or upper bound, which the installed build may not satisfy.
# Also conda's `name=1.2` (one `=` after the name: an exact version).
_PINNED = re.compile(r"==|~=|<|@\s*(?:git\+|https?:|file:)|^\s*(?:[\w.-]+::)?[A-Za-z0-9][\w.-]*\s*=[^=]")
_NAME = re.compile(r"\s*(?:[A-Za-z0-9_.-]+::)?([A-Za-z0-9][A-Za-z0-9._-]*)")


# The owners of Intel's Gaudi forks on GitHub: what they publish is the Gaudi build.
_GAUDI_OWNERS = re.compile(r"github\.com[/:](HabanaAI|intel)/", re.IGNORECASE)


def _repository_package(url: str):
    """The project a `git+` requirement installs: its `#egg=` name, else the
    repository's name (`git+https://github.com/Dao-AILab/causal-conv1d@v1.4.0`)."""
    if _GAUDI_OWNERS.search(url):
        return None  # Intel's Gaudi build of it (`git+https://github.com/HabanaAI/DeepSpeed.git@1.19.0`)
    egg = re.search(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)", url)
    if egg:
        return normalized(egg.group(1))
    path = re.split(r"[#?]", url, maxsplit=1)[0].rstrip("/")
    name = path.rsplit("/", 1)[-1].split("@", 1)[0]
    name = name[:-4] if name.endswith(".git") else name
    return normalized(name) if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) else None


def _archive_package(url: str):
    """The project a wheel or source archive at ``url`` holds, from its file
    name (`.../KNN_CUDA-0.2-py3-none-any.whl` -> knn-cuda); None for any
    other address (an index, a page)."""
    path = re.split(r"[#?;\s]", url, maxsplit=1)[0]
    file = path.rsplit("/", 1)[-1]
    if file.endswith(".whl"):
        name = file.split("-", 1)[0]
    else:
        archive = re.fullmatch(r"(.+?)-\d[^-]*\.(?:tar\.gz|tar\.bz2|zip)", file)
        name = archive.group(1) if archive else ""
    return normalized(name) if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._]*", name or "-") else None


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(text: str):
    """The project a requirement line or string names (`torch>=2.1; ...` -> torch,
    conda's `pytorch::pytorch-cuda=12.1` -> pytorch-cuda)."""
    stripped = text.lstrip()
    if stripped.startswith("git+"):
        return _repository_package(stripped)
    if stripped.startswith(("http:", "https:", "file:")):
        return _archive_package(stripped)
    if stripped.startswith("-"):
        return None
    match = _NAME.match(text)
    return normalized(match.group(1)) if match else None


@register_kind
class Dependency(DocumentKind):
    name = "dependency"
    KEYS = {"packages": ((list, dict), True), "keywords": (list, False), "outside-ci": (bool, False), "pinned-only": (bool, False),
            "not-packages": (list, False)}
    MESSAGE_FIELDS = frozenset({"name", "file", "advice"})
    FORMATS = ("requirements", "pyproject", "setup-cfg", "yaml", "shell", "dockerfile", "notebook", "makefile", "apptainer")
    READS_PYTHON = True  # `install_requires` in setup.py

    def build_params(self, table):
        packages = table["packages"]
        advice = string_table(packages, "packages") if isinstance(packages, dict) else dict.fromkeys(string_list(packages, "packages"), "")
        return {
            "packages": {normalized(p): text for p, text in advice.items()},
            "keywords": set(string_list(table.get("keywords", []), "keywords")),
            "outside-ci": table.get("outside-ci", False),
            "pinned-only": table.get("pinned-only", False),
            "not-packages": frozenset(normalized(p) for p in string_list(table.get("not-packages", []), "not-packages")),
        }

    def describe(self, rule) -> str:
        if not any(rule.params["packages"].values()):
            return ""
        from hpu_port.kinds import markdown_table

        return markdown_table(("package", "instead"), rule.params["packages"], code_values=False)

    def triggers(self, rule):
        return [name_trigger(keyword) for keyword in sorted(rule.params["keywords"])]

    def advice(self, rule, requirement: str) -> Optional[str]:
        """The advice for a requirement this rule names, None if it names none."""
        name = requirement_name(requirement)
        if name is None:
            return None
        if rule.params["pinned-only"] and not _PINNED.search(requirement.split(";", 1)[0]):
            return None  # `torch`, `torch>=2`: the installed Gaudi build satisfies it, pip leaves it
        packages = rule.params["packages"]
        if name in rule.params["not-packages"]:
            return None  # named like the others, but not one of them (`nvidia-pytriton` runs without GPUs)
        if name in packages:
            return packages[name]
        for pattern, text in packages.items():
            if "*" in pattern and fnmatch.fnmatchcase(name, pattern):
                return text
        return None

    def match(self, rule, document, options) -> Iterator[Match]:
        if rule.params["outside-ci"] and filetypes.is_ci_file(document.path):
            return  # a CI job's own environment, not the one training runs in
        file = os.path.basename(document.path) or document.format
        for word in document.requirements():
            advice = self.advice(rule, word.value)
            if advice is not None:
                yield Match(word.span, rule.message.format(name=word.value, file=file, advice=advice))
