"""Offline scorer vs strict human grades on the calibration set; tuning and held-out splits apart.

Run from the repository root:  .venv/bin/python bench/bench_scorer.py
Prints Pearson/Spearman/QWK/MAE per split and per answer kind, the share of adversarial answers
(misconceived, stuffed, evasive) scored <= 1.5 beside the share the human grades themselves put
there, the per-point verdicts beside the graders' own, per-answer latency, and bulk throughput (in
process, and `interviewer grade` as a command).
No asserts. A split has 10-31 questions, so Pearson and the adversarial share come with a 95%
interval from resampling its questions: a one-answer change on a 45-answer split is well inside it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scorer_metrics import (  # noqa: E402
    ADVERSARIAL,
    BLIND,
    SPLITS,
    adversarial_share,
    grade_pearson,
    graders_verdicts,
    load_calibration,
    macro_f1,
    mae,
    pearson,
    quadratic_kappa,
    question_bootstrap,
    spearman,
)
from evaluators.base import GradingTask  # noqa: E402
from evaluators.rubric import RubricScorer  # noqa: E402
from knowledge.embeddings import get_embedder  # noqa: E402
from knowledge.loader import bank_index  # noqa: E402
from knowledge.stored_vectors import StoredEmbedder  # noqa: E402


def score_all(rows: list[dict], scorer: RubricScorer) -> list[float]:
    bank = bank_index()
    tasks = [GradingTask.from_question(bank[r["question_id"]], r["answer"]) for r in rows]
    return [e.score for e in scorer.evaluate_many(tasks)]


def report(name: str, rows: list[dict], predicted: list[float], *, interval: bool = False) -> None:
    human = [r["grade"] for r in rows]
    spread = ""
    if interval:
        low, high = question_bootstrap(rows, predicted, grade_pearson)
        spread = f" [{low:.2f}, {high:.2f}]"
    print(
        f"{name:<22} n={len(rows):>4}  pearson {pearson(human, predicted):.3f}{spread}  spearman "
        f"{spearman(human, predicted):.3f}  qwk {quadratic_kappa(human, predicted):.3f}  "
        f"mae {mae(human, predicted):.2f}"
    )


def main() -> None:
    rows = load_calibration(fresh=True)
    scorer = RubricScorer(get_embedder("minilm"))
    predicted = score_all(rows, scorer)
    print(f"calibration set: {len(rows)} answers to {len({r['question_id'] for r in rows})} questions\n")
    for split in SPLITS:
        idx = [i for i, r in enumerate(rows) if r["split"] == split]
        report(f"split={split}", [rows[i] for i in idx], [predicted[i] for i in idx], interval=True)
    print("(in brackets: 95% interval, resampling the split's questions 2,000 times)\n")
    for kind in sorted({r["kind"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["kind"] == kind]
        human = [rows[i]["grade"] for i in idx]
        got = [predicted[i] for i in idx]
        print(f"kind={kind:<13} n={len(idx):>3}  human mean {statistics.mean(human):.2f}  "
              f"scorer mean {statistics.mean(got):.2f}  mae {mae(human, got):.2f}")
    print()
    print("adversarial (misconceived/stuffed/evasive) answers scored <= 1.5 (target >= 85%); beside it, how")
    print("many the strict human grades themselves put <= 1.5 (a scorer that agreed with them would reach that):")
    for name, splits in [*((s, (s,)) for s in SPLITS), ("all blind splits", BLIND)]:
        idx = [i for i, r in enumerate(rows) if r["split"] in splits]
        adv = [i for i in idx if rows[i]["kind"] in ADVERSARIAL]
        low = sum(predicted[i] <= 1.5 for i in adv)
        human_low = sum(rows[i]["grade"] <= 1.5 for i in adv)
        lo, hi = question_bootstrap([rows[i] for i in idx], [predicted[i] for i in idx], adversarial_share)
        print(f"  {name:<17} scorer {low:>3}/{len(adv):<3} = {low / max(len(adv), 1):>6.1%} [{lo:.0%}, {hi:.0%}]"
              f"   human grades {human_low:>3}/{len(adv):<3} = {human_low / max(len(adv), 1):.1%}")
    point_verdicts(rows, scorer)
    refuting_answers(scorer)
    bank = bank_index()
    scorer = RubricScorer(get_embedder("minilm"))  # fresh: no answer sentence is cached yet
    scorer.warm([GradingTask.from_question(q, "") for q in bank.values()])  # rubrics: at start-up
    timings = []
    for r in rows:  # one at a time, as in an interview turn
        task = GradingTask.from_question(bank[r["question_id"]], r["answer"])
        start = time.perf_counter()
        scorer.evaluate(task)
        timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    p95 = timings[int(0.95 * (len(timings) - 1))]
    print(f"\nlatency per answer (warm): p50 {statistics.median(timings):.1f} ms, p95 {p95:.1f} ms "
          "(target p50 <= 25 ms)")
    bulk_throughput(rows)
    command_throughput(rows)


def point_verdicts(rows: list[dict], scorer: RubricScorer) -> None:
    """Each rubric point's verdict (the feedback a candidate reads) beside the graders' own, where the
    rationale grades point by point (the later sets): macro-F1 over covered / partial / missed, and over
    credited or not; and how many points the graders found stated that the feedback calls missed."""
    bank = bank_index()
    graded = [(r, g) for r in rows if (g := graders_verdicts(r, [p.id for p in bank[r["question_id"]].rubric]))]
    tasks = [GradingTask.from_question(bank[r["question_id"]], r["answer"]) for r, _ in graded]
    evaluations = scorer.evaluate_many(tasks)
    print("\nper-point verdicts beside the graders' (the later sets' rationales):")
    for name, blind in (("dev splits", False), ("blind splits", True)):
        pairs = [(truth, said[point]) for (r, g), e in zip(graded, evaluations, strict=True)
                 if (r["split"] in BLIND) == blind
                 for said in [{p.point_id: p.verdict.value for p in e.points}]
                 for point, truth in g.items()]
        truth, said = [t for t, _ in pairs], [s for _, s in pairs]
        credited = [str(t != "missed") for t in truth], [str(s != "missed") for s in said]
        stated = [s for t, s in pairs if t == "covered"]
        print(f"  {name:<13} {len(pairs)} points  macro-F1 {macro_f1(truth, said):.3f} (3-way), "
              f"{macro_f1(*credited):.3f} (credited or not);  fully stated but called missed: "
              f"{stated.count('missed')}/{len(stated)}")
    # What the reports show a partial verdict as (app/reports/wording.point_lists): by its credit, how often the
    # graders found the point stated in full or in part, beside the points called missed.
    read = [(p.verdict.value, p.credit, g[p.point_id]) for (_, g), e in zip(graded, evaluations, strict=True)
            for p in e.points if p.point_id in g]
    for label, rows in (("partial, credit < 0.1", [r for r in read if r[0] == "partial" and r[1] < 0.1]),
                        ("partial, credit >= 0.5", [r for r in read if r[0] == "partial" and r[1] >= 0.5]),
                        ("missed", [r for r in read if r[0] == "missed"])):
        print(f"  {label:<22} graders: stated {sum(r[2] != 'missed' for r in rows)}/{len(rows)}, "
              f"in full {sum(r[2] == 'covered' for r in rows)}/{len(rows)}")


# Ways of naming a wrong claim in order to reject it; {claim} and {correction} are a bank entry's own.
REFUTING_FRAMES = (
    "A common mistake is to think that {claim}. In fact, {correction}.",
    "{Correction}. It is not true that {claim}.",
    "Some people believe {claim}, but that is wrong: {correction}.",
    "It is a misconception that {claim}; {correction}.",
    "People often assume {claim}. That's not the case. {Correction}.",
    "{Correction}. So no, {claim}... that's a myth.",
)


def refuting_answers(scorer: RubricScorer) -> None:
    """Answers that name each of the bank's wrong claims to refute it: none should be accused of it."""
    def clause(text: str) -> str:  # "A GRU has..." -> "a GRU has" (kept as written where a frame opens with it)
        text = text.strip().rstrip(".")  # stripped first: "A model" must not become "amodel"
        return text[0].lower() + text[1:]

    tasks, frames = [], []
    for question in bank_index().values():
        for m in question.misconceptions:
            for k, frame in enumerate(REFUTING_FRAMES):
                answer = frame.format(claim=clause(m.claim), correction=clause(m.correction),
                                      Correction=m.correction.strip().rstrip("."))
                tasks.append(GradingTask.from_question(question, answer))
                frames.append(k)
    accused = [bool(e.misconceptions) for e in scorer.evaluate_many(tasks)]
    per_frame = ", ".join(f"{sum(a for a, f in zip(accused, frames, strict=True) if f == k)}"
                          for k in range(len(REFUTING_FRAMES)))
    print(f"\nanswers naming a wrong claim of the bank to refute it, accused of it: {sum(accused)}/{len(tasks)} "
          f"(target 0; per frame: {per_frame})")


