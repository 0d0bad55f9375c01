import textwrap
from pathlib import Path

import pytest

from hpu_port.engine import port_source
from hpu_port.rules import load_rules, select_rules
from hpu_port.settings import Options, RuleSet

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def all_rules():
    return load_rules()


def make_ruleset(select=(), extra_rules=(), **options):
    rules = load_rules(extra_rules)
    return RuleSet(select_rules(rules, select), Options(**options))


def port(code, select=(), extra_rules=(), apply=True, **options):
    """Port a snippet with the default (or selected) rules; returns the FileResult."""
    source = textwrap.dedent(code).lstrip("\n").encode()
    return port_source("snippet.py", source, make_ruleset(select, extra_rules, **options), apply)


def ported(code, **kwargs):
    result = port(code, **kwargs)
    assert result.error is None, result.error
    return (result.new_source or result.source).decode()
