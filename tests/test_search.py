"""Chroma-backed retrieval: incremental ingest, filters, hybrid ranking, and clear errors."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.embeddings import HashingEmbedder
from knowledge.errors import SearchError
from knowledge.vectorstore import build_where, open_store
from tests.processes import Watch


def test_reingest_of_unchanged_bank_embeds_nothing(tmp_path: Path, bank):
    class CountingEmbedder(HashingEmbedder):
        calls = 0

        def embed_batch(self, texts):
            CountingEmbedder.calls += len(texts)
            return super().embed_batch(texts)

    embedder = CountingEmbedder()
    store = open_store(data_dir=str(tmp_path), embedder=embedder)
    first = store.upsert(bank)
    assert first.added == len(bank) and first.embedded == len(bank)
    embedded_before = CountingEmbedder.calls
    again = open_store(data_dir=str(tmp_path), embedder=embedder).upsert(bank)
    assert again.embedded == 0 and again.unchanged == len(bank)
    assert CountingEmbedder.calls == embedded_before
    changed = [bank[0].model_copy(update={"question": bank[0].question + " Explain briefly."}), *bank[1:-1]]
    third = store.upsert(changed)
    assert (third.updated, third.removed, third.added) == (1, 1, 0)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("my model is not learning, the loss stays flat, what do you check", "model-not-learning"),
        ("what does the backward call on the loss actually do", "backpropagation"),
        ("write a relu whose gradient you code by hand", "relu-autograd-function"),
        ("difference between calling .view and .reshape on a tensor", "view-vs-reshape"),
    ],
)
def test_paraphrased_queries_find_their_entry(ingested_store, query, expected):
    ids = [hit.id for hit in ingested_store.search(query, k=5)]
    assert expected in ids


def test_queries_searched_together_get_what_each_gets_alone(ingested_store):
    queries = ["what does the backward call on the loss actually do", "view versus reshape", "tf.function tracing"]
    together = ingested_store.search_many(queries, k=4)
    assert together == [ingested_store.search(q, k=4) for q in queries]
    assert ingested_store.search_many([], k=4) == []
    with pytest.raises(SearchError, match="empty query"):
        ingested_store.search_many(["fine", " "])


def test_filters_restrict_results(ingested_store):
    hits = ingested_store.search("how are gradients computed", k=10, filters={"framework": "tensorflow"})
    assert hits and all(h.framework == "tensorflow" for h in hits)
    hits = ingested_store.search("training", k=10, filters={"topic": "autograd", "difficulty": 3})
    assert hits and all(h.topic == "autograd" and h.difficulty == 3 for h in hits)


def test_bad_requests_fail_with_a_clear_message(ingested_store):
    with pytest.raises(SearchError, match="empty query"):
        ingested_store.search("   ")
    with pytest.raises(SearchError, match="unknown topic 'quantum'"):
        ingested_store.search("x", filters={"topic": "quantum"})
    with pytest.raises(SearchError, match="unknown filter 'colour'"):
        build_where({"colour": "red"})


def test_down_chroma_server_is_one_clear_error(embedder):
    with pytest.raises(SearchError, match="not reachable"):
        open_store(data_dir="unused", host="127.0.0.1", port=_free_port(), embedder=embedder)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.e2e
def test_real_chroma_server(tmp_path: Path, bank, embedder):
    """The same ingest and search against a `chroma run` server process."""
    port = _free_port()
    chroma = Path(sys.executable).with_name("chroma")
    server = subprocess.Popen(
        [str(chroma), "run", "--path", str(tmp_path / "srv"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        store, watch = None, Watch(server.pid)  # until it answers, however long a loaded machine takes to start it
        while store is None:
            try:
                store = open_store(data_dir="unused", host="127.0.0.1", port=port, embedder=embedder)
            except SearchError:
                if (why := watch.stuck()) is not None:
                    raise AssertionError(f"chroma run not answering: it {why}") from None
                time.sleep(0.3)
        assert store.upsert(bank).added == len(bank)
        assert store.upsert(bank).embedded == 0
        hits = store.search("custom autograd function with a hand-written backward", k=3)
        assert "relu-autograd-function" in [h.id for h in hits]
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("use fp16 to speed up training", "mixed-precision"),
        ("can I train in bf16 on an A100", "mixed-precision"),
        ("turning on AMP in my training script", "mixed-precision"),
        ("what is the TensorFlow counterpart of PyTorch autograd", "tf-automatic-differentiation"),
        ("how does GradientTape compare to autograd", "tf-automatic-differentiation"),
        ("automatic differentiation in torch, how does it work", "autograd-basics"),
        ("DP or DDP for four GPUs in one box", "ddp-vs-dataparallel"),
    ],
)
def test_domain_synonyms_reach_their_entry(ingested_store, query, expected):
    assert expected in [hit.id for hit in ingested_store.search(query, k=5)]


def test_the_glossary_is_what_finds_fp16(ingested_store, monkeypatch):
    """Without the synonyms the bank's own wording ('mixed precision') is not reached from 'fp16'."""
    import knowledge.vectorstore as vectorstore

    monkeypatch.setattr(vectorstore, "EXPAND_QUERIES", "off")
    assert "mixed-precision" not in [hit.id for hit in ingested_store.search("use fp16 to speed up training", k=5)]


def test_glossary_terms_match_longest_first():
    from knowledge.glossary import Glossary

    glossary = Glossary(
        [["custom autograd function", "torch.autograd.Function"], ["autograd", "autodiff"], ["lr", "learning rate"]]
    )
    assert glossary.related_terms("How to implement a custom autograd function?") == ["torch.autograd.Function"]
    assert glossary.related_terms("autograd and my LR") == ["autodiff", "learning rate"]
    assert glossary.expand("nothing to add") == "nothing to add"


def test_grading_match_says_how_sure_it_is(ingested_store, bank):
    from app.grading import MATCH_THRESHOLD, BulkGrader

    grader = BulkGrader(evaluator=None, bank={q.id: q for q in bank}, store=ingested_store)  # type: ignore[arg-type]
    line = grader.resolve({"question": "How to implement a custom autograd function?", "answer": "x"})
    assert line.matched_id == "relu-autograd-function" and line.match_confidence >= MATCH_THRESHOLD
    refused = grader.resolve({"question": "What is a VAE's reparameterization trick?", "answer": "x"})
    assert not refused.tasks and "confidence" in refused.error and refused.matched_id is None


def test_glossary_synonyms_are_of_the_whole_term():
    """What ingest fills a draft's topic from: "autodiff" is a synonym of the autograd topic; "tensorflow core" (a
    topic) has none, though its group-mate "tf" is a synonym of "tensorflow"."""
    from knowledge.glossary import Glossary

    glossary = Glossary([["automatic differentiation", "autodiff", "autograd"], ["tensorflow", "tf"]])
    assert glossary.synonyms("Autograd") == ["automatic differentiation", "autodiff"]
    assert glossary.synonyms("tensorflow core") == []
