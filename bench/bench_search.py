"""Retrieval benchmark: recall on casual paraphrases, ingest cost, query latency, peak memory.

Run from the repository root:  .venv/bin/python bench/bench_search.py

Prints figures only (no asserts). The paraphrase set, bench/data/search_paraphrases.jsonl, is
written the way candidates and interviewers talk ("my loss is flat, what now"), not in the bank's
own wording, so it measures how well search maps real phrasing onto bank entries.

Compared side by side on the same store and queries:
  bm25       lexical scores only (the BM25 half of the hybrid, over the same stored texts)
  embedding  store.search with knowledge.vectorstore.LEXICAL_WEIGHT = 0 (pure cosine ranking)
  hybrid     store.search as shipped (cosine fused with BM25)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402

import numpy as np  # noqa: E402

import knowledge.vectorstore as vectorstore  # noqa: E402
from knowledge.embeddings import Embedder, get_embedder  # noqa: E402
from knowledge.errors import BankError  # noqa: E402
from knowledge.loader import BANK_DIR, load_bank, load_file  # noqa: E402
from knowledge.schema import Question  # noqa: E402

PARAPHRASES = ROOT / "bench" / "data" / "search_paraphrases.jsonl"
K = 5
TARGET_RECALL_AT_5 = 0.95
TARGET_P50_MS = 15.0


class CountingEmbedder(Embedder):
    """Wraps the real embedder and counts texts embedded (same name, so the same collection)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.texts = 0

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self._inner.embed_batch(texts)


def load_questions() -> tuple[list[Question], str]:
    """The bank; if it is mid-edit (unknown `related` ids, a broken file) load what is valid."""
    bank_dir = Path(os.environ.get("INTERVIEWER_BANK_DIR") or BANK_DIR)
    try:
        return load_bank(bank_dir), f"{bank_dir}"
    except BankError as exc:
        note = f"{bank_dir} (lenient load: {str(exc)[:100]})"
    questions: list[Question] = []
    skipped = []
    for path in sorted(bank_dir.glob("*.yaml")):
        try:
            questions.extend(load_file(path))
        except BankError:
            skipped.append(path.name)
    seen: set[str] = set()
    unique = []
    for q in questions:
        if q.id not in seen:
            seen.add(q.id)
            unique.append(q)
    fixed = [q.model_copy(update={"related": [r for r in q.related if r in seen]}) for q in unique]
    if skipped:
        note += f"; skipped files: {', '.join(skipped)}"
    return fixed, note


def load_paraphrases(known: set[str]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    rows = [json.loads(line) for line in PARAPHRASES.read_text().splitlines() if line.strip()]
    usable = [r for r in rows if r["expected"] in known]
    unknown = [r for r in rows if r["expected"] not in known]
    return usable, unknown


def percentile(values: list[float], pct: float) -> float:
    return float(np.percentile(np.array(values), pct))


def run_store_mode(store, rows, lexical_weight: float) -> tuple[list[list[str]], list[float]]:
    """Rankings (top-K ids) and per-query latency in ms for store.search at a lexical weight."""
    saved = vectorstore.LEXICAL_WEIGHT
    vectorstore.LEXICAL_WEIGHT = lexical_weight
    try:
        store.search("warm-up query about tensors", k=K)  # builds the lazy BM25 index
        ranked, latencies = [], []
        for row in rows:
            t0 = time.perf_counter()
            hits = store.search(row["query"], k=K)
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked.append([h.id for h in hits])
        return ranked, latencies
    finally:
        vectorstore.LEXICAL_WEIGHT = saved


def run_bm25_mode(store, rows) -> tuple[list[list[str]], list[float]]:
    index = store._lexical_index()
    ranked, latencies = [], []
    for row in rows:
        t0 = time.perf_counter()
        scores = index.scores(row["query"])
        top = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:K]
        latencies.append((time.perf_counter() - t0) * 1000)
        ranked.append([doc_id for doc_id, score in top if score > 0])
    return ranked, latencies


def recall(ranked: list[list[str]], rows, at: int) -> float:
    return sum(r["expected"] in ids[:at] for ids, r in zip(ranked, rows, strict=True)) / len(rows)


def mrr(ranked: list[list[str]], rows) -> float:
    total = 0.0
    for ids, row in zip(ranked, rows, strict=True):
        if row["expected"] in ids:
            total += 1.0 / (ids.index(row["expected"]) + 1)
    return total / len(rows)


