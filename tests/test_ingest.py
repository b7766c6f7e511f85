"""Raw documents: every seed question is found, and questions the bank already asks are matched to it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ingest.documents import DocumentError
from ingest.drafts import classify_documents, write_drafts
from tests.conftest import SEEDS


@pytest.fixture(scope="module")
def seed_candidates(ingested_store):
    if not SEEDS.is_dir():
        pytest.skip("shared seeds not present")
    return classify_documents(ingested_store, sorted(SEEDS.glob("*.txt")))


def test_every_seed_question_is_found(seed_candidates):
    assert len(seed_candidates) == 157


def test_seed_questions_are_matched_to_the_entries_that_cover_them(seed_candidates, bank):
    owners: dict[tuple[str, str], set[str]] = {}
    for question in bank:
        for source in question.sources:
            owners.setdefault((source.seed, source.ref), set()).add(question.id)
    right = wrong = 0
    for candidate in seed_candidates:
        if candidate.duplicate_of is None:
            continue
        key = (candidate.parsed.source, candidate.parsed.ref)
        if candidate.duplicate_of in owners[key]:
            right += 1
        else:
            wrong += 1
    assert right >= 0.75 * len(seed_candidates), (right, wrong)
    assert wrong <= 0.1 * len(seed_candidates), (right, wrong)


def test_a_new_question_is_written_as_a_draft(ingested_store, tmp_path: Path):
    doc = tmp_path / "extra.md"
    doc.write_text(
        "## Questions\n\n1. How does JAX's vmap transform differ from a Python loop?\n\n"
        "2. What is the capital of France?\n\n3. Why do we call optimizer.zero_grad() before backward?\n",
        encoding="utf-8",
    )
    candidates = classify_documents(ingested_store, [doc])
    assert len(candidates) == 3
    assert candidates[2].duplicate_of == "zero-grad"
    out = tmp_path / "drafts.yaml"
    written = write_drafts(candidates, out)
    drafts = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert written == len(drafts) == 2
    assert drafts[0]["sources"] == [{"seed": "extra.md", "ref": "#1"}]


def test_two_documents_of_one_name_keep_apart_sources(ingested_store, tmp_path: Path):
    docs = []
    for folder in ("d1", "d2"):
        (tmp_path / folder).mkdir()
        docs.append(tmp_path / folder / "notes.md")
        docs[-1].write_text("1. What is a tensor?\n", encoding="utf-8")
    sources = [c.parsed.source for c in classify_documents(ingested_store, docs)]
    assert sources == [str(docs[0]), str(docs[1])]


def test_unreadable_document_fails_before_anything_is_written(ingested_store, tmp_path: Path):
    good = tmp_path / "good.md"
    good.write_text("1. What is a tensor?\n", encoding="utf-8")
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(DocumentError, match="bad.md"):
        classify_documents(ingested_store, [good, bad])
