"""The rule pages in docs/rules are generated from the rule files and kept fresh."""

from hpu_port.docs import expected_pages
from hpu_port.rules import load_rules
from tests.conftest import REPO

DOCS = REPO / "docs" / "rules"


def test_rule_pages_are_fresh():
    stale = [
        name
        for name, text in expected_pages(load_rules()).items()
        if not (DOCS / name).exists() or (DOCS / name).read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"run `python -m hpu_port.docs` to regenerate: {stale}"


def test_no_orphan_pages():
    expected = set(expected_pages(load_rules()))
    assert {p.name for p in DOCS.glob("*.md")} == expected


def test_every_page_has_the_sections():
    for rule in load_rules():
        page = (DOCS / f"{rule.code}.md").read_text(encoding="utf-8")
        for section in ("## What it does", "## Why", "## Example", "## Fix safety"):
            assert section in page, f"{rule.code} lacks {section}"
