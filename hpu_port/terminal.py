"""What the command line prints besides the reports: diffs and findings in
colour on a terminal, progress, errors, warnings and the closing summary.
Only the command line calls it."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Optional

import click

PROGRESS_THRESHOLD = 20  # files; fewer finish before a bar is worth drawing


@contextlib.contextmanager
def progress(verbosity: int):
    """A progress callback: a bar on a terminal, file names with --verbose."""
    if verbosity > 0:
        yield lambda done, total, path: click.echo(f"[{done}/{total}] {path}", err=True)
        return
    if verbosity < 0 or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True, console=console(sys.stderr)) as bar:
        task = bar.add_task("porting", total=None)

        def update(done, total, path):
            if total >= PROGRESS_THRESHOLD:
                bar.update(task, completed=done, total=total)

        yield update


def console(stream=None):
    """A rich console (stdout by default); only used once we decided to draw."""
    from rich.console import Console

    return Console(file=stream or sys.stdout, force_terminal=True, highlight=False, soft_wrap=True)


def stdout_colored(no_color: bool) -> bool:
    """Colour on a terminal; `NO_COLOR` turns it off, `FORCE_COLOR` on (CI logs
    that render colour), `--no-color` off whatever the environment says."""
    if no_color or os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()


def print_diff(text: str, no_color: bool) -> None:
    if not stdout_colored(no_color):
        click.echo(text, nl=False)
        return
    from rich.text import Text

    from hpu_port.report import diff_line_style

    out = console()
    for line in text.splitlines():
        out.print(Text(line, style=diff_line_style(line)))


def print_findings(text: str) -> None:
    from rich.text import Text

    from hpu_port.report import finding_styles

    out = console()
    for line in text.splitlines():
        styled = Text(line)
        for start, end, style in finding_styles(line):
            styled.stylize(style, start, end)
        out.print(styled)


def report_errors(results) -> None:
    for result in results:
        if result.failed:
            click.echo(f"{result.path}: error: {result.error}", err=True)


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def warn(summary, verbosity: int) -> None:
    """Paths with nothing to examine, bad suppression comments: on stderr, not with --quiet."""
    if verbosity < 0:
        return
    for path, reason in summary.empty_paths:
        click.echo(f"hpu-port: warning: {path}: nothing examined: {reason}", err=True)
    for warning in summary.warnings:
        click.echo(f"hpu-port: warning: {warning}", err=True)


def print_fixes(summary, verb: str, counted) -> None:
    """ruff's `--show-fixes`: per file, how many findings of each rule are fixed."""
    from hpu_port.planning import fixes_text

    lines = fixes_text(summary.results, verb, counted)
    click.echo("\n".join(lines) if lines else f"hpu-port: no fixes{' applied' if verb == 'Fixed' else ' to apply'}", err=True)


def file_types(summary) -> None:
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
    if summary.hidden_by_gitignore:
        count = plural(summary.hidden_by_gitignore, "file")
        click.echo(
            f"hpu-port: not examined: {count} of types hpu-port reads that .gitignore lists "
            "(outside a git checkout its patterns decide; name a file to examine it)",
            err=True,
        )


def print_modes(summary) -> None:
    from hpu_port.report import mode_summary

    click.echo(mode_summary(summary.results), nl=False, err=True)


def summary_table(summary) -> None:
    """On a terminal: what was found, per category, and what needs a person."""
    if not sys.stderr.isatty() or not summary.findings:
        return
    from collections import Counter

    from rich.table import Table

    total = Counter(f.category for r in summary.results for f in r.findings)
    manual = Counter(f.category for r in summary.results for f in r.findings if f.needs_person)
    table = Table("category", "findings", "fixed by rewrite", "need a person", title="hpu-port summary")
    for category in sorted(total, key=lambda c: (c == "advice", c)):
        table.add_row(category, str(total[category]), str(total[category] - manual[category]), str(manual[category]))
    console(sys.stderr).print(table)


def report_manual(summary) -> None:
    from hpu_port.report import finding_line

    for result in summary.results:
        for finding in result.findings:
            if finding.needs_person:
                click.echo(finding_line(result.path, finding), err=True)


def toolkit_summary(matching, verbosity: int) -> None:
    """How many intercepted sites the static port covers; library sites apart."""
    click.echo(f"hpu-port: toolkit log: {matching.summary_line()}", err=True)
    for line in matching.unmatched_lines() if verbosity > 0 else ():
        click.echo(f"  {line}", err=True)


def emit_report(text: str, output: Optional[str], colored: bool) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
    elif colored:
        print_findings(text)
    else:
        click.echo(text, nl=False)
