"""The command-line front end: parse options, call the runner, print.

This is the only module that prints. Diffs and reports go to stdout; errors,
progress and the summary go to stderr. Exit codes: 0 nothing to do or all
applied, 1 something would change or was found, 2 usage, rule-file or
per-file errors.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from hpu_port import __version__, terminal
from hpu_port.options import (
    check_output_dir,
    exit_zero_option,
    paths_or_here,
    show_findings_option,
    show_fixes_option,
    REPORT_FORMATS,
    color_option,
    execution_kwargs,
    execution_settings,
    execution_options,
    overrides,
    porting,
    porting_options,
    rules_option,
    stdin_option,
)

EXIT_OK, EXIT_FOUND, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def _fail(exc: Exception) -> None:
    """Every problem of a configuration or rule file, a line each; exit 2."""
    for line in str(exc).splitlines():
        click.echo(f"hpu-port: error: {line}", err=True)
    sys.exit(EXIT_ERROR)


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
    from hpu_port.runner import run, run_stdin, suppression_warnings
    from hpu_port.selection import RuleSetResolver

    if "-" in paths and len(paths) > 1:
        raise click.UsageError("`-` (stdin) cannot be combined with other paths")
    try:
        jobs, cache = execution_settings(paths, **execution)
        resolver = RuleSetResolver(overrides(**options), command, cache.directory if cache else None)
        if paths == ("-",):
            summary = run_stdin(sys.stdin.buffer.read(), stdin_filename, resolver, apply)
        else:
            with terminal.progress(verbosity) as progress:
                summary = run(list(paths), resolver, apply=apply, progress=progress, jobs=jobs, cache=cache)
        summary.asked_advice = frozenset(resolver.asked_advice)
        summary.warnings += suppression_warnings(summary.results, resolver.known_codes())
        return summary
    except (ConfigError, RuleFileError) as exc:
        _fail(exc)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hpu-port")
def main() -> None:
    """Port PyTorch CUDA code to Intel Gaudi (HPU) by rewriting the source."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--dry-run", "--diff", "dry_run", is_flag=True, help="Write nothing; print a unified diff of what would change (`--diff` as in ruff).")
@click.option("--check", "check_only", is_flag=True, help="Write nothing; list the files that would change.")
@click.option(
    "--output-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
    help="Leave the sources alone; write every examined file, ported or not, to DIR at its path relative to the working directory.",
)
@exit_zero_option
@show_fixes_option
@show_findings_option
@stdin_option
@porting_options
@execution_options
def rewrite(paths, dry_run, check_only, output_dir, exit_zero, show_fixes, show_findings, stdin_filename, no_color, **kwargs):
    """Rewrite CUDA code under PATHS (default: the current directory) for Gaudi,
    in place (`-`: stdin to stdout), or into a separate tree (--output-dir)."""
    from hpu_port.report import unified_diff
    from hpu_port.runner import interrupt_on_sigterm, write_results, write_results_to

    paths = paths_or_here(paths)
    if output_dir is not None:
        check_output_dir(output_dir, paths, dry_run or check_only)
    verbosity = kwargs.get("verbosity") or 0
    execution = execution_kwargs(kwargs)
    options = porting(kwargs)
    writing = not (dry_run or check_only)
    from_stdin = paths == ("-",)
    interrupt_on_sigterm()
    try:
        summary = _run(paths, options, True, execution, stdin_filename=stdin_filename, verbosity=verbosity, command="rewrite")
        if output_dir is not None:
            write_results_to(summary, output_dir)
        elif writing and not from_stdin:
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
            terminal.print_diff(unified_diff(result, label=show_fixes), no_color)
        elif check_only:
            click.echo(result.path)
    if show_fixes:
        terminal.print_fixes(summary, "Fixed" if writing else "Would fix", lambda f: f.applied)
    terminal.warn(summary, verbosity)
    # A review reads the diff: what needs a person is listed by `check`, or on request.
    listed = writing or show_findings or verbosity > 0
    _finish_rewrite(summary, writing, verbosity, exit_zero, list_findings=listed)


