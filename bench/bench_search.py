"""Retrieval benchmark: recall on casual paraphrases, ingest cost, query latency, peak memory.

Run from the repository root:  .venv/bin/python bench/bench_search.py

Prints figures only (no asserts). The paraphrase set, bench/data/search_paraphrases.jsonl, is
written the way candidates and interviewers talk ("my loss is flat, what now"), not in the bank's
own wording, so it measures how well search maps real phrasing onto bank entries.

Compared side by side on the same store and queries, on the first paraphrase set and on the fresh
one (bench/data/search_paraphrases_fresh.jsonl, written before the glossary was):
  bm25          lexical scores only (the BM25 half of the hybrid, over the same stored texts)
  embedding     cosine ranking only (LEXICAL_WEIGHT = 0, no glossary)
  hybrid        cosine fused with BM25, no glossary (EXPAND_QUERIES = "off")
  hybrid+gl-lex the glossary's synonyms added to the BM25 query only
  hybrid+gl     the synonyms added to the embedded query too (EXPAND_QUERIES = "both")
With --fp32 the float32 MiniLM graph (a slower, slightly different model) is compared as well.

Then the grading match threshold: the top hit's score (the `confidence` of a bank match) for the
paraphrases (questions the bank has) against bench/data/search_offbank.jsonl (questions it has not).
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
from app.grading import MATCH_THRESHOLD  # noqa: E402
from knowledge.embeddings import Embedder, get_embedder  # noqa: E402
from knowledge.errors import BankError  # noqa: E402
from knowledge.loader import BANK_DIR, load_bank, load_file  # noqa: E402
from knowledge.schema import Question  # noqa: E402

PARAPHRASES = ROOT / "bench" / "data" / "search_paraphrases.jsonl"
FRESH = ROOT / "bench" / "data" / "search_paraphrases_fresh.jsonl"
OFF_BANK = ROOT / "bench" / "data" / "search_offbank.jsonl"
K = 5
TARGET_RECALL_AT_5 = 0.99
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


def load_paraphrases(known: set[str], path: Path = PARAPHRASES) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    usable = [r for r in rows if r["expected"] in known]
    unknown = [r for r in rows if r["expected"] not in known]
    return usable, unknown


def percentile(values: list[float], pct: float) -> float:
    return float(np.percentile(np.array(values), pct))


TOP_SCORES: dict[tuple[str, str], float] = {}  # (mode, query) -> the top hit's score


def run_store_mode(
    store, rows, lexical_weight: float, expand: str = "off", mode: str = ""
) -> tuple[list[list[str]], list[float]]:
    """Rankings (top-K ids) and per-query latency in ms for store.search at a lexical weight."""
    saved = vectorstore.LEXICAL_WEIGHT, vectorstore.EXPAND_QUERIES
    vectorstore.LEXICAL_WEIGHT, vectorstore.EXPAND_QUERIES = lexical_weight, expand
    try:
        store.search("warm-up query about tensors", k=K)  # builds the lazy BM25 index
        ranked, latencies = [], []
        for row in rows:
            t0 = time.perf_counter()
            hits = store.search(row["query"], k=K)
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked.append([h.id for h in hits])
            TOP_SCORES[(mode, row["query"])] = hits[0].score if hits else 0.0
        return ranked, latencies
    finally:
        vectorstore.LEXICAL_WEIGHT, vectorstore.EXPAND_QUERIES = saved


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


MODES = {  # name -> (lexical weight, glossary expansion); None is BM25 alone
    "bm25": None,
    "embedding": (0.0, "off"),
    "hybrid": (vectorstore.LEXICAL_WEIGHT, "off"),
    "hybrid+gl-lex": (vectorstore.LEXICAL_WEIGHT, "lexical"),
    "hybrid+gl": (vectorstore.LEXICAL_WEIGHT, "both"),
}
CHOSEN = "hybrid+gl"


def ingest(questions: list[Question], embedder: CountingEmbedder, tmp: str) -> tuple[object, str]:
    """Cold ingest into a fresh dir, then an unchanged one; the store and a line of figures."""
    store = vectorstore.open_store(data_dir=tmp, embedder=embedder)
    t0 = time.perf_counter()
    cold = store.upsert(questions)
    cold_s, cold_texts = time.perf_counter() - t0, embedder.texts
    embedder.texts = 0
    store = vectorstore.open_store(data_dir=tmp, embedder=embedder)
    t0 = time.perf_counter()
    store.upsert(questions)
    warm_s = time.perf_counter() - t0
    line = (
        f"ingest cold {cold_s * 1000:.0f} ms (added={cold.added}, texts embedded={cold_texts}); "
        f"unchanged {warm_s * 1000:.0f} ms (texts embedded={embedder.texts}"
        f"{'' if not embedder.texts else ' <-- expected 0'})"
    )
    return store, line


def print_table(results: dict[str, tuple[list[list[str]], list[float]]], sets: dict[str, list[dict]]) -> None:
    header = f"{'mode':<18}" + "".join(f" {name + ' R@1':>11} {name + ' R@5':>11} {'MRR':>6}" for name in sets)
    print(header + f" {'p50 ms':>7} {'p95 ms':>7}")
    print("-" * (len(header) + 16))
    for mode, (ranked, lat) in results.items():
        cells, start = [], 0
        for rows in sets.values():
            part = ranked[start : start + len(rows)]
            start += len(rows)
            cells.append(f" {recall(part, rows, 1):11.3f} {recall(part, rows, K):11.3f} {mrr(part, rows):6.3f}")
        print(f"{mode:<18}" + "".join(cells) + f" {statistics.median(lat):7.2f} {percentile(lat, 95):7.2f}")


def print_misses(ranked: list[list[str]], rows: list[dict]) -> None:
    misses = [(row, ids) for row, ids in zip(rows, ranked, strict=True) if row["expected"] not in ids]
    print(f"{CHOSEN} misses@{K} ({len(misses)}):")
    for row, ids in misses:
        print(f"  expected {row['expected']:<28} got {', '.join(ids[:3])}\n      q: {row['query']}")
    late = [
        (r, ids)
        for r, ids in zip(rows, ranked, strict=True)
        if ids and ids[0] != r["expected"] and r["expected"] in ids
    ]
    print(f"{CHOSEN} in top-{K} but not first ({len(late)}):")
    for row, ids in late:
        print(f"  expected {row['expected']:<28} rank {ids.index(row['expected']) + 1}, first {ids[0]}")


def print_threshold(ranked: list[list[str]], rows: list[dict], off_bank: list[dict]) -> None:
    """Accept a bank match iff its top score >= t: right matches should pass, wrong ones and questions
    the bank does not have should not. Prints each threshold's counts and the one with fewest errors."""
    right = [
        TOP_SCORES[(CHOSEN, r["query"])] for r, ids in zip(rows, ranked, strict=True) if ids[:1] == [r["expected"]]
    ]
    wrong = [
        TOP_SCORES[(CHOSEN, r["query"])] for r, ids in zip(rows, ranked, strict=True) if ids[:1] != [r["expected"]]
    ]
    off = [TOP_SCORES[(CHOSEN, r["query"])] for r in off_bank]
    print(
        f"top score, right first hit (n={len(right)}): min {min(right):.3f} p5 {percentile(right, 5):.3f} "
        f"p50 {percentile(right, 50):.3f}; wrong first hit (n={len(wrong)}): max {max(wrong, default=0):.3f}; "
        f"not in bank (n={len(off)}): p50 {percentile(off, 50):.3f} p95 {percentile(off, 95):.3f} max {max(off):.3f}"
    )
    print(f"{'threshold':>9} {'right kept':>10} {'wrong kept':>10} {'off-bank kept':>13} {'errors':>6}")
    best = None
    for t in np.arange(0.40, 0.801, 0.02):
        kept = sum(s >= t for s in right)
        errors = (len(right) - kept) + sum(s >= t for s in wrong) + sum(s >= t for s in off)
        print(f"{t:9.2f} {kept:>10} {sum(s >= t for s in wrong):>10} {sum(s >= t for s in off):>13} {errors:>6}")
        best = best if best is not None and best[0] <= errors else (errors, t)
    print(f"fewest errors at threshold {best[1]:.2f} ({best[0]} of {len(right) + len(wrong) + len(off)})")
    # A refused line costs a question_id to add; a wrong match grades against the wrong rubric, silently.
    safe = next(t for t in np.arange(0.40, 1.001, 0.02) if not any(s >= t for s in off))
    print(
        f"lowest threshold that keeps no question the bank lacks: {safe:.2f} (right kept "
        f"{sum(s >= safe for s in right)}/{len(right)}, wrong kept {sum(s >= safe for s in wrong)}/{len(wrong)}); "
        f"app/grading.py MATCH_THRESHOLD = {MATCH_THRESHOLD}"
    )


