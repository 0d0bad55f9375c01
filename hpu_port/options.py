"""The command-line options the commands share, and how they become settings."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

# The formats of `check` (hpu_port.report.RENDERERS has one renderer each; a
# test keeps the two in step without importing the renderers at startup).
REPORT_FORMATS = ("text", "json", "sarif", "markdown", "csv", "github", "gitlab", "html")


def split_codes(values: tuple[str, ...]) -> list[str]:
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def overrides(mode, fp16, unsafe, select, ignore, extend_select, rules_files, max_size_mb, exclude, include_generated, shared):
    from hpu_port.config import Overrides

    return Overrides(
        mode=mode,
        fp16_to_bf16=fp16,
        unsafe_fixes=unsafe,
        select=tuple(split_codes(select)),
        ignore=tuple(split_codes(ignore)),
        extend_select=tuple(split_codes(extend_select)),
        rules=tuple(str(Path(p).resolve()) for p in rules_files),
        max_file_size_mib=max_size_mb,
        exclude=tuple(exclude),
        include_generated=include_generated,
        port_shared_code=shared,
    )


stdin_option = click.option(
    "--stdin-filename", metavar="PATH", default=None,
    help="The name of the file read from stdin (`-`): its configuration applies and messages use it.",
)


rules_option = click.option(
    "--rules", "rules_files", multiple=True, type=click.Path(dir_okay=True), metavar="FILE",
    help="Extra rule file (TOML) or directory of rule files; repeatable.",
)
color_option = click.option("--no-color", is_flag=True, help="Plain output even on a terminal (NO_COLOR is honoured too).")


def porting_options(command):
    """The options `rewrite`, `check` and `config` share; each overrides [tool.hpu-port]."""
    options = [
        click.option("--mode", type=click.Choice(["lazy", "eager"]), default=None, help="Gaudi execution mode the code will run in [default: lazy]."),
        click.option("--fp16-to-bf16/--no-fp16-to-bf16", "fp16", default=None, help="Rewrite float16/half to bfloat16 where it is a dtype."),
        click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated; ALL for every rule)."),
        click.option("--extend-select", multiple=True, metavar="CODES", help="Add these rules to the selection (comma-separated)."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes (comma-separated)."),
        click.option("--unsafe-fixes/--no-unsafe-fixes", "unsafe", default=None, help="Also apply fixes that may change behaviour."),
        click.option("--exclude", multiple=True, metavar="PATTERN", help="Skip files matching this glob (added to extend-exclude); repeatable."),
        click.option("--include-generated/--skip-generated", "include_generated", default=None, help="Also port files that carry a generated-code marker [default: skip them]."),
        click.option(
            "--port-shared-code/--keep-shared-code", "shared", default=None,
            help="In a package that serves several devices, also convert the code its modules share among them, for a Gaudi-only fork [default: keep it and report it].",
        ),
        click.option("--quiet", "-q", "verbosity", flag_value=-1, help="Print only errors (and the report or diff)."),
        click.option("--verbose", "-v", "verbosity", flag_value=1, help="Also name each file as it is processed."),
        click.option("--report-unused-ignores", is_flag=True, help="Report `# hpu-port: ignore` comments that suppress nothing (HPU002)."),
        click.option(
            "--max-file-size", "max_size_mb", type=click.FloatRange(min=0.001), default=None, metavar="MIB",
            help="Skip (with an error) files larger than this, in MiB [default: 4].",
        ),
        rules_option,
        color_option,
    ]
    for option in reversed(options):
        command = option(command)
    return command


_PORTING = ("mode", "fp16", "unsafe", "select", "ignore", "extend_select", "rules_files", "max_size_mb", "exclude", "include_generated", "shared")


def execution_options(command):
    """How `rewrite` and `check` run: in how many processes, with which cache."""
    options = [
        click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, metavar="N", help="Port files in N processes [default: 0, one per CPU]."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the cache of per-file results."),
        click.option(
            "--cache-dir", type=click.Path(file_okay=False), default=None, envvar="HPU_PORT_CACHE_DIR", show_envvar=True,
            help="Where results are cached [default: the user cache directory, e.g. ~/.cache/hpu-port].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def execution_kwargs(kwargs: dict) -> dict:
    return {key: kwargs.pop(key) for key in ("jobs", "no_cache", "cache_dir")}


def porting(kwargs: dict) -> dict:
    kwargs.pop("verbosity", None)
    options = {key: kwargs.pop(key) for key in _PORTING}
    if kwargs.pop("report_unused_ignores", False):
        options["extend_select"] = (*options["extend_select"], UNUSED_SUPPRESSION_CODE)
    return options


UNUSED_SUPPRESSION_CODE = "HPU002"


def execution_settings(paths, jobs: int, no_cache: bool, cache_dir: Optional[str]):
    """How many jobs, and which cache (None: none) a run uses."""
    from hpu_port.cache import Cache, default_directory
    from hpu_port.parallel import default_jobs

    jobs = jobs or default_jobs()
    if no_cache:
        return jobs, None
    directory = Path(cache_dir) if cache_dir else default_directory()
    if not cache_dir and inside_any(directory, paths):
        return jobs, None  # never write into the scanned tree unless told to
    return jobs, Cache(directory)


def inside_any(directory: Path, paths) -> bool:
    resolved = directory.resolve()
    for path in paths:
        root = Path(path).resolve()
        if root == resolved or root in resolved.parents:
            return True
    return False


exit_zero_option = click.option(
    "--exit-zero", is_flag=True, help="Exit 0 even when something is found or would change (errors still exit 2)."
)
show_fixes_option = click.option(
    "--show-fixes", is_flag=True,
    help="List the fixes per file and rule (on stderr): applied, or that rewrite would apply; with --diff, each hunk's header names its rules.",
)
show_findings_option = click.option(
    "--show-findings", is_flag=True,
    help="With --diff or --check, also list what still needs a person (as -v does); `hpu-port check` lists it too.",
)


def paths_or_here(paths: tuple) -> tuple:
    """No paths means the current directory, as in ruff."""
    return paths or (".",)


def check_output_dir(output_dir: str, paths: tuple, only_looking: bool) -> None:
    """The output tree must be apart from what is being ported: not one of the
    paths, not inside one, and not holding one (writing there would replace
    the sources, or put the port where the next run reads it). Paths are
    compared resolved, so that `.`, a file's own folder or a link to either
    is caught too."""
    if only_looking:
        raise click.UsageError("--output-dir writes files; it cannot be combined with --dry-run or --check")
    if "-" in paths:
        raise click.UsageError("--output-dir cannot be used with `-` (stdin)")
    from hpu_port.files import shown_path

    output = Path(output_dir).resolve()
    for path in paths:
        problem = _overlap(output, Path(path).resolve())
        if problem:
            raise click.UsageError(
                f"--output-dir {shown_path(output_dir)} {problem} {shown_path(path)}, a path being ported; "
                "choose a directory outside it"
            )


def _overlap(output: Path, source: Path) -> Optional[str]:
    if output == source:
        return "is"
    if source in output.parents:
        return "lies inside"
    if output in source.parents:
        return "holds"
    return None