def _finish_rewrite(summary, writing: bool, verbosity: int, exit_zero: bool = False, list_findings: bool = True) -> None:
    from hpu_port.planning import make_plan

    terminal.report_errors(summary.results)
    if verbosity >= 0:
        if list_findings:
            terminal.report_manual(summary)
        verb = "rewritten" if writing else "would be rewritten"
        manual = make_plan(summary.results).total.manual
        click.echo(
            f"hpu-port: {terminal.plural(summary.scanned, 'file')} scanned, "
            f"{len(summary.changed)} {verb}, {len(summary.failed)} failed; "
            f"{terminal.plural(manual['blocker'], 'blocker')} and {manual['advice']} advice need a person (root causes)"
            + ("" if list_findings or not (manual["blocker"] or manual["advice"]) else ": --show-findings lists them"),
            err=True,
        )
        terminal.file_types(summary)
        terminal.print_modes(summary)
        _hint_init(summary)
        terminal.summary_table(summary)
    if summary.failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FOUND if summary.changed and not writing and not exit_zero else EXIT_OK)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--output-format", "--format", "output_format", type=click.Choice(list(REPORT_FORMATS)), default="text",
    show_default=True, envvar="HPU_PORT_OUTPUT_FORMAT", show_envvar=True,
    help="Report format (github: workflow annotations; gitlab: code quality JSON).",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report to FILE instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule (with --format json: as JSON) instead of the findings.")
@click.option(
    "--rule-docs-url", metavar="URL", default=None,
    help="html: link each finding to URL/CODE.md [default: the rule's page, embedded in the report].",
)
@click.option(
    "--toolkit-log", "toolkit_logs", multiple=True, type=click.Path(), metavar="LOG",
    help="A GPU Migration Toolkit log (or a directory of *.log): match its intercepted calls to the findings; repeatable.",
)
@click.option(
    "--baseline", "baseline_file", type=click.Path(dir_okay=False), metavar="FILE", default=None,
    help="Leave out the findings FILE lists (see --write-baseline): only new findings are reported and fail.",
)
@click.option(
    "--write-baseline", is_flag=True,
    help="Write every finding to the --baseline FILE, to accept them for now, and exit 0.",
)
@exit_zero_option
@show_fixes_option
@stdin_option
@porting_options
@execution_options
def check(
    paths, output_format, output, statistics, rule_docs_url, toolkit_logs, baseline_file, write_baseline, exit_zero,
    show_fixes, stdin_filename, no_color, **kwargs,
):
    """Report every finding under PATHS (default: the current directory): what
    rewrite would change and what needs a person."""
    from hpu_port.report import render, render_statistics

    if statistics and output_format not in ("text", "json"):
        raise click.UsageError("--statistics is printed as text or json")
    if write_baseline and not baseline_file:
        raise click.UsageError("--write-baseline needs --baseline FILE: the file to write")
    paths = paths_or_here(paths)
    verbosity = kwargs.get("verbosity") or 0
    execution = execution_kwargs(kwargs)
    # JSON carries the diff of each file, so the rewrite is computed (not written).
    summary = _run(
        paths, porting(kwargs), output_format == "json" and not statistics, execution,
        stdin_filename=stdin_filename, verbosity=verbosity,
    )
    if baseline_file:
        from hpu_port.baseline import without_baseline_file

        summary.results = without_baseline_file(summary.results, baseline_file)
    if write_baseline:
        _write_baseline(summary, baseline_file)
    if baseline_file:
        _leave_out_known(summary, baseline_file, verbosity)
    toolkit = _match_toolkit_logs(summary, toolkit_logs) if toolkit_logs else None
    rules = {rule.code: rule for result in summary.results for rule in result.rules}
    rules = [rules[code] for code in sorted(rules)]
    if statistics:
        text = render_statistics(summary.results, rules, as_json=output_format == "json")
    else:
        text = render(output_format, summary.results, rules, rule_docs_url=rule_docs_url,
                      toolkit=toolkit.as_dict() if toolkit else None, not_examined=dict(summary.not_examined))
    terminal.emit_report(text, output, output_format == "text" and not statistics and terminal.stdout_colored(no_color))
    if show_fixes:
        terminal.print_fixes(summary, "Would fix", lambda f: f.fixable)
    terminal.report_errors(summary.results)
    terminal.warn(summary, verbosity)
    if verbosity >= 0:
        from hpu_port.planning import summary_line

        click.echo(f"hpu-port: {summary_line(summary.results, len(summary.failed))}", err=True)
        if statistics:
            from hpu_port.results import actions_summary

            click.echo(f"hpu-port: actions: {actions_summary(summary.results)}", err=True)
        terminal.file_types(summary)
        terminal.print_modes(summary)
        _hint_init(summary)
        if toolkit is not None:
            terminal.toolkit_summary(toolkit, verbosity)
        terminal.summary_table(summary)
    if summary.failed or (toolkit is not None and toolkit.errors):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FOUND if summary.blocking and not exit_zero else EXIT_OK)


