"""The command-line front end: parse options, call the runner, print.

This is the only module that prints. Diffs and reports go to stdout; errors,
progress and the summary go to stderr. Exit codes: 0 nothing to do or all
applied, 1 something would change or was found, 2 usage, rule-file or
per-file errors.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Optional

import click

from hpu_port import __version__

EXIT_OK, EXIT_FOUND, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def _interrupt_on_sigterm() -> None:
    """Turn SIGTERM into an interrupt, so that a write in progress is cleaned up
    (each file is replaced atomically: it is either as it was or fully ported)."""
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (embedded use)
        pass


def _split_codes(values: tuple[str, ...]) -> list[str]:
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _overrides(mode, fp16, unsafe, select, ignore, extend_select, rules_files, max_size_mb, exclude, include_generated):
    from hpu_port.config import Overrides

    return Overrides(
        mode=mode,
        fp16_to_bf16=fp16,
        unsafe_fixes=unsafe,
        select=tuple(_split_codes(select)),
        ignore=tuple(_split_codes(ignore)),
        extend_select=tuple(_split_codes(extend_select)),
        rules=tuple(str(Path(p).resolve()) for p in rules_files),
        max_file_size_mib=max_size_mb,
        exclude=tuple(exclude),
        include_generated=include_generated,
    )


def _run(
    paths, options: dict, apply: bool, execution: dict, stdin_filename: Optional[str] = None, verbosity: int = 0,
    command: str = "check",
):
    """Run over ``paths`` with each file's settings; configuration errors exit 2.

    ``-`` reads the source from stdin; ``stdin_filename`` names it, for the
    configuration that applies and for messages. ``execution`` holds the
    options that change how fast, never what: jobs and the cache.
    """
    from hpu_port.config import ConfigError
    from hpu_port.rules import RuleFileError
    from hpu_port.runner import run, run_stdin
    from hpu_port.selection import RuleSetResolver

    if "-" in paths and len(paths) > 1:
        raise click.UsageError("`-` (stdin) cannot be combined with other paths")
    try:
        jobs, cache = _execution(paths, **execution)
        resolver = RuleSetResolver(_overrides(**options), command, cache.directory if cache else None)
        if paths == ("-",):
            summary = run_stdin(sys.stdin.buffer.read(), stdin_filename, resolver, apply)
            summary.asked_advice = frozenset(resolver.asked_advice)
            return summary
        with _progress(verbosity) as progress:
            summary = run(list(paths), resolver, apply=apply, progress=progress, jobs=jobs, cache=cache)
        summary.asked_advice = frozenset(resolver.asked_advice)
        return summary
    except (ConfigError, RuleFileError) as exc:
        click.echo(f"hpu-port: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def _execution(paths, jobs: int, no_cache: bool, cache_dir: Optional[str]):
    from hpu_port.cache import Cache, default_directory
    from hpu_port.parallel import default_jobs

    jobs = jobs or default_jobs()
    if no_cache:
        return jobs, None
    directory = Path(cache_dir) if cache_dir else default_directory()
    if not cache_dir and _inside_any(directory, paths):
        return jobs, None  # never write into the scanned tree unless told to
    return jobs, Cache(directory)


def _inside_any(directory: Path, paths) -> bool:
    resolved = directory.resolve()
    for path in paths:
        root = Path(path).resolve()
        if root == resolved or root in resolved.parents:
            return True
    return False


PROGRESS_THRESHOLD = 20  # files; fewer finish before a bar is worth drawing


@contextlib.contextmanager
def _progress(verbosity: int):
    """A progress callback: a bar on a terminal, file names with --verbose."""
    if verbosity > 0:
        yield lambda done, total, path: click.echo(f"[{done}/{total}] {path}", err=True)
        return
    if verbosity < 0 or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True, console=_console(sys.stderr)) as bar:
        task = bar.add_task("porting", total=None)

        def update(done, total, path):
            if total >= PROGRESS_THRESHOLD:
                bar.update(task, completed=done, total=total)

        yield update


stdin_option = click.option(
    "--stdin-filename", metavar="PATH", default=None,
    help="The name of the file read from stdin (`-`): its configuration applies and messages use it.",
)


def _console(stream=None):
    """A rich console (stdout by default); only used once we decided to draw."""
    from rich.console import Console

    return Console(file=stream or sys.stdout, force_terminal=True, highlight=False, soft_wrap=True)


def _stdout_colored(no_color: bool) -> bool:
    return not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def _print_diff(text: str, no_color: bool) -> None:
    if not _stdout_colored(no_color):
        click.echo(text, nl=False)
        return
    from rich.text import Text

    from hpu_port.report import diff_line_style

    console = _console()
    for line in text.splitlines():
        console.print(Text(line, style=diff_line_style(line)))


def _print_findings(text: str) -> None:
    from rich.text import Text

    from hpu_port.report import finding_styles

    console = _console()
    for line in text.splitlines():
        styled = Text(line)
        for start, end, style in finding_styles(line):
            styled.stylize(style, start, end)
        console.print(styled)


def _report_errors(results) -> None:
    for result in results:
        if result.failed:
            click.echo(f"{result.path}: error: {result.error}", err=True)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


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


_PORTING = ("mode", "fp16", "unsafe", "select", "ignore", "extend_select", "rules_files", "max_size_mb", "exclude", "include_generated")


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


def _execution_kwargs(kwargs: dict) -> dict:
    return {key: kwargs.pop(key) for key in ("jobs", "no_cache", "cache_dir")}


def _porting(kwargs: dict) -> dict:
    kwargs.pop("verbosity", None)
    options = {key: kwargs.pop(key) for key in _PORTING}
    if kwargs.pop("report_unused_ignores", False):
        options["extend_select"] = (*options["extend_select"], UNUSED_SUPPRESSION_CODE)
    return options


UNUSED_SUPPRESSION_CODE = "HPU002"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hpu-port")
def main() -> None:
    """Port PyTorch CUDA code to Intel Gaudi (HPU) by rewriting the source."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--dry-run", is_flag=True, help="Write nothing; print a unified diff of what would change.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing; list the files that would change.")
