"""What containers run, in the YAML that starts them: docker-compose services,
Kubernetes pod specs, CI jobs that run in a container.

Each is turned into an embedded shell script (see ``formats.embedded``), so
that the rules for commands and flags read them like any launch line:

- a compose service's `command:` / `entrypoint:` given as one string;
- a container's `command:` and `args:` lists (Kubernetes, compose), their
  items put one after the other (`sh -c SCRIPT` reads SCRIPT as a script);
- a CI job's `container: options:` (`--gpus all`), read as the options of
  `docker run`, which is what the runner does with them.

Items are copied from the host text where their source is their value, so
edits land exactly; any other item is glued in quoted, for findings only.
"""

from __future__ import annotations

from typing import Iterator

from hpu_port.formats import Entry, Span
from hpu_port.formats.embedded import PLAIN_WORD, Copy, Glue

_LAUNCH_KEYS = ("command", "entrypoint")
_LIST_KEYS = ("command", "args", "entrypoint")
_CONTAINER_LISTS = frozenset({"containers", "initContainers"})
_SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env bash"})
_ORDER = {"entrypoint": 0, "command": 1, "args": 2}


def launch_scripts(entries: list[Entry]) -> Iterator[tuple[list, Span, str]]:
    """(parts, region, label) of every container launch line in the document."""
    composes = {e.document for e in entries if e.path == ("services",) and e.kind == "mapping"}
    lists: dict[tuple, list[Entry]] = {}
    for entry in entries:
        if entry.value is None or not _editable(entry):
            continue
        path, compose = entry.path, entry.document in composes
        if compose and len(path) == 3 and path[0] == "services" and path[2] in _LAUNCH_KEYS and entry.key is not None:
            yield [Copy(entry.value.inner)], entry.span, f"services.{path[1]}.{path[2]}"
        elif _container_options(path):
            yield [Glue("docker run ", entry.span.start), Copy(entry.value.inner)], entry.span, "container options"
        elif len(path) >= 2 and isinstance(path[-1], int) and path[-2] in _LIST_KEYS and _in_container(path, compose):
            lists.setdefault((entry.document, path[:-2]), []).append(entry)
    for (_, owner), items in lists.items():
        items.sort(key=lambda e: (_ORDER[e.path[-2]], e.path[-1]))
        if any(later.span.start < earlier.span.end for earlier, later in zip(items, items[1:])):
            continue  # `args:` written above `command:`: the script's words would not follow the file
        yield _joined(items), Span(items[0].span.start, items[-1].span.end), ".".join(str(p) for p in owner) or "command"


def _container_options(path: tuple) -> bool:
    """A CI job's `container: options:`, or a service container's beside it (GitHub Actions)."""
    job = len(path) >= 3 and path[0] == "jobs"
    return job and (path[-2:] == ("container", "options") or (len(path) == 5 and path[2] == "services" and path[4] == "options"))


def _in_container(path: tuple, compose: bool) -> bool:
    if compose and len(path) == 4 and path[0] == "services":
        return True
    return len(path) >= 4 and path[-4] in _CONTAINER_LISTS and isinstance(path[-3], int)


def _joined(items: list[Entry]) -> list:
    """One script from a container's command items: `sh -c SCRIPT` is
    SCRIPT; otherwise the items as words of one command line."""
    values = [item.value.value for item in items]
    if len(items) >= 3 and values[0] in _SHELLS and values[1] == "-c":
        return [Copy(items[2].value.inner)]
    parts: list = []
    for item in items:
        if parts:
            parts.append(Glue(" ", item.span.start))
        if PLAIN_WORD.fullmatch(item.value.value):
            parts.append(Copy(item.value.inner))
        else:
            parts.append(Glue("'" + item.value.value.replace("'", "'\\''") + "'", item.span.start))
    return parts


def _editable(entry: Entry) -> bool:
    return entry.value.quote in ("", "'", '"') and "\n" not in entry.value.value
