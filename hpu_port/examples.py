"""Run a rule's own examples: the same code path the tests and `hpu-port explain` use."""

from __future__ import annotations

import os
import textwrap
from typing import Optional

from hpu_port.engine import port_bytes
from hpu_port.kinds import get_kind
from hpu_port.results import FileResult
from hpu_port.model import Example, Options, Rule
from hpu_port.project import ProjectFacts
from hpu_port.settings import RuleSet
from hpu_port.toolkit_log import ParsedLog, match, parse_text


def example_source(code: str) -> str:
    """Examples are written as indented blocks in TOML; this is the file they stand for."""
    return textwrap.dedent(code).lstrip("\n")


def example_options(example: Example) -> Options:
    options = example.options
    return Options(
        mode=options.get("mode", "lazy"),
        fp16_to_bf16=bool(options.get("fp16-to-bf16", False)),
        unsafe_fixes=bool(options.get("unsafe-fixes", False)),
    )


def example_ruleset(rule: Rule, all_rules: list[Rule], example: Example) -> RuleSet:
    """The rule itself, plus the import rules its fixes trigger (or the example's own selection),
    with every rule's analysis behind it, as a run with that selection has."""
    if example.select:
        chosen = [r for r in all_rules if r.code in example.select]
    else:
        chosen = [rule, *(r for r in all_rules if r.kind == "ensure-import" and r is not rule)]
    ruleset = RuleSet(chosen, example_options(example), analysis=all_rules)
    moved = tuple(example.options.get("moved-scripts", ()))
    if moved:
        # Scripts of the project that read the trainer's arguments from their
        # command line and that the run moves (see HPU847).
        ruleset.facts = ProjectFacts(parsing_scripts=moved, moved_scripts=moved, root=os.sep)
    sharding = tuple(os.path.abspath(path) for path in example.options.get("sharding-files", ()))
    nvidia_values = tuple(tuple(entry) for entry in example.options.get("nvidia-flag-values", ()))
    builders = frozenset(os.path.abspath(path) for path in example.options.get("cuda-extension-builders", ()))
    config_values = tuple(tuple(entry) for entry in example.options.get("nvidia-config-values", ()))
    if sharding or nvidia_values or builders or config_values:
        # Files of the project that shard a model with FSDP (see HPU816);
        # options and config keys whose values pick NVIDIA-only code (HPU853,
        # HPU862); files that build a CUDA extension (HPU855).
        ruleset.facts = ProjectFacts(
            sharding_files=sharding, nvidia_flag_values=nvidia_values, cuda_extension_builders=builders, root=os.sep,
            nvidia_config_values=config_values,
        )
    return ruleset


def example_file(rule: Rule, example: Example) -> str:
    """The file name the example stands for: its name picks the parser."""
    return example.file or get_kind(rule.kind).EXAMPLE_FILE


def run_example(rule: Rule, all_rules: list[Rule], example: Example, source: Optional[str] = None) -> FileResult:
    code = example_source(example.before) if source is None else source
    ruleset = example_ruleset(rule, all_rules, example)
    result = port_bytes(example_file(rule, example), code.encode(), ruleset, True)
    if example.toolkit_log is not None:
        # The log's sites are matched as `check --toolkit-log` matches them.
        result.source, result.rules = code.encode(), tuple(ruleset.rules)
        match([result], ParsedLog(*parse_text(example_source(example.toolkit_log)), 1), sources={result.path: code})
    return result
