"""External check of the offline answer scorer on SciEntsBank (SemEval-2013 Task 7).

Run from the repository root:  .venv/bin/python bench/bench_scientsbank.py

Reads ../shared/datasets/scientsbank/scientsbank.csv (skips with a message when it is absent).
Each row becomes an ad-hoc GradingTask (question + reference answer + student answer, rubric key
points derived from the reference answer) scored by RubricScorer with the MiniLM embedder.
The 0-5 score is mapped to labels with thresholds chosen on the TRAIN split only (max macro-F1):

  2-way: correct if score >= t, else incorrect
  3-way: contradictory if a contradiction was detected (misconceptions) and score < t2,
         correct if score >= t1, else incorrect

Prints accuracy, macro-F1 (unweighted mean of per-class F1) and weighted-F1 per test split, the
majority-class baseline on the same split, the chosen thresholds, and the published SemEval-2013
figures for comparison. Prints figures only; no asserts.
"""

from __future__ import annotations

import csv
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluators.adhoc import adhoc_task  # noqa: E402
from evaluators.rubric import RubricScorer  # noqa: E402
from knowledge.embeddings import get_embedder  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets" / "scientsbank" / "scientsbank.csv"
TEST_SPLITS = ("test-unseen-answers", "test-unseen-questions", "test-unseen-domains")
LABELS_2 = ("correct", "incorrect")
LABELS_3 = ("correct", "contradictory", "incorrect")
CHUNK = 256
GRID = np.round(np.arange(0.0, 5.05, 0.1), 1)  # scores are rounded to 0.1 by the scorer

# Published SemEval-2013 Task 7 figures for SciEntsBank. Only numbers read in a source go here, with
# that source; anything not found says so (never a remembered or guessed figure).
# Looked for (stored copies only, no live web): the task paper (Dzikovska et al. 2013, *SEM 2013,
# pp. 263-274, https://aclanthology.org/S13-2045) and the journal version (Dzikovska, Nielsen & Leacock,
# "The joint student response analysis and recognizing textual entailment challenge: making sense of
# student responses in educational applications", Language Resources and Evaluation 50 (online 2015),
# doi:10.1007/s10579-015-9313-8). Only the journal version's opening (abstract) was found in the stored
# copies; no results table of either paper could be read, so every published figure is 'not found'.
PUBLISHED = [  # (task, row, metric, UA, UQ, UD, source)
    ("2-way", "best participant", "macro-F1", "not found", "not found", "not found", "-"),
    ("2-way", "best participant", "weighted-F1", "not found", "not found", "not found", "-"),
    ("2-way", "lexical-overlap baseline", "any", "not found", "not found", "not found", "-"),
    ("3-way", "best participant", "macro-F1", "not found", "not found", "not found", "-"),
    ("3-way", "best participant", "weighted-F1", "not found", "not found", "not found", "-"),
    ("3-way", "lexical-overlap baseline", "any", "not found", "not found", "not found", "-"),
]
PUBLISHED_NOTE = (
    "  The task's main metric (macro- vs weighted-average F1) is not confirmed from the primary source\n"
    "  either; both are printed for ours above so that either can be compared once the tables are read."
)


def load_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def references(row: dict) -> list[str]:
    refs = [r.strip() for r in row["all_reference_answers"].split(" || ") if r.strip()]
    return refs or [row["reference_answer"]]


