"""Rewrites of real training code stay as labelled.

The pinned corpus (tests/precision/corpus.toml) is downloaded and ported in every
configuration; each labelled rewrite must come out as it was labelled: a correct
one still made exactly so, a wrong one that is no longer made never again. Wrong
rewrites still made (listed in known_hunks.txt, the corpus's output when the labels
were last brought up to date) are counted, and rewrites the corpus did not produce
then are listed for labelling, without failing.
Run with `python -m pytest -m slow -s tests/test_precision.py` (it takes minutes;
-s shows the lists).
"""

from collections import Counter

import pytest

from tests.precision import corpus, silence

pytestmark = [pytest.mark.network, pytest.mark.slow]


@pytest.fixture(scope="module")
def labels():
    return corpus.load_labels()


@pytest.fixture(scope="module")
def known():
    return corpus.known_hunk_ids()


@pytest.fixture(scope="module")
def reports():
    return {}


@pytest.fixture(scope="module")
def produced(labels, known, reports):
    configs = sorted({label["options"] for label in labels})
    hunks = {hunk.id: hunk for hunk in corpus.corpus_hunks(configs, reports=reports)}
    labelled = {label["id"] for label in labels}
    remaining = [label for label in labels if label["label"] == "wrong" and label["id"] in hunks]
    print(f"\n{len(remaining)} labelled-wrong rewrites are still made: {describe(remaining, limit=0)}")
    new = [hunk for hunk in hunks.values() if hunk.id not in known | labelled]
    if new:
        print(f"\n{len(new)} rewrites not seen when the labels were made; label them in {corpus.LABELS.name}:")
        for hunk in new:
            print(f"--- {hunk.package}:{hunk.file}:{hunk.line} [{hunk.options}] {hunk.id} {' '.join(hunk.codes)}")
            print(hunk.text(), end="")
    return hunks


def describe(rows, limit: int = 50) -> str:
    by_class = Counter(row["class"] or "-" for row in rows)
    lines = [f"{row['package']}:{row['file']}:{row['line']} [{row['options']}] {row['id']}: {row['why']}" for row in rows]
    return f"{len(rows)} hunks, by class {dict(by_class)}\n" + "\n".join(lines[:limit])


def test_labels_are_complete(labels):
    for row in labels:
        assert row["label"] in ("correct", "wrong"), row["id"]
        if row["label"] == "wrong":
            assert row["class"] and row["severity"] in ("serious", "minor") and row["why"], row["id"]
    assert len({row["id"] for row in labels}) == len(labels)


def test_correct_rewrites_are_still_made(labels, produced):
    """Recall on the labelled changes: a labelled-correct rewrite that is no
    longer made (held back, or changed) is lost recall. Labels are never
    deleted to hide one: a loss that is right (the change is now reported
    instead) is acknowledged, with its id, in known_held.txt, where a review
    sees it."""
    correct = [row for row in labels if row["label"] == "correct"]
    missing = [row for row in correct if row["id"] not in produced]
    print(f"\nrecall on labelled-correct rewrites: {len(correct) - len(missing)}/{len(correct)} "
          f"= {1 - len(missing) / len(correct):.4f} ({len(missing)} no longer made)")
    acknowledged = corpus.known_hunk_ids(corpus.KNOWN_HELD)
    lost = [row for row in missing if row["id"] not in acknowledged]
    assert not lost, (
        "labelled-correct rewrites no longer made (lost recall); if each is now rightly reported "
        f"instead, add its id to {corpus.KNOWN_HELD.name}: " + describe(lost)
    )


def test_new_rewrites_beside_labelled_ones_are_labelled(labels, produced, known):
    """A file whose rewrites are labelled gets no unlabelled one: it would go
    unmeasured where the labels say the tool is right."""
    labelled_files = {(row["package"], row["file"]) for row in labels}
    ids = {row["id"] for row in labels} | known
    new = [hunk for hunk in produced.values() if hunk.id not in ids and (hunk.package, hunk.file) in labelled_files]
    assert not new, f"{len(new)} unlabelled rewrites in labelled files; label them in {corpus.LABELS.name}: " + ", ".join(
        f"{hunk.package}:{hunk.file}:{hunk.line} {hunk.id}" for hunk in new[:50]
    )


def test_wrong_rewrites_do_not_come_back(labels, produced, known):
    back = [row for row in labels if row["label"] == "wrong" and row["id"] in produced and row["id"] not in known]
    assert not back, "labelled-wrong rewrites that are made again: " + describe(back)


def test_no_cuda_line_is_left_silent(produced, reports):
    """Every code line that still mentions CUDA or NCCL after the default port
    carries a finding (or is removed by the rewrite)."""
    silent = []
    for package in corpus.load_manifest():
        report = reports[(package.key, "default")]
        silent += [f"{package.key}/{line}" for line in silence.silent_lines(corpus.unpack(package, corpus.cache_dir()), report)]
    assert silent == []