def _hint_init(summary) -> None:
    """On a tree whose configuration chooses no mode, say how to choose one
    before porting (the mode changes the diff)."""
    if not summary.roots or not any(r.mode for r in summary.results):
        return
    from hpu_port.config import ConfigError, settings_for
    from hpu_port.mode_choice import configured_mode

    root = Path(summary.roots[0])
    try:
        source = settings_for(root).source
    except ConfigError:
        return
    if source is None or configured_mode(Path(source)) is None:
        click.echo("hpu-port: no mode is configured here: `hpu-port init` compares lazy and eager for this tree and records the choice", err=True)


def _write_baseline(summary, path: str) -> None:
    """Accept every finding of this run: write them to ``path`` and stop (exit 0,
    or 2 when a file could not be examined, since its findings are missing)."""
    from hpu_port import baseline

    try:
        count = baseline.write(path, summary.results)
    except OSError as exc:
        click.echo(f"hpu-port: error: {path}: cannot write the baseline: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    terminal.report_errors(summary.results)
    click.echo(f"hpu-port: wrote {terminal.plural(count, 'finding')} to the baseline {path}", err=True)
    sys.exit(EXIT_ERROR if summary.failed else EXIT_OK)


def _leave_out_known(summary, path: str, verbosity: int) -> None:
    """Keep only the findings the baseline at ``path`` does not list."""
    from hpu_port import baseline

    try:
        filtered = baseline.without_known(summary.results, baseline.read(path), baseline.base_of(path))
    except baseline.BaselineError as exc:
        _fail(exc)
    summary.results = filtered.results
    if verbosity < 0:
        return
    fixed = f"; {terminal.plural(filtered.stale, 'finding')} of it fixed since (--write-baseline drops them)" if filtered.stale else ""
    click.echo(f"hpu-port: baseline {path}: {terminal.plural(filtered.known, 'known finding')} left out{fixed}", err=True)


def _match_toolkit_logs(summary, logs):
    from hpu_port.toolkit_log import match, read_logs

    matching = match(summary.results, read_logs(logs))
    for error in matching.errors:
        click.echo(f"hpu-port: error: {error}", err=True)
    return matching


@main.command("config")
@click.argument("path", required=False, default=".", type=click.Path())
@porting_options
def show_config(path, no_color, **kwargs):
    """Print the effective settings for PATH ([tool.hpu-port] merged with
    options), and the rules they select."""
    from hpu_port.config import ConfigError, render_settings
    from hpu_port.rules import RuleFileError
    from hpu_port.selection import RuleSetResolver

    resolver = RuleSetResolver(overrides(**porting(kwargs)), "check")
    try:
        settings = resolver.settings(Path(path))
        ruleset = resolver(Path(path))
    except (ConfigError, RuleFileError) as exc:
        _fail(exc)
    click.echo(render_settings(settings), nl=False)
    if ruleset is None:
        click.echo(f"# {path} is excluded: no rules apply to it")
        return
    click.echo(f"\n# Rules in effect for {path} ({len(ruleset.rules)}; `rewrite` leaves advice out unless selected by code):")
    for rule in ruleset.rules:
        fix = "no fix" if rule.fix == "none" else f"{rule.fix} fix"
        click.echo(f"#   {rule.code}  {rule.name}  ({rule.category}, {fix})")


@main.command("rules")
@click.argument("filter_text", metavar="[FILTER]", required=False, default="")
@rules_option
@click.option(
    "--format", "output_format", type=click.Choice(["table", "tsv", "json"]), default="table", show_default=True,
    help="A table for people, tab-separated lines or JSON for scripts.",
)
@click.option("--all", "show_all", is_flag=True, help="Accepted for symmetry; every rule is always listed.", hidden=True)
@color_option
def list_rules(filter_text, rules_files, output_format, show_all, no_color):
    """List the rules: code, name, category, fix safety, on/off by default.

    FILTER keeps the rules whose code starts with it, or whose name, kind,
    category or summary contains it (case-insensitive).
    """
    import json

    from hpu_port.rule_listing import RULE_COLUMNS, aligned, rule_matches, rule_row

    rules = [rule for rule in _all_rules(rules_files) if rule_matches(rule, filter_text)]
    rows = [rule_row(rule) for rule in rules]
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
    elif output_format == "tsv":
        for row in rows:
            click.echo("\t".join(str(row[key]) for key in ("code", "name", "kind", "fix", "default", "summary")))
    elif terminal.stdout_colored(no_color):
        from rich.table import Table

        table = Table(*RULE_COLUMNS, box=None)
        for row in rows:
            table.add_row(*(str(row[key]) for key in RULE_COLUMNS))
        terminal.console().print(table)
    else:
        for line in aligned([RULE_COLUMNS, *([str(row[key]) for key in RULE_COLUMNS] for row in rows)]):
            click.echo(line)
    if not rows:
        click.echo(f"hpu-port: no rule matches {filter_text!r}", err=True)


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
    if terminal.stdout_colored(no_color):
        from rich.markdown import Markdown

        terminal.console().print(Markdown(page))
    else:
        click.echo(page, nl=False)



@main.command()
@click.argument("path", required=False, default=".", type=click.Path(exists=True, file_okay=False))
@click.option("--mode", "chosen", type=click.Choice(["lazy", "eager"]), default=None,
              help="Write this mode into [tool.hpu-port] without asking.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache of per-file results.")
@color_option
def init(path, chosen, no_cache, no_color):
    """Choose the execution mode for the tree at PATH before the first rewrite:
    what lazy and eager mode each do to its diff, which Gaudi release it
    targets, and whether it already holds a port; the choice is written into
    [tool.hpu-port] of the pyproject.toml that configures PATH (else
    PATH/pyproject.toml)."""
    from hpu_port import mode_choice

    from hpu_port.config import ConfigError, settings_for

    root = Path(path)
    try:
        # The file whose [tool.hpu-port] rules here, when there is one: a new
        # table nearer would hide it.
        source = settings_for(root).source
    except ConfigError as exc:
        _fail(exc)
    pyproject = Path(source) if source else root / "pyproject.toml"
    summaries = {}
    for mode in mode_choice.MODES:
        options = dict(mode=mode, fp16=None, unsafe=None, select=(), ignore=(), extend_select=(), rules_files=(),
                       max_size_mb=None, exclude=(), include_generated=None, shared=None)
        summaries[mode] = _run([path], options, False, dict(jobs=0, no_cache=no_cache, cache_dir=None), verbosity=-1)
    found = mode_choice.effects(summaries)
    existing = mode_choice.existing_port(root)
    release = mode_choice.targeted_release(root)
    advice = mode_choice.advise(found, release, existing)
    current = mode_choice.configured_mode(pyproject)
    for line in terminal.mode_choice_lines(found, summaries, existing, release, advice, current):
        click.echo(line)
    if chosen is None and current is None and sys.stdin.isatty():
        chosen = click.prompt("Mode to write", type=click.Choice(list(mode_choice.MODES)), default=advice.mode)
    if chosen is None:
        if current is None:
            click.echo(f"Nothing written: run `hpu-port init --mode {advice.mode}` (or --mode {_other(advice.mode)}) to record the choice.")
        return
    for line in terminal.switching_lines(chosen, current, existing):
        click.echo(line)
    if chosen == current:
        click.echo(f"{pyproject} already sets mode = \"{chosen}\".")
        return
    try:
        click.echo(mode_choice.write_mode(pyproject, chosen).capitalize() + ".")
    except mode_choice.ConfigWriteError as exc:
        click.echo(f"hpu-port: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def _other(mode: str) -> str:
    return "eager" if mode == "lazy" else "lazy"


@main.command()
def clean():
    """Delete the cache of per-file results (the default one, or $HPU_PORT_CACHE_DIR)."""
    from hpu_port.cache import NotACache, default_directory, remove

    directory = default_directory()
    try:
        removed = remove(directory)
    except NotACache as refusal:
        click.echo(f"hpu-port: error: {refusal}", err=True)
        raise SystemExit(2)
    if removed:
        click.echo(f"hpu-port: removed {directory}", err=True)
    else:
        click.echo(f"hpu-port: no cache at {directory}", err=True)


if __name__ == "__main__":  # pragma: no cover
    main()
