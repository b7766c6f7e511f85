"""Failing tests for what the s50 review found; each is xfail(strict=True) until its fix lands (then drop the mark)."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import json

import pytest

from tests.api_fixtures import alice, api, build_api, scorer  # noqa: F401


@pytest.mark.xfail(strict=True, reason="review s50: a sentence that starts with a lower-case identifier "
                   "(detach(), requires_grad=False, torch.no_grad()) is not split from the one before it, so one "
                   "unit holds two claims and can earn only one rubric point")
def test_a_sentence_starting_with_a_lower_case_identifier_is_its_own_unit():
    from evaluators.text import split_units

    units = [u.text for u in split_units(
        "detach() returns a new tensor cut out of the graph. requires_grad=False is a flag on a leaf tensor."
    )]
    assert units == ["detach() returns a new tensor cut out of the graph.",
                     "requires_grad=False is a flag on a leaf tensor."]


@pytest.mark.xfail(strict=True, reason="review s50: graded examples that pair with no item of the batch (a "
                   "question_id typo) are dropped without a word: the caller believes the standard was applied")
def test_examples_that_pair_with_no_item_are_not_dropped_silently(alice):
    own = {"question": "Why call optimizer.zero_grad() every step?",
           "reference_answer": "Backward adds new gradients to the stored ones, so they must be cleared first."}
    item = {**own, "question_id": "LMS-item-17", "answer": "So the gradients do not pile up."}
    examples = [{**own, "question_id": "LMS-item-71", "answer": "They accumulate otherwise.", "grade": 5}]
    reply = alice.post("/v1/grade/batch", json={"items": [item], "examples": examples})
    said = reply.text
    assert reply.status_code == 400 and "examples[0]" in said or (
        reply.status_code == 200 and "LMS-item-71" in json.dumps(reply.json()))