@stdin_option
@porting_options
@execution_options
def rewrite(paths, dry_run, check_only, stdin_filename, no_color, **kwargs):
    """Rewrite CUDA code under PATHS for Gaudi, in place (`-`: stdin to stdout).

    With no PATHS there is nothing to do (a pre-commit run with no Python files).
    """
    from hpu_port.report import unified_diff
    from hpu_port.runner import write_results

    verbosity = kwargs.get("verbosity") or 0
    execution = _execution_kwargs(kwargs)
    options = _porting(kwargs)
    writing = not (dry_run or check_only)
    from_stdin = paths == ("-",)
    _interrupt_on_sigterm()
    try:
        summary = _run(paths, options, True, execution, stdin_filename=stdin_filename, verbosity=verbosity, command="rewrite")
        if writing and not from_stdin:
            write_results(summary)
    except KeyboardInterrupt:
        click.echo("hpu-port: interrupted; every file is either unchanged or completely rewritten", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if from_stdin and writing:
        # The whole file goes back out: ported, or as it came when it could not be.
        [result] = summary.results
        sys.stdout.buffer.write(result.new_source if result.changed and not result.failed else result.source)
        sys.stdout.buffer.flush()
        summary_changed = []
    else:
        summary_changed = summary.changed
    for result in summary_changed:
        if dry_run:
            _print_diff(unified_diff(result), no_color)
        elif check_only:
            click.echo(result.path)
    _finish_rewrite(summary, writing, verbosity)


def _finish_rewrite(summary, writing: bool, verbosity: int) -> None:
    _report_errors(summary.results)
    if verbosity >= 0:
        _report_manual(summary)
        verb = "rewritten" if writing else "would be rewritten"
        click.echo(
            f"hpu-port: {_plural(summary.scanned, 'file')} scanned, "
            f"{len(summary.changed)} {verb}, {len(summary.failed)} failed; "
            f"{_plural(summary.manual, 'finding')} need a person",
            err=True,
        )
        _file_types(summary)
        _print_modes(summary)
        _summary_table(summary)
    if summary.failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FOUND if summary.changed and not writing else EXIT_OK)


def _file_types(summary) -> None:
    """What was examined by file type, and what was not (by type or suffix)."""
    examined = summary.examined
    if len(examined) > 1 or summary.not_examined:
        shown = ", ".join(f"{kind} {count}" for kind, count in sorted(examined.items()))
        click.echo(f"hpu-port: examined {shown or 'nothing'}", err=True)
    if summary.not_examined:
        top = summary.not_examined.most_common(8)
        rest = sum(summary.not_examined.values()) - sum(count for _, count in top)
        shown = ", ".join(f"{kind} {count}" for kind, count in top) + (f", other {rest}" if rest else "")
        click.echo(f"hpu-port: not examined: {shown}", err=True)


def _print_modes(summary) -> None:
    from hpu_port.report import mode_summary

    click.echo(mode_summary(summary.results), nl=False, err=True)


def _summary_table(summary) -> None:
    """On a terminal: what was found, per category, and what needs a person."""
    if not sys.stderr.isatty() or not summary.findings:
        return
    from collections import Counter

    from rich.table import Table

    total = Counter(f.category for r in summary.results for f in r.findings)
    manual = Counter(f.category for r in summary.results for f in r.findings if f.needs_person)
    table = Table("category", "findings", "fixed by rewrite", "need a person", title="hpu-port summary")
    for category in sorted(total):
        table.add_row(category, str(total[category]), str(total[category] - manual[category]), str(manual[category]))
    _console(sys.stderr).print(table)


