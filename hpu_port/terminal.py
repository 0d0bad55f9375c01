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
    for line in mode_mismatches(summary.results):
        click.echo(f"hpu-port: warning: {line}", err=True)


def mode_mismatches(results) -> list[str]:
    """Files ported before for the other mode than this run's: a switch of
    mode that `hpu-port init` explains."""
    from hpu_port.mode_choice import PORT_MARKS

    lines = []
    for mode, other in (("eager", "lazy"), ("lazy", "eager")):
        # A file with both marks serves both modes already.
        marked = [
            r.path for r in results
            if r.mode == mode and PORT_MARKS[other] in (r.source or b"") and PORT_MARKS[mode] not in (r.source or b"")
        ]
        if marked:
            lines.append(
                f"{plural(len(marked), 'file')} ({marked[0]}{', ...' if len(marked) > 1 else ''}) {'holds' if len(marked) == 1 else 'hold'} a port made for "
                f"{other} mode, and this run is in {mode} mode: revert that port and rewrite again (see `hpu-port init`)"
            )
    return lines


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


_MODE_SETTING = {"lazy": "PT_HPU_LAZY_MODE=1", "eager": "PT_HPU_LAZY_MODE=0"}


def mode_choice_lines(found, summaries, existing, release, advice, current) -> list[str]:
    """`hpu-port init`: what each mode does to this tree, what it targets and
    already holds, and the advice."""
    rules = {rule.code: rule for summary in summaries.values() for result in summary.results for rule in result.rules}
    lines = [f"Execution mode for this tree ({plural(found.files, 'file')} examined):", ""]
    for mode in ("lazy", "eager"):
        counts = getattr(found, mode)
        lines.append(f"  {mode} ({_MODE_SETTING[mode]}):")
        if not counts:
            lines.append("    nothing of this mode's own in the code (its port is the common one)")
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            summary = rules[code].summary if code in rules else ""
            lines.append(f"    {count:>4} × {code} {summary}")
    lines.append("")
    if release is not None:
        lines.append(f"Gaudi software the project names: {release[0]}.{release[1]}")
    else:
        lines.append("Gaudi software the project names: none (no Gaudi Docker image or PyTorch plug-in pin found)")
    if existing.mark_step_files or existing.hpu_backend_files:
        lines.append(
            f"Already in the tree: mark_step() in {plural(len(existing.mark_step_files), 'file')}, "
            f"hpu_backend in {plural(len(existing.hpu_backend_files), 'file')}"
        )
    if current is not None:
        lines.append(f"Configured now: mode = \"{current}\"")
    lines.append(f"Recommended: {advice.mode}, because {advice.why}.")
    lines.append("Choose before the first rewrite: switching later means reverting the port and porting again.")
    return lines


def switching_lines(chosen: str, current, existing) -> list[str]:
    """What choosing ``chosen`` means for a tree configured or ported for the other mode."""
    ported = existing.mode
    if ported is None or ported == chosen:
        if current is not None and current != chosen:
            return [f"Switching the configured mode from {current} to {chosen}: files not yet rewritten follow the new mode."]
        return []
    if ported == "lazy":
        return [
            f"This tree holds a lazy-mode port: mark_step() in {plural(len(existing.mark_step_files), 'file')}"
            + (f", PT_HPU_LAZY_MODE set in {plural(len(existing.lazy_env_files), 'file')}" if existing.lazy_env_files else "")
            + ".",
            "In eager mode the mark_step() calls do nothing, but the lazy port reported torch.compile instead of giving it "
            "backend=\"hpu_backend\", and launch lines set lazy mode: revert the port (its commit) and run `hpu-port rewrite` again.",
        ]
    return [
        f"This tree holds an eager-mode port: hpu_backend in {plural(len(existing.hpu_backend_files), 'file')}.",
        "Lazy mode does not support torch.compile and needs mark_step() after each backward pass and optimizer step: "
        "revert the port (its commit) and run `hpu-port rewrite` again.",
    ]
