"""Failing tests for what the s50 review found; each is xfail(strict=True) until its fix lands (then drop the mark)."""

# ruff: noqa: F811 - pytest fixtures imported from tests.api_fixtures are redefined as arguments
from __future__ import annotations

import json

import pytest

from tests.api_fixtures import alice, api, build_api, scorer  # noqa: F401


def test_examples_that_pair_with_no_item_are_not_dropped_silently(alice):
    own = {"question": "Why call optimizer.zero_grad() every step?",
           "reference_answer": "Backward adds new gradients to the stored ones, so they must be cleared first."}
    item = {**own, "question_id": "LMS-item-17", "answer": "So the gradients do not pile up."}
    examples = [{**own, "question_id": "LMS-item-71", "answer": "They accumulate otherwise.", "grade": 5}]
    reply = alice.post("/v1/grade/batch", json={"items": [item], "examples": examples})
    said = reply.text
    assert reply.status_code == 400 and "examples[0]" in said or (
        reply.status_code == 200 and "LMS-item-71" in json.dumps(reply.json()))