def main() -> None:
    t_start = time.perf_counter()
    questions, bank_note = load_questions()
    known = {q.id for q in questions}
    rows, unknown = load_paraphrases(known)
    topics = {q.topic.value for q in questions if q.id in {r["expected"] for r in rows}}
    print(f"bank: {len(questions)} entries from {bank_note}")
    print(
        f"paraphrases: {len(rows)} queries, {len({r['expected'] for r in rows})} distinct ids, "
        f"{len(topics)} topics"
        + (
            f"; {len(unknown)} skipped (expected id not in bank): {', '.join(r['expected'] for r in unknown)}"
            if unknown
            else ""
        )
    )

    t0 = time.perf_counter()
    inner = get_embedder("minilm")
    inner.embed("warm up")
    model_load_s = time.perf_counter() - t0
    embedder = CountingEmbedder(inner)
    rss_before_ingest_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    with tempfile.TemporaryDirectory(prefix="bench-search-", ignore_cleanup_errors=True) as tmp:
        # --- ingest: cold (fresh dir), then unchanged (second run on the same dir) -------------
        store = vectorstore.open_store(data_dir=tmp, embedder=embedder)
        t0 = time.perf_counter()
        cold = store.upsert(questions)
        cold_s = time.perf_counter() - t0
        cold_texts = embedder.texts

        embedder.texts = 0
        store = vectorstore.open_store(data_dir=tmp, embedder=embedder)
        t0 = time.perf_counter()
        warm = store.upsert(questions)
        warm_s = time.perf_counter() - t0
        warm_texts = embedder.texts

        # --- retrieval: three rankers over the same store and queries -------------------------
        modes = {
            "bm25": run_bm25_mode(store, rows),
            "embedding": run_store_mode(store, rows, 0.0),
            "hybrid": run_store_mode(store, rows, vectorstore.LEXICAL_WEIGHT),
        }

    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    print()
    print(f"embedder load + warm-up: {model_load_s * 1000:.0f} ms ({inner.name})")
    print(
        f"ingest cold:      {cold_s * 1000:7.0f} ms  added={cold.added} updated={cold.updated} "
        f"unchanged={cold.unchanged} texts embedded={cold_texts}"
    )
    print(
        f"ingest unchanged: {warm_s * 1000:7.0f} ms  added={warm.added} updated={warm.updated} "
        f"unchanged={warm.unchanged} texts embedded={warm_texts}"
        + ("" if warm_texts == 0 else "  <-- expected 0")
    )

    print()
    print(
        f"retrieval over {len(rows)} paraphrases, k={K} (hybrid LEXICAL_WEIGHT={vectorstore.LEXICAL_WEIGHT})"
    )
    header = f"{'mode':<10} {'R@1':>6} {'R@5':>6} {'MRR@5':>6} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}"
    print(header)
    print("-" * len(header))
    for name, (ranked, lat) in modes.items():
        print(
            f"{name:<10} {recall(ranked, rows, 1):6.3f} {recall(ranked, rows, K):6.3f} "
            f"{mrr(ranked, rows):6.3f} {statistics.median(lat):7.2f} {percentile(lat, 95):7.2f} "
            f"{max(lat):7.2f}"
        )

    hybrid_ranked, hybrid_lat = modes["hybrid"]
    emb_ranked, _ = modes["embedding"]
    r5 = recall(hybrid_ranked, rows, K)
    p50 = statistics.median(hybrid_lat)
    print()
    print(
        f"hybrid recall@5 {r5:.3f} (target >= {TARGET_RECALL_AT_5}: "
        f"{'met' if r5 >= TARGET_RECALL_AT_5 else 'NOT met'}); "
        f"p50 {p50:.2f} ms (target < {TARGET_P50_MS:.0f} ms: {'met' if p50 < TARGET_P50_MS else 'NOT met'})"
    )

    misses = [(row, ids) for row, ids in zip(rows, hybrid_ranked, strict=True) if row["expected"] not in ids]
    print(f"\nhybrid misses@{K} ({len(misses)}):")
    for row, ids in misses:
        print(f"  expected {row['expected']:<28} got {', '.join(ids[:3])}\n      q: {row['query']}")
    top1_misses = [
        (row, ids)
        for row, ids in zip(rows, hybrid_ranked, strict=True)
        if ids and ids[0] != row["expected"] and row["expected"] in ids
    ]
    print(f"hybrid in top-{K} but not first ({len(top1_misses)}):")
    for row, ids in top1_misses:
        print(f"  expected {row['expected']:<28} rank {ids.index(row['expected']) + 1}, first {ids[0]}")

    fixed = [
        r["expected"]
        for r, h, e in zip(rows, hybrid_ranked, emb_ranked, strict=True)
        if r["expected"] in h and r["expected"] not in e
    ]
    broken = [
        r["expected"]
        for r, h, e in zip(rows, hybrid_ranked, emb_ranked, strict=True)
        if r["expected"] not in h and r["expected"] in e
    ]
    print(
        f"\nhybrid vs embedding @{K}: rescued {len(fixed)} {fixed or ''}, lost {len(broken)} {broken or ''}"
    )

    print(
        f"\npeak RSS: {peak_rss_mb:.0f} MB (before ingest {rss_before_ingest_mb:.0f} MB)   "
        f"total wall time: {time.perf_counter() - t_start:.1f} s"
    )


if __name__ == "__main__":
    main()
