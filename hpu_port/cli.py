"""The command-line front end: parse options, call the runner, print.

This is the only module that prints. Diffs and reports go to stdout; errors,
progress and the summary go to stderr. Exit codes: 0 nothing to do or all
applied, 1 something would change or was found, 2 usage, rule-file or
per-file errors.
"""

from __future__ import annotations

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


def _load_ruleset(rules_files, select, ignore, mode="lazy", fp16=False, unsafe=False, max_size_mb=None):
    from hpu_port.rules import RuleFileError, load_rules, select_rules
    from hpu_port.settings import DEFAULT_MAX_FILE_SIZE, Options, RuleSet

    try:
        rules = load_rules([Path(p) for p in rules_files])
        chosen = select_rules(rules, _split_codes(select), _split_codes(ignore))
    except RuleFileError as exc:
        click.echo(f"hpu-port: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    size = int(max_size_mb * 2**20) if max_size_mb is not None else DEFAULT_MAX_FILE_SIZE
    return RuleSet(chosen, Options(mode=mode, fp16_to_bf16=fp16, unsafe_fixes=unsafe, max_file_size=size))


def _console():
    """A rich console for stdout; only used once we decided to colour."""
    from rich.console import Console

    return Console(file=sys.stdout, force_terminal=True, highlight=False, soft_wrap=True)


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
select_option = click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated; ALL for every rule).")
ignore_option = click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes (comma-separated).")
mode_option = click.option(
    "--mode", type=click.Choice(["lazy", "eager"]), default="lazy", show_default=True,
    help="Gaudi execution mode the code will run in.",
)
fp16_option = click.option("--fp16-to-bf16", "fp16", is_flag=True, help="Rewrite float16/half to bfloat16 where it is a dtype.")
unsafe_option = click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change behaviour.")
size_option = click.option(
    "--max-file-size", "max_size_mb", type=click.FloatRange(min=0.001), default=None, metavar="MIB",
    help="Skip (with an error) files larger than this, in MiB [default: 4].",
)
color_option = click.option("--no-color", is_flag=True, help="Plain output even on a terminal (NO_COLOR is honoured too).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hpu-port")
def main() -> None:
    """Port PyTorch CUDA code to Intel Gaudi (HPU) by rewriting the source."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--dry-run", is_flag=True, help="Write nothing; print a unified diff of what would change.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing; list the files that would change.")
@mode_option
@fp16_option
@select_option
@ignore_option
@unsafe_option
@rules_option
@size_option
@color_option
def rewrite(paths, dry_run, check_only, mode, fp16, select, ignore, unsafe_fixes, rules_files, max_size_mb, no_color):
    """Rewrite CUDA code under PATHS for Gaudi, in place."""
    from hpu_port.report import unified_diff
    from hpu_port.runner import run, write_results

    ruleset = _load_ruleset(rules_files, select, ignore, mode, fp16, unsafe_fixes, max_size_mb)
    writing = not (dry_run or check_only)
    _interrupt_on_sigterm()
    try:
        summary = run(list(paths), ruleset, apply=True)
        if writing:
            write_results(summary)
    except KeyboardInterrupt:
        click.echo("hpu-port: interrupted; every file is either unchanged or completely rewritten", err=True)
        sys.exit(EXIT_INTERRUPTED)
    for result in summary.changed:
        if dry_run:
            _print_diff(unified_diff(result), no_color)
        elif check_only:
            click.echo(result.path)
    _report_errors(summary.results)
    _report_manual(summary)
    verb = "rewritten" if writing else "would be rewritten"
    click.echo(
        f"hpu-port: {_plural(summary.scanned, 'file')} scanned, "
        f"{len(summary.changed)} {verb}, {len(summary.failed)} failed; "
        f"{_plural(summary.manual, 'finding')} need a person",
        err=True,
    )
    if summary.failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FOUND if summary.changed and not writing else EXIT_OK)


def _report_manual(summary) -> None:
    from hpu_port.report import finding_line

    for result in summary.results:
        for finding in result.findings:
            if finding.needs_person:
                click.echo(finding_line(result.path, finding), err=True)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif", "markdown", "csv"]), default="text", show_default=True, help="Report format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write the report to FILE instead of stdout.")
@mode_option
@fp16_option
@select_option
@ignore_option
@unsafe_option
@rules_option
@size_option
@color_option
def check(paths, output_format, output, mode, fp16, select, ignore, unsafe_fixes, rules_files, max_size_mb, no_color):
    """Report every finding under PATHS: what rewrite would change and what needs a person."""
    from hpu_port.report import render
    from hpu_port.runner import run

    ruleset = _load_ruleset(rules_files, select, ignore, mode, fp16, unsafe_fixes, max_size_mb)
    # JSON carries the diff of each file, so the rewrite is computed (not written).
    summary = run(list(paths), ruleset, apply=output_format == "json")
    text = render(output_format, summary.results, ruleset.rules)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    _report_errors(summary.results)
    fixable = summary.findings - summary.manual
    click.echo(
        f"hpu-port: {_plural(summary.scanned, 'file')} scanned, {_plural(summary.findings, 'finding')} "
        f"({fixable} fixable by rewrite, {summary.manual} need a person), {len(summary.failed)} failed",
        err=True,
    )
    if summary.failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FOUND if summary.findings else EXIT_OK)


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
            table.add_row(r.code, r.name, r.kind, r.fix, "on" if r.default else "off", r.summary)
        _console().print(table)
        return
    for r in ruleset_rules:
        click.echo(f"{r.code}\t{r.name}\t{r.kind}\t{r.fix}\t{'on' if r.default else 'off'}\t{r.summary}")


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