def score_rows(rows: list[dict], scorer: RubricScorer) -> tuple[np.ndarray, np.ndarray, Counter]:
    """Best evaluation over each row's reference answers (score, contradiction flag, gate counts)."""
    pairs = [(i, ref) for i, row in enumerate(rows) for ref in references(row)]
    scores = np.full(len(rows), -1.0)
    contra = np.zeros(len(rows), bool)
    gates: list[str | None] = [None] * len(rows)
    start = time.perf_counter()
    for lo in range(0, len(pairs), CHUNK):
        chunk = pairs[lo : lo + CHUNK]
        tasks = [
            adhoc_task(question=rows[i]["question"], reference_answer=ref, answer=rows[i]["student_answer"])
            for i, ref in chunk
        ]
        for (i, _), ev in zip(chunk, scorer.evaluate_many(tasks), strict=True):
            if ev.score > scores[i]:
                scores[i], contra[i], gates[i] = ev.score, bool(ev.misconceptions), ev.gate
        done = min(lo + CHUNK, len(pairs))
        if done == len(pairs) or (lo // CHUNK) % 8 == 7:
            print(f"  scored {done:>5}/{len(pairs)} answer-reference pairs  "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    return scores, contra, Counter(g or "scored" for g in gates)


def f1_per_class(truth: np.ndarray, pred: np.ndarray, labels: tuple[str, ...]) -> np.ndarray:
    out = []
    for label in labels:
        tp = np.sum((truth == label) & (pred == label))
        fp = np.sum((truth != label) & (pred == label))
        fn = np.sum((truth == label) & (pred != label))
        out.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return np.array(out)


def metrics(truth: np.ndarray, pred: np.ndarray, labels: tuple[str, ...]) -> tuple[float, float, float]:
    """Accuracy, macro-F1 (unweighted class mean) and weighted-F1 (weights = gold class frequency)."""
    f1 = f1_per_class(truth, pred, labels)
    support = np.array([np.sum(truth == label) for label in labels], float)
    return float(np.mean(truth == pred)), float(f1.mean()), float((f1 * support).sum() / support.sum())


def predict_2(scores: np.ndarray, t: float) -> np.ndarray:
    return np.where(scores >= t, "correct", "incorrect")


def predict_3(scores: np.ndarray, contra: np.ndarray, t1: float, t2: float) -> np.ndarray:
    pred = np.where(scores >= t1, "correct", "incorrect")
    return np.where(contra & (scores < t2), "contradictory", pred)


def choose_2(scores: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    best = max(GRID, key=lambda t: (metrics(truth, predict_2(scores, t), LABELS_2)[1], -t))
    return float(best), metrics(truth, predict_2(scores, best), LABELS_2)[1]


def choose_3(scores: np.ndarray, contra: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    best, best_f1 = (0.0, 0.0), -1.0
    for t1 in GRID:
        for t2 in np.append(GRID, 5.1):  # t2 = 0: never contradictory; 5.1: whenever one is detected
            f1 = metrics(truth, predict_3(scores, contra, t1, t2), LABELS_3)[1]
            if f1 > best_f1 + 1e-12:
                best, best_f1 = (float(t1), float(t2)), f1
    return best[0], best[1], best_f1


def main() -> None:
    if not DATA.exists():
        print(f"SciEntsBank not found at {DATA}; skipping (see that directory's README.md).")
        return
    rows = load_rows(DATA)
    split = np.array([r["split"] for r in rows])
    gold2 = np.array([r["label_2way"] for r in rows])
    gold3 = np.array([r["label_3way"] for r in rows])
    multi = sum(len(references(r)) > 1 for r in rows)
    print(f"SciEntsBank: {len(rows)} answers, {len({r['question_id'] for r in rows})} questions; "
          f"{multi} rows with more than one reference answer (best score over them is used)")
    for s in ("train", *TEST_SPLITS):
        c = Counter(gold3[split == s])
        print(f"  {s:<22} n={int(np.sum(split == s)):>5}  " + "  ".join(f"{k} {c[k]}" for k in LABELS_3))

    scorer = RubricScorer(get_embedder("minilm"))
    start = time.perf_counter()
    scores, contra, gates = score_rows(rows, scorer)
    elapsed = time.perf_counter() - start
    print(f"scored all rows in {elapsed:.0f} s ({1000 * elapsed / len(rows):.1f} ms/answer)")
    print("gates (score forced to 0), all rows: " + ", ".join(f"{k} {v}" for k, v in gates.most_common())
          + f"; answers with a detected contradiction: {int(contra.sum())}\n")

    print("score by gold label (mean score, share flagged with a contradiction):")
    for s in ("train", *TEST_SPLITS):
        parts = []
        for label in LABELS_3:
            m = (split == s) & (gold3 == label)
            parts.append(f"{label} {scores[m].mean():.2f} / {contra[m].mean():.1%}")
        print(f"  {s:<22} " + "   ".join(parts))
    print()

    train = split == "train"
    t, f1_train2 = choose_2(scores[train], gold2[train])
    t1, t2, f1_train3 = choose_3(scores[train], contra[train], gold3[train])
    print(f"thresholds chosen on train (max macro-F1): 2-way t={t:.1f} (train macro-F1 {f1_train2:.3f}); "
          f"3-way t1={t1:.1f}, t2={t2:.1f} (train macro-F1 {f1_train3:.3f})")
    if not contra[train].any():
        print("  (no contradiction detected on train: t2 has no effect, 3-way never says contradictory)")
    print()

    header = (f"{'split':<24}{'task':<6}{'n':>6}  {'ours acc':>8} {'macroF1':>8} {'wF1':>6}   "
              f"{'majority acc':>12} {'macroF1':>8} {'wF1':>6}  majority class")
    print(header)
    print("-" * len(header))
    for s in ("train", *TEST_SPLITS):
        m = split == s
        for task, gold, labels, pred in (
            ("2-way", gold2[m], LABELS_2, predict_2(scores[m], t)),
            ("3-way", gold3[m], LABELS_3, predict_3(scores[m], contra[m], t1, t2)),
        ):
            majority = Counter(gold).most_common(1)[0][0]
            ours = metrics(gold, pred, labels)
            base = metrics(gold, np.full(len(gold), majority), labels)
            print(f"{s:<24}{task:<6}{int(m.sum()):>6}  {ours[0]:>8.3f} {ours[1]:>8.3f} {ours[2]:>6.3f}   "
                  f"{base[0]:>12.3f} {base[1]:>8.3f} {base[2]:>6.3f}  {majority}")
    print("(train rows are where the thresholds were chosen: not a held-out figure)\n")

    print("ours, test splits UA / UQ / UD, for comparison with the published table below:")
    for task, gold, labels in (("2-way", gold2, LABELS_2), ("3-way", gold3, LABELS_3)):
        for k, name in ((1, "macro-F1"), (2, "weighted-F1"), (0, "accuracy")):
            vals = []
            for s in TEST_SPLITS:
                m = split == s
                pred = predict_2(scores[m], t) if task == "2-way" else predict_3(scores[m], contra[m], t1, t2)
                vals.append(metrics(gold[m], pred, labels)[k])
            print(f"  {task} {name:<12} " + " / ".join(f"{v:.3f}" for v in vals))
    print()

    print("published SemEval-2013 Task 7, SciEntsBank (Dzikovska et al. 2013, https://aclanthology.org/S13-2045):")
    print(f"  {'task':<6} {'row':<26} {'metric':<12} {'UA':>10} {'UQ':>10} {'UD':>10}  source")
    for task, row, metric, ua, uq, ud, source in PUBLISHED:
        print(f"  {task:<6} {row:<26} {metric:<12} {ua:>10} {uq:>10} {ud:>10}  {source}")
    print(PUBLISHED_NOTE)

if __name__ == "__main__":
    main()
