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


def test_a_bare_traffic_light_emoji_is_the_difficulty_tag():
    """`1. What is a tensor's stride? 🟢` kept the emoji in the question and gave no difficulty."""
    from ingest.documents import parse_document

    text = "1. What is a tensor's stride? 🟢\n2. Why does backward accumulate? 🟡\n3. How does DDP sync? 🔴\n"
    parsed = parse_document(text, source="cards.txt")
    assert [(p.text, p.difficulty) for p in parsed] == [
        ("What is a tensor's stride?", 1), ("Why does backward accumulate?", 2), ("How does DDP sync?", 3)]


def _drafts_of(tmp_path: Path, text: str) -> tuple[Path, list[dict]]:
    from ingest.documents import parse_file
    from ingest.drafts import DraftCandidate

    doc = tmp_path / "cards.txt"
    doc.write_text(text, encoding="utf-8")
    pack = tmp_path / "pack"
    out = pack / "d.yaml"
    write_drafts([DraftCandidate(parsed, None, 0.0) for parsed in parse_file(doc)], out)
    return out, yaml.safe_load(out.read_text(encoding="utf-8"))


def test_a_draft_with_its_header_fields_filled_in_validates_as_a_pack(tmp_path: Path):
    """A draft's `sources: seed: cards.txt` failed every pack's validation: "unknown seed file 'cards.txt'"."""
    from knowledge.loader import bank_problems

    out, drafts = _drafts_of(tmp_path, "1. What is a tensor's stride? 🟢\n")
    header = out.read_text(encoding="utf-8").split("\n- ")[0]
    for field in ("id:", "framework:", "topic:", "difficulty:", "reference_answer:", "rubric:", "INTERVIEWER_BANK_DIR"):
        assert field in header
    drafts[0].update(
        id="tensor-stride", framework="pytorch", topic="tensors",
        reference_answer="The stride is how many elements to skip in storage to step one index along a dimension.",
        rubric=[{"id": f"point-{n}", "description": f"States idea number {n} of strides", "weight": 1.0,
                 "evidence": [f"idea {n}"]} for n in range(3)])
    out.write_text(yaml.safe_dump(drafts, sort_keys=False, allow_unicode=True), encoding="utf-8")
    questions, problems = bank_problems(out.parent, same_texts=True)
    assert problems == []
    assert [(s.seed, s.ref) for s in questions[0].sources] == [("cards.txt", "#1")]


def test_the_projects_own_bank_still_cites_only_its_seed_files():
    from pydantic import ValidationError

    from knowledge.schema import PACK_CONTEXT, SeedRef

    with pytest.raises(ValidationError, match="unknown seed file 'cards.txt'"):
        SeedRef.model_validate({"seed": "cards.txt", "ref": "#1"})
    assert SeedRef.model_validate({"seed": "cards.txt", "ref": "#1"}, context={PACK_CONTEXT: True}).seed == "cards.txt"


def test_unfilled_drafts_are_named_by_position_and_question(tmp_path: Path):
    """Every unfilled draft's problems said `entry None`, so they could not be told apart."""
    from knowledge.loader import bank_problems

    out, _ = _drafts_of(tmp_path, "1. What is a tensor's stride?\n2. Why zero the gradients before backward?\n")
    _, problems = bank_problems(out.parent)
    assert not any("entry None" in line for line in problems)
    assert any(line.startswith("d.yaml: entry #1 (no id yet: \"What is a tensor's stride?\"): field id")
               for line in problems)
    assert any(line.startswith('d.yaml: entry #2 (no id yet: "Why zero the gradients before backward?"): field id')
               for line in problems)


def test_a_draft_under_a_topic_heading_has_its_topic_filled(tmp_path: Path):
    """Drafts under `## Autograd` had `topic: null`, though autograd is a bank topic; under `## Data`, which names
    none, the topic stays null and the header says to fill it where it is."""
    out, drafts = _drafts_of(
        tmp_path,
        "# PyTorch interview questions\n\n## Autograd\n\nQ: What is a leaf tensor?\nA: One the user made.\n\n"
        "## Data\n\nQ: What does a sampler decide?\nA: The order of indices.\n",
    )
    assert [(d["topic"], d["sources"][0]["ref"]) for d in drafts] == [("autograd", "autograd#1"), (None, "data#1")]
    header = out.read_text(encoding="utf-8").split("\n- ")[0]
    assert "topic: where still null" in header