def bulk_throughput(rows: list[dict]) -> None:
    """Fresh scorers (no answer sentence cached): the first run on a machine embeds every rubric it
    meets and stores the vectors; later runs, like `interviewer grade`'s, read them from disk. Later runs
    are timed three times and the median printed: one run on this VM varies by ~15%."""
    embedder = get_embedder("minilm")
    with tempfile.TemporaryDirectory() as tmp:
        for label, runs in (("first run, rubrics embedded and stored", 1), ("later run, rubric vectors read back", 3)):
            rates = []
            for _ in range(runs):
                scorer = RubricScorer(embedder, rubric_embedder=StoredEmbedder(embedder, Path(tmp) / "v.sqlite3"))
                start = time.perf_counter()
                score_all(rows, scorer)
                rates.append(len(rows) / (time.perf_counter() - start))
            spread = f" (runs: {', '.join(f'{r:.0f}' for r in rates)})" if runs > 1 else ""
            print(f"batched grading throughput, {label}: {statistics.median(rates):.0f} answers/s{spread} (aim >= 100)")


def command_throughput(rows: list[dict]) -> None:
    """The contract's command end to end, as a user runs it: a new process per run (start-up, bank,
    model), JSONL in and out, on a fresh data directory; the first run stores the rubric vectors."""
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        source.write_text("".join(
            json.dumps({"question_id": r["question_id"], "question": "", "answer": r["answer"]}) + "\n" for r in rows
        ))
        env = {**os.environ, "INTERVIEWER_DATA_DIR": str(Path(tmp) / "data")}
        command = [sys.executable, "-c", "from app.cli import main; main()", "grade",
                   "--input", str(source), "--output", str(target)]
        for label in ("first run", "later run"):
            start = time.perf_counter()
            subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
            took = time.perf_counter() - start
            print(f"`interviewer grade` on {len(rows)} lines, {label}, process start included: {took:.1f} s, "
                  f"{len(rows) / took:.0f} answers/s")


if __name__ == "__main__":
    main()
