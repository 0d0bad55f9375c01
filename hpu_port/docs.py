"""Rule documentation pages, generated from the rule files.

The same text is shown by ``hpu-port explain CODE`` and written to
``docs/rules/<CODE>.md``; a test fails when the written pages are stale.
"""

from __future__ import annotations

from pathlib import Path

from hpu_port.examples import example_file, example_source
from hpu_port.kinds import get_kind
from hpu_port.model import Rule, is_advice
from hpu_port.rules import load_rules

FIX_SAFETY_TEXT = {
    "safe": "The fix is **safe**: `hpu-port rewrite` applies it, and it keeps the program's meaning on Gaudi.",
    "unsafe": "The fix is **unsafe**: it may change behaviour, so `hpu-port rewrite` applies it only with `--unsafe-fixes`; review the diff.",
    "none": "There is **no automatic fix**: this rule reports what a person must change.",
}


def _on_by_default(rule, short: bool = False) -> str:
    if not rule.default:
        return "no"
    if is_advice(rule):
        return "check only" if short else "in `check` (advice: `rewrite` applies it only when selected, e.g. `--extend-select " + rule.code + "`)"
    return "yes"


ITEM_SCOPE_WORDS = {
    "per-file": "a file's findings are one item (dealt with in one go)",
    "per-setting": "the same setting in many files is one item (one decision)",
    "per-repository": "all of its findings in the tree are one item (the same change in every file)",
}


def rule_page(rule: Rule) -> str:
    parts = [
        f"# {rule.code}: {rule.name}\n",
        f"{rule.summary}\n",
        f"- Kind: `{rule.kind}`\n- Category: {rule.category}\n- Fix: {rule.fix}\n"
        f"- On by default: {_on_by_default(rule)}\n"
        + (f"- Mode: only with `--mode {rule.mode}`\n" if rule.mode else "")
        + (f"- Needs the `--{rule.option}` option to fix\n" if rule.option else "")
        + (f"- Planning: {ITEM_SCOPE_WORDS[rule.items]}\n" if rule.items in ITEM_SCOPE_WORDS else ""),
        "## What it does\n",
        _what_it_does(rule),
        "## Why\n",
        f"{rule.why}\n",
    ]
    parts += _examples_section(rule)
    parts += ["## Fix safety\n", FIX_SAFETY_TEXT[rule.fix] + "\n"]
    if rule.references:
        parts += ["## References\n", "".join(f"- <{url}>\n" for url in rule.references)]
    return "\n".join(parts)


def _what_it_does(rule: Rule) -> str:
    details = get_kind(rule.kind).describe(rule)
    return f"{rule.summary}\n" + (f"\n{details}" if details else "")


def _examples_section(rule: Rule) -> list[str]:
    parts: list[str] = []
    invalid = [e for e in rule.examples if not e.valid]
    valid = [e for e in rule.examples if e.valid]
    for index, example in enumerate(invalid, 1):
        title = "## Example\n" if index == 1 else f"### Example {index}\n"
        parts += [title, _code(rule, example, example.before)]
        if example.toolkit_log is not None:
            parts += ["With this GPU Migration Toolkit log (`--toolkit-log`):\n", _log(example.toolkit_log)]
        if example.after is not None:
            parts += ["Use instead:\n", _code(rule, example, example.after)]
    if valid:
        parts.append("## Left unchanged\n")
        parts += [_code(rule, example, example.before) for example in valid]
    return parts


def _log(text: str) -> str:
    return "```text\n" + example_source(text).rstrip("\n") + "\n```\n"


def _code(rule: Rule, example, source: str) -> str:
    file = example_file(rule, example)
    heading = "" if file.endswith(".py") else f"In `{file}`:\n\n"
    return heading + f"```{_language(file)}\n" + example_source(source).rstrip("\n") + "\n```\n"


_LANGUAGES = {"shell": "sh", "yaml": "yaml", "json": "json", "toml": "toml", "makefile": "makefile", "apptainer": "singularity", "dotenv": "sh", "dockerfile": "dockerfile", "cmake": "cmake", "cuda": "cuda",
              "requirements": "text", "pyproject": "toml", "setup-cfg": "ini", "notebook": "python"}


def _language(file: str) -> str:
    from hpu_port.filetypes import detect

    return _LANGUAGES.get(detect(file, b"") or "python", "python")


def index_page(rules: list[Rule]) -> str:
    rows = "".join(
        f"| [{r.code}]({r.code}.md) | {r.name} | {r.kind} | {r.fix} | {_on_by_default(r, short=True)} | {r.summary} |\n"
        for r in rules
    )
    return (
        "# Rules\n\n"
        "Generated from the files in `rules/` by `python -m hpu_port.docs`; do not edit.\n\n"
        + NUMBERING
        + "\n| code | name | kind | fix | default | summary |\n|---|---|---|---|---|---|\n"
        + rows
    )


NUMBERING = """Codes are stable: a code is never reused for another rule.

| range | area |
|---|---|
| HPU0xx | imports the port needs |
| HPU1xx | `torch.cuda` APIs, device strings and device placement |
| HPU2xx | lazy mode: `mark_step`, `torch.compile`, HPU graphs |
| HPU3xx | mixed precision: autocast, loss scaling, fp16 |
| HPU4xx | distributed training: NCCL, DDP, launchers |
| HPU5xx | CUDA libraries and frameworks: apex, pynvml, Lightning, DeepSpeed, Hugging Face |
| HPU6xx | features Gaudi does not support: manual review |
| HPU7xx | optimization advice |
| HPU8xx | outside Python: scripts, containers, configs, dependencies, CUDA sources |
| HPU9xx | reserved for user rule files |
"""


def expected_pages(rules: list[Rule]) -> dict[str, str]:
    pages = {f"{rule.code}.md": rule_page(rule) for rule in rules}
    pages["README.md"] = index_page(rules)
    return pages


def write_pages(rules: list[Rule], directory: Path) -> list[str]:
    """Write every page whose content differs; return the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in expected_pages(rules).items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(name)
    return written


if __name__ == "__main__":  # python -m hpu_port.docs [DIR]
    import sys

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/rules")
    for name in write_pages(load_rules(), target):
        print(f"wrote {target / name}")

