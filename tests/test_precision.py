"""Rewrites of real training code stay as labelled.

The pinned corpus (tests/precision/corpus.toml) is downloaded and ported in every
configuration; each labelled rewrite must come out as it was labelled: a correct
one still made exactly so, a wrong one never again. Rewrites the corpus did not
produce when the labels were made are listed for labelling, without failing.
Run with `python -m pytest -m slow tests/test_precision.py` (it takes minutes).
"""

from collections import Counter

import pytest

from tests.precision import corpus

pytestmark = [pytest.mark.network, pytest.mark.slow]


@pytest.fixture(scope="module")
def labels():
    return corpus.load_labels()


@pytest.fixture(scope="module")
def produced(labels):
    configs = sorted({label["options"] for label in labels})
    hunks = {hunk.id: hunk for hunk in corpus.corpus_hunks(configs)}
    known = corpus.known_hunk_ids() | {label["id"] for label in labels}
    new = [hunk for hunk in hunks.values() if hunk.id not in known]
    if new:
        print(f"\n{len(new)} rewrites not seen when the labels were made; label them in {corpus.LABELS.name}:")
        for hunk in new:
            print(f"--- {hunk.package}:{hunk.file}:{hunk.line} [{hunk.options}] {hunk.id} {' '.join(hunk.codes)}")
            print(hunk.text(), end="")
    return hunks


def describe(rows) -> str:
    by_class = Counter(row["class"] or "-" for row in rows)
    lines = [f"{row['package']}:{row['file']}:{row['line']} [{row['options']}] {row['id']}: {row['why']}" for row in rows]
    return f"{len(rows)} hunks, by class {dict(by_class)}:\n" + "\n".join(lines[:50])


def test_labels_are_complete(labels):
    for row in labels:
        assert row["label"] in ("correct", "wrong"), row["id"]
        if row["label"] == "wrong":
            assert row["class"] and row["severity"] in ("serious", "minor") and row["why"], row["id"]
    assert len({row["id"] for row in labels}) == len(labels)


def test_correct_rewrites_are_still_made(labels, produced):
    missing = [row for row in labels if row["label"] == "correct" and row["id"] not in produced]
    assert not missing, "labelled-correct rewrites that disappeared or changed: " + describe(missing)


def test_wrong_rewrites_do_not_come_back(labels, produced):
    back = [row for row in labels if row["label"] == "wrong" and row["id"] in produced]
    assert not back, "labelled-wrong rewrites that are made again: " + describe(back)