def main() -> None:
    t_start = time.perf_counter()
    questions, bank_note = load_questions()
    known = {q.id for q in questions}
    sets = {}
    for name, path in (("first", PARAPHRASES), ("fresh", FRESH)):
        rows, unknown = load_paraphrases(known, path)
        sets[name] = rows
        print(
            f"{name}: {len(rows)} queries, {len({r['expected'] for r in rows})} distinct ids"
            + (
                f"; {len(unknown)} skipped (id not in bank): {', '.join(r['expected'] for r in unknown)}"
                if unknown
                else ""
            )
        )
    off_bank = [{**json.loads(line), "expected": ""} for line in OFF_BANK.read_text().splitlines() if line.strip()]
    print(f"bank: {len(questions)} entries from {bank_note}; {len(off_bank)} questions not in the bank")
    every = [row for rows in sets.values() for row in rows]

    t0 = time.perf_counter()
    inner = get_embedder("minilm")
    inner.embed("warm up")
    print(f"embedder load + warm-up: {(time.perf_counter() - t0) * 1000:.0f} ms ({inner.name})")
    models = [("", inner)] + ([(" fp32", get_embedder("minilm-fp32"))] if "--fp32" in sys.argv else [])
    results: dict[str, tuple[list[list[str]], list[float]]] = {}
    for suffix, model in models:
        with tempfile.TemporaryDirectory(prefix="bench-search-", ignore_cleanup_errors=True) as tmp:
            store, line = ingest(questions, CountingEmbedder(model), tmp)
            print(f"{model.name}: {line}")
            for mode, setting in MODES.items():
                if suffix and mode in ("bm25",):
                    continue
                if setting is None:
                    results[mode] = run_bm25_mode(store, every)
                else:
                    results[mode + suffix] = run_store_mode(store, every + off_bank, *setting, mode=mode + suffix)
                    ranked, lat = results[mode + suffix]
                    results[mode + suffix] = ranked[: len(every)], lat[: len(every)]
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    print(f"\nretrieval, k={K} (LEXICAL_WEIGHT={vectorstore.LEXICAL_WEIGHT}); latency over both sets")
    print_table(results, sets)
    ranked, lat = results[CHOSEN]
    p50 = statistics.median(lat)
    start = 0
    for name, rows in sets.items():
        r5 = recall(ranked[start : start + len(rows)], rows, K)
        print(
            f"{CHOSEN} {name} recall@5 {r5:.3f} "
            f"(target >= {TARGET_RECALL_AT_5}: {'met' if r5 >= TARGET_RECALL_AT_5 else 'NOT met'})"
        )
        start += len(rows)
    print(
        f"{CHOSEN} p50 {p50:.2f} ms (target < {TARGET_P50_MS:.0f} ms: {'met' if p50 < TARGET_P50_MS else 'NOT met'})\n"
    )
    print_misses(ranked, every)
    print(f"\ngrading match threshold ({CHOSEN})")
    print_threshold(ranked, every, off_bank)
    print(f"\npeak RSS: {peak_rss_mb:.0f} MB   total wall time: {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
