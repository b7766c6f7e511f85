"""The packaged MiniLM graph against our integer-arithmetic rebuild, side by side in one run.

Run from the repository root:  .venv/bin/python bench/bench_embedder.py
Embeds every sentence unit of the calibration answers with both graphs (same tokenizer, batches
and threads) and prints ms per unit, the speed ratio, and how close the two graphs' vectors are.
Asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scorer_metrics import load_calibration  # noqa: E402
from evaluators.text import split_units  # noqa: E402
from knowledge.embeddings import MiniLMEmbedder  # noqa: E402

ROUNDS = 3


def timed(embedder: MiniLMEmbedder, texts: list[str]) -> tuple[np.ndarray, list[float]]:
    embedder.embed_batch(texts[:64])  # first runs allocate; not what a warm server sees
    per_unit = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        vectors = embedder.embed_batch(texts)
        per_unit.append((time.perf_counter() - start) * 1000 / len(texts))
    return vectors, per_unit


def main() -> None:
    answers = [r["answer"] for r in load_calibration()]
    units = list(dict.fromkeys(u.normalised for a in answers for u in split_units(a)))
    packaged, fast = MiniLMEmbedder(graph="packaged"), MiniLMEmbedder(graph="fast")
    print(f"{len(units)} distinct sentence units from {len(answers)} calibration answers, "
          f"{os.cpu_count()} cores, {ROUNDS} rounds each, interleaved")
    ref_vectors, ref_ms = timed(packaged, units)
    fast_vectors, fast_ms = timed(fast, units)
    more_ref, more_fast = timed(packaged, units)[1], timed(fast, units)[1]  # interleave against drift
    ref_ms, fast_ms = ref_ms + more_ref, fast_ms + more_fast
    for name, ms in (("packaged", ref_ms), ("fast", fast_ms)):
        print(f"  {name:<9} {statistics.median(ms):.2f} ms per unit (median of {len(ms)} passes)")
    print(f"  speed-up {statistics.median(ref_ms) / statistics.median(fast_ms):.2f}x")
    cosine = (ref_vectors * fast_vectors).sum(axis=1)
    print(f"  cosine fast vs packaged: mean {cosine.mean():.4f}, 1st percentile {np.percentile(cosine, 1):.4f}, "
          f"min {cosine.min():.4f}")
    # Does the rebuild change which rubric text a sentence is closest to? Compare neighbour ranks.
    sample = slice(0, min(400, len(units)))
    ref_sims = ref_vectors[sample] @ ref_vectors[sample].T
    fast_sims = fast_vectors[sample] @ fast_vectors[sample].T
    same_top = np.mean(
        np.argsort(-ref_sims, axis=1)[:, 1] == np.argsort(-fast_sims, axis=1)[:, 1]
    )
    print(f"  nearest other unit unchanged for {same_top:.1%} of {ref_sims.shape[0]} units; "
          f"pairwise similarity shift mean {np.abs(ref_sims - fast_sims).mean():.4f}")


if __name__ == "__main__":
    main()