def _report_manual(summary) -> None:
    from hpu_port.report import finding_line

    for result in summary.results:
        for finding in result.findings:
            if finding.needs_person:
                click.echo(finding_line(result.path, finding), err=True)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif", "markdown", "csv"]), default="text", show_default=True, help="Report format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report to FILE instead of stdout.")
@stdin_option
@porting_options
@execution_options
def check(paths, output_format, output, stdin_filename, no_color, **kwargs):
    """Report every finding under PATHS: what rewrite would change and what needs a person."""
    from hpu_port.report import render

    verbosity = kwargs.get("verbosity") or 0
    execution = _execution_kwargs(kwargs)
    # JSON carries the diff of each file, so the rewrite is computed (not written).
    summary = _run(
        paths, _porting(kwargs), output_format == "json", execution, stdin_filename=stdin_filename, verbosity=verbosity
    )
    rules = {rule.code: rule for result in summary.results for rule in result.rules}
    text = render(output_format, summary.results, [rules[code] for code in sorted(rules)])
    if output:
        Path(output).write_text(text, encoding="utf-8")
    elif output_format == "text" and _stdout_colored(no_color):
        _print_findings(text)
    else:
        click.echo(text, nl=False)
    _report_errors(summary.results)
    if verbosity >= 0:
        fixable = summary.findings - summary.manual
        click.echo(
            f"hpu-port: {_plural(summary.scanned, 'file')} scanned, {_plural(summary.findings, 'finding')} "
            f"({fixable} fixable by rewrite, {summary.manual} need a person), {len(summary.failed)} failed",
            err=True,
        )
        _file_types(summary)
        _print_modes(summary)
        _summary_table(summary)
    if summary.failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FOUND if summary.blocking else EXIT_OK)


@main.command("config")
@click.argument("path", required=False, default=".", type=click.Path())
@porting_options
def show_config(path, no_color, **kwargs):
    """Print the effective settings for PATH: [tool.hpu-port] merged with options."""
    from hpu_port.config import ConfigError, render_settings, settings_for

    try:
        settings = _overrides(**_porting(kwargs)).apply(settings_for(Path(path)))
    except ConfigError as exc:
        click.echo(f"hpu-port: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(render_settings(settings), nl=False)


@main.command("rules")
@rules_option
@click.option("--all", "show_all", is_flag=True, help="Accepted for symmetry; every rule is always listed.", hidden=True)
@color_option
def list_rules(rules_files, show_all, no_color):
    """List the rules: code, name, kind, fix safety, on/off by default."""
    ruleset_rules = _all_rules(rules_files)
    if _stdout_colored(no_color):
        from rich.table import Table

        table = Table("code", "name", "kind", "fix", "default", "summary", box=None)
        for r in ruleset_rules:
            table.add_row(r.code, r.name, r.kind, r.fix, _default_state(r), r.summary)
        _console().print(table)
        return
    for r in ruleset_rules:
        click.echo(f"{r.code}\t{r.name}\t{r.kind}\t{r.fix}\t{_default_state(r)}\t{r.summary}")


def _default_state(rule) -> str:
    from hpu_port.model import is_advice

    if not rule.default:
        return "off"
    return "check" if is_advice(rule) else "on"


def _all_rules(rules_files):
    from hpu_port.rules import RuleFileError, load_rules

    try:
        return load_rules([Path(p) for p in rules_files])
    except RuleFileError as exc:
        click.echo(f"hpu-port: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)


@main.command()
@click.argument("code")
@rules_option
@color_option
def explain(code, rules_files, no_color):
    """Show a rule's documentation and examples."""
    from hpu_port.docs import rule_page

    matches = [r for r in _all_rules(rules_files) if r.code == code.upper() or r.name == code]
    if not matches:
        click.echo(f"hpu-port: error: unknown rule {code!r} (see `hpu-port rules`)", err=True)
        sys.exit(EXIT_ERROR)
    page = rule_page(matches[0])
    if _stdout_colored(no_color):
        from rich.markdown import Markdown

        _console().print(Markdown(page))
    else:
        click.echo(page, nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()


@main.command()
def clean():
    """Delete the cache of per-file results (the default one, or $HPU_PORT_CACHE_DIR)."""
    from hpu_port.cache import default_directory, remove

    directory = default_directory()
    if remove(directory):
        click.echo(f"hpu-port: removed {directory}", err=True)
    else:
        click.echo(f"hpu-port: no cache at {directory}", err=True)
