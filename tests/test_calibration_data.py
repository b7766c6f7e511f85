"""The human-graded calibration sets stay well formed: every line resolves, grades are on the 0-5 half-point
scale, and a question's answers never straddle two splits (which would leak tuning into a held-out figure)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from bench.scorer_metrics import CALIBRATION, FRESH, FRESH2, SPLITS, graders_verdicts

KINDS = {"strong", "paraphrase", "partial", "misconceived", "stuffed", "evasive", "off-topic", "padded", "code"}


@pytest.mark.parametrize("path", [CALIBRATION, FRESH, FRESH2], ids=lambda p: p.name)
def test_calibration_lines_are_well_formed(path, bank):
    by_id = {q.id: q for q in bank}
    ids = set(by_id)
    splits_of = defaultdict(set)
    seen = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        assert list(row) == ["id", "question_id", "kind", "answer", "grade", "split", "rationale"], n
        assert row["id"] not in seen, n
        seen.add(row["id"])
        assert row["question_id"] in ids, n
        assert row["kind"] in KINDS, n
        assert 0 <= row["grade"] <= 5 and row["grade"] * 2 == int(row["grade"] * 2), n
        assert row["split"] in SPLITS, n
        assert row["answer"].strip() and row["rationale"].strip(), n
        # A rationale that grades point by point grades every point of its question (bench_scorer.py reads
        # them): a grade the parser does not know, or a point named otherwise, would leave one out.
        points = {p.id for p in by_id[row["question_id"]].rubric}
        assert set(graders_verdicts(row, points)) in (set(), points), n
        splits_of[row["question_id"]].add(row["split"])
    assert all(len(s) == 1 for s in splits_of.values())


def test_each_set_uses_its_own_questions():
    """A later set is a blind check only if none of its questions was tuned on in an earlier one."""
    questions = [
        {json.loads(line)["question_id"] for line in path.read_text(encoding="utf-8").splitlines()}
        for path in (CALIBRATION, FRESH, FRESH2)
    ]
    assert not (questions[0] & questions[1] or questions[0] & questions[2] or questions[1] & questions[2])
