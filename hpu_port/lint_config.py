"""The import order a project's own tools enforce, read from their configuration.

ruff's `I` rules and isort put a new third-party import where their settings
say; the file shows most of them (whether `from` lines are sorted among plain
ones), but not all: which modules are the project's own, a section of its own
for torch, a blank line between plain and `from` imports. The nearest ruff
configuration with an isort table wins (`.ruff.toml`, `ruff.toml`,
`pyproject.toml`'s `[tool.ruff]`), then isort's own (`.isort.cfg`,
`pyproject.toml`'s `[tool.isort]`, `setup.cfg`, `tox.ini`). A file that
cannot be read gives no style: the order is then inferred from the module.
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from hpu_port._compat import toml


@dataclass(frozen=True)
class ImportStyle:
    """What the project's ruff or isort configuration says about import order
    (read below); the defaults leave it to the module."""

    # Modules the project calls its own (`known-first-party`): not third-party.
    first_party: tuple[str, ...] = ()
    # `force-sort-within-sections`; None: as the module's imports show.
    force_sort: Optional[bool] = None
    # torch has a section of its own: Gaudi's import is third-party, not beside it.
    torch_own_section: bool = False
    # Blank lines between a section's plain and `from` imports.
    lines_between_types: int = 0
    # torch's own section comes before the third-party one (`section-order`, isort `sections`).
    torch_before_third_party: bool = False


DEFAULT_STYLE = ImportStyle()

# isort's built-in sections; any other `known_<name>` (or ruff `sections` key) is a section of the project's.
_ISORT_SECTIONS = {"future", "standard_library", "third_party", "first_party", "local_folder"}
# isort profiles that sort `from` imports among plain ones.
_FORCE_SORT_PROFILES = {"google", "open_stack", "plone"}


@lru_cache(maxsize=None)
def import_style_for_directory(directory: str) -> ImportStyle:
    """The import style of the nearest ruff or isort configuration above
    ``directory`` (each folder looked at once per run: a tree's folders
    share their parents)."""
    folder = Path(directory)
    ruff = _ruff_style(folder)
    if ruff is not None and ruff[1]:
        return ruff[0]
    # A ruff configuration without an isort table leaves isort's own, beside it, in charge of the order.
    style = _isort_style(folder)
    if style is not None:
        return style
    if ruff is not None:
        return ruff[0]
    parent = folder.parent
    return ImportStyle() if parent == folder else import_style_for_directory(str(parent))


def _ruff_style(folder: Path) -> Optional[tuple[ImportStyle, bool]]:
    """The style of a ruff configuration in ``folder``, and whether it has an isort table."""
    for name, prefix in ((".ruff.toml", ()), ("ruff.toml", ()), ("pyproject.toml", ("tool", "ruff"))):
        data = _toml_file(folder / name)
        if data is None:
            continue
        table = _dig(data, prefix)
        if table is None:
            continue
        isort = _dig(table, ("lint", "isort"))
        if isort is None:
            isort = _dig(table, ("isort",))
        return _from_ruff(isort or {}), isort is not None
    return None


def _from_ruff(table: dict) -> ImportStyle:
    sections = table.get("sections") if isinstance(table.get("sections"), dict) else {}
    torch_sections = [name for name, modules in sections.items() if _lists_torch(modules)]
    return ImportStyle(
        first_party=_names(table.get("known-first-party")),
        force_sort=_flag(table.get("force-sort-within-sections")),
        torch_own_section=bool(torch_sections),
        lines_between_types=_number(table.get("lines-between-types")),
        torch_before_third_party=_comes_first(table.get("section-order"), torch_sections, "third-party"),
    )


def _isort_style(folder: Path) -> Optional[ImportStyle]:
    data = _toml_file(folder / "pyproject.toml")
    table = _dig(data, ("tool", "isort")) if data is not None else None
    if table is not None:
        return _from_isort({key.replace("-", "_"): value for key, value in table.items()})
    for name, sections in ((".isort.cfg", ("settings", "isort")), ("setup.cfg", ("isort", "tool:isort")),
                           ("tox.ini", ("isort", "tool:isort"))):
        values = _ini_section(folder / name, sections)
        if values is not None:
            return _from_isort(values)
    return None


def _from_isort(values: dict) -> ImportStyle:
    force_sort = _flag(values.get("force_sort_within_sections"))
    if force_sort is None and str(values.get("profile", "")).strip() in _FORCE_SORT_PROFILES:
        force_sort = True
    own_sections = {
        key[len("known_"):] for key in values if key.startswith("known_") and key[len("known_"):] not in _ISORT_SECTIONS
    }
    torch_sections = [name for name in own_sections if _lists_torch(values[f"known_{name}"])]
    return ImportStyle(
        first_party=_names(values.get("known_first_party")),
        force_sort=force_sort,
        torch_own_section=bool(torch_sections),
        lines_between_types=_number(values.get("lines_between_types")),
        torch_before_third_party=_comes_first(values.get("sections"), torch_sections, "thirdparty"),
    )


def _comes_first(order, sections: list, third_party: str) -> bool:
    """Whether the section order puts one of ``sections`` before the
    third-party section; an order that names neither keeps the default
    (a custom section after the built-in ones)."""
    names = [name.lower().replace("_", "-") for name in _ordered_names(order)]
    third = third_party.replace("_", "-")
    wanted = {name.lower().replace("_", "-") for name in sections}
    positions = [index for index, name in enumerate(names) if name in wanted]
    return bool(positions) and third in names and min(positions) < names.index(third)


def _ordered_names(value) -> list:
    if isinstance(value, str):
        value = value.replace("\n", ",").split(",")
    if not isinstance(value, (list, tuple)):
        return []
    return [str(item).strip() for item in value if str(item).strip()]


def _lists_torch(modules) -> bool:
    return any(name == "torch" or name.startswith("torch.") or name in ("torch*", "torch.*") for name in _names(modules))


def _names(value) -> tuple[str, ...]:
    """A list of module names, as TOML gives it or as an INI value (comma or line separated)."""
    return tuple(sorted(set(_ordered_names(value))))


def _flag(value) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    return None


def _number(value) -> int:
    try:
        return max(int(str(value).strip()), 0) if value is not None and not isinstance(value, bool) else 0
    except ValueError:
        return 0


def _dig(data: dict, keys: tuple) -> Optional[dict]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


@lru_cache(maxsize=None)
def _toml_file(path: Path) -> Optional[dict]:
    try:
        text = path.read_bytes()
    except OSError:
        return None
    if path.name == "pyproject.toml" and b"ruff" not in text and b"isort" not in text:
        return None
    tomllib = toml()
    try:
        return tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _ini_section(path: Path, names: tuple) -> Optional[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    for name in names:
        if parser.has_section(name):
            return {key.replace("-", "_"): value for key, value in parser.items(name)}
    return None
