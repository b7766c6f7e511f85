"""The offline scorer on real, teacher-graded answers it was not fitted on, beside simple baselines.

Run from the repository root:  .venv/bin/python bench/bench_real.py [--cache PATH]

Held-out splits only (the model is fitted on the train splits by bench/fit_scorer.py):
- SemEval-2013 Task 7, Beetle and SciEntsBank apart: unseen answers (UA), unseen questions (UQ), unseen
  domains (UD, SciEntsBank only). Pearson with the 2-way grade, and 2-way / 3-way accuracy and
  macro-F1 with the score cut at a threshold chosen on the train split (3-way: below the threshold is
  "incorrect", the larger of the two wrong classes; our scorer has no contradiction class in ad-hoc mode).
- SAF-EN: unseen answers and unseen questions; Pearson with the points given.
- This project's blind PyTorch splits (heldout, fresh-test, fresh2-test; written and graded by this team).
Beside every figure, on the same rows in the same run: plain MiniLM cosine (whole answer vs whole
reference answer) and TF-IDF cosine (fitted on that split's answers and references), each taking
the best of a row's reference answers; for SemEval also the lexical-overlap baseline (share of the
reference's words the answer uses), cut the same way. Also: the share scored 0 beside the human share,
and the share of full-mark answers scored <= 1.5; where a split's rows give several reference answers
(Beetle), the best grade among them beside the first reference alone and all of them joined into one.
Last, the unseen-answers splits graded at their teachers' own standard (graded examples,
app/graded_examples.py), learned from a few of the teachers' graded train answers to each question, beside the
scorer alone and beside predicting each question's mean example grade.
Prints figures only; no asserts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.grade_lines import best_evaluations  # noqa: E402
from app.grading import MAX_REFERENCES, BulkGrader  # noqa: E402
from bench.fit_scorer import calibration_rows, embedder, tasks_for  # noqa: E402
from bench.grading_data import real_sets  # noqa: E402
from bench.scorer_metrics import ADVERSARIAL, BLIND, macro_f1, pearson, question_bootstrap  # noqa: E402
from evaluators.adhoc import adhoc_task  # noqa: E402
from evaluators.base import Verdict  # noqa: E402
from evaluators.rubric import RubricScorer  # noqa: E402
from evaluators.text import content_words  # noqa: E402
from knowledge.loader import bank_index  # noqa: E402

SEMEVAL_SPLITS = {"test_unseen_answers": "UA", "test_unseen_questions": "UQ", "test_unseen_domains": "UD"}


def tfidf_cosine(rows: list[dict]) -> np.ndarray:
    """Best TF-IDF cosine of each answer with its reference answers, the vocabulary fitted on the split."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    refs = [r["references"] for r in rows]
    vectoriser = TfidfVectorizer().fit([r["answer"] for r in rows] + [x for rs in refs for x in rs])
    answers = vectoriser.transform([r["answer"] for r in rows])
    out = np.zeros(len(rows))
    for i, rs in enumerate(refs):
        out[i] = (vectoriser.transform(rs) @ answers[i].T).toarray().max()
    return out


class Scored:
    """Our score and the baselines for a set of rows, computed together."""

    def __init__(self, rows: list[dict], scorer: RubricScorer, bank: dict) -> None:
        self.rows = rows
        tasks, owner = [], []
        for i, row in enumerate(rows):
            for task in tasks_for(row, bank):
                tasks.append(task)
                owner.append(i)
        evaluations = scorer.evaluate_many(tasks)
        self.ours = np.zeros(len(rows))
        self.first = np.full(len(rows), -1.0)  # the grade against a row's first reference answer alone
        self.cosine = np.full(len(rows), -1.0)
        self.overlap = np.zeros(len(rows))
        embed = scorer._embedder.embed_batch
        answers = embed([t.answer for t in tasks])
        references = embed([t.reference_answer for t in tasks])
        # Per row, whether the reading that scores best credits none of its points (feedback that says
        # everything is missing beside a good score, or a full-mark answer).
        self.uncredited = np.zeros(len(rows), dtype=bool)
        for k, (i, task, evaluation) in enumerate(zip(owner, tasks, evaluations, strict=True)):
            if self.first[i] < 0:
                self.first[i] = evaluation.score
            if evaluation.score >= self.ours[i]:
                self.ours[i] = evaluation.score
                self.uncredited[i] = all(p.verdict is Verdict.MISSED for p in evaluation.points)
            self.cosine[i] = max(self.cosine[i], float(answers[k] @ references[k]))
            ref = content_words(task.reference_answer)
            self.overlap[i] = max(self.overlap[i], len(ref & content_words(task.answer)) / max(1, len(ref)))
        with_refs = [r if r["references"] else {**r, "references": [bank[r["question_id"]].reference_answer]}
                     for r in rows]
        self.tfidf = tfidf_cosine(with_refs)
        self.grade = np.array([r["grade"] / r.get("grade_max", 5.0) for r in rows])

    def references_line(self, scorer: RubricScorer) -> str | None:
        """Where rows give several acceptable reference answers: the best grade among them (what `grade`
        and the API do with a list) beside the first reference alone and all of them joined into one."""
        counts = [len(r["references"] or ()) for r in self.rows]
        if max(counts) < 2:
            return None
        joined = scorer.evaluate_many([adhoc_task(question=r["question"], reference_answer=" ".join(r["references"]),
                                                  answer=r["answer"]) for r in self.rows])
        best, first, one = (pearson(self.grade, v) for v in (self.ours, self.first, [e.score for e in joined]))
        return (f"{np.mean(counts):.1f} references per answer; pearson: the best of them {best:.3f}, the first "
                f"alone {first:.3f}, all joined into one {one:.3f}")

    def methods(self) -> dict[str, np.ndarray]:
        return {"ours": self.ours, "minilm-cosine": self.cosine, "tfidf-cosine": self.tfidf,
                "lexical-overlap": self.overlap}

    def correlation_line(self) -> str:
        return "  ".join(f"{name} {pearson(values, self.grade):.3f}" for name, values in self.methods().items())

    def target_line(self) -> str:
        """Issue 17's two bars for every held-out set, each with a 95% interval from resampling whole
        questions (answers to one question stand or fall together): a gain over plain cosine of at least
        0.05, and at least 1.2 times TF-IDF's Pearson."""

        def bar(baseline: np.ndarray, compare, form: str) -> str:
            def statistic(_: list, picked: list[int]) -> float:
                grade = self.grade[picked]
                return compare(pearson(self.ours[picked], grade), pearson(baseline[picked], grade))

            everything = list(range(len(self.rows)))
            low, high = question_bootstrap(self.rows, everything, statistic)
            return f"{statistic([], everything):{form}} [{low:{form}}, {high:{form}}]"

        return (f"ours - minilm-cosine {bar(self.cosine, lambda a, b: a - b, '+.3f')} (target >= +0.05);  "
                f"ours / tfidf-cosine {bar(self.tfidf, lambda a, b: a / b, '.2f')} (target >= 1.2)")

    def zero_line(self) -> str:
        full = self.grade >= 1.0
        return (f"scored 0: ours {np.mean(self.ours == 0):.1%} vs human {np.mean(self.grade == 0):.1%};  "
                f"full-mark answers scored <= 1.5: {np.mean(self.ours[full] <= 1.5):.1%} of {full.sum()}, "
                f"told every point is missing: {np.mean(self.uncredited[full]):.1%}")


def best_cut(values: np.ndarray, correct: np.ndarray) -> float:
    """The threshold with the best 2-way macro-F1 on the train rows."""
    labels = ["correct" if c else "incorrect" for c in correct]
    grid = np.unique(np.quantile(values, np.linspace(0.02, 0.98, 97)))
    return max(grid, key=lambda t: macro_f1(labels, ["correct" if v >= t else "incorrect" for v in values]))


def semeval_report(rows: list[dict], scorer: RubricScorer, bank: dict) -> None:
    for corpus in ("semeval-beetle", "semeval-scientsbank"):
        mine = [r for r in rows if r["source"] == corpus]
        if not mine:
            continue
        train = Scored([r for r in mine if r["split"] == "train"], scorer, bank)
        cuts = {name: best_cut(v, train.grade >= 1) for name, v in train.methods().items()}
        print(f"\n{corpus} (thresholds chosen on its train split: "
              + ", ".join(f"{n} {t:.2f}" for n, t in cuts.items()) + ")")
        for split, short in SEMEVAL_SPLITS.items():
            test = [r for r in mine if r["split"] == split]
            if not test:
                continue
            scored = Scored(test, scorer, bank)
            print(f"  {short} n={len(test):>5}  pearson: {scored.correlation_line()}")
            for name, values in scored.methods().items():
                two = ["correct" if v >= cuts[name] else "incorrect" for v in values]
                truth2 = ["correct" if g >= 1 else "incorrect" for g in scored.grade]
                truth3 = [r["label3"] for r in test]
                acc2 = np.mean([a == b for a, b in zip(two, truth2, strict=True)])
                acc3 = np.mean([a == b for a, b in zip(two, truth3, strict=True)])
                print(f"      {name:<16} 2-way acc {acc2:.3f} macro-F1 {macro_f1(truth2, two):.3f}   "
                      f"3-way acc {acc3:.3f} macro-F1 {macro_f1(truth3, two):.3f}")
            print(f"      {scored.target_line()}")
            print(f"      {scored.zero_line()}")
            if several := scored.references_line(scorer):
                print(f"      {several}")


def pearson_report(title: str, groups: dict[str, list[dict]], scorer: RubricScorer, bank: dict) -> None:
    print(f"\n{title}")
    for name, rows in groups.items():
        if not rows:
            continue
        scored = Scored(rows, scorer, bank)
        print(f"  {name:<22} n={len(rows):>4}  pearson: {scored.correlation_line()}")
        print(f"      {scored.target_line()}")
        print(f"      {scored.zero_line()}")
        kinds = [r.get("kind") for r in rows]
        if any(k in ADVERSARIAL for k in kinds):
            adversarial = np.array([k in ADVERSARIAL for k in kinds])
            ours, human = np.mean(scored.ours[adversarial] <= 1.5), np.mean(scored.grade[adversarial] <= 0.3)
            print(f"      adversarial (misconceived, stuffed, evasive) <= 1.5: ours {ours:.1%}, human {human:.1%}"
                  f" of {adversarial.sum()}")


def examples_report(rows: list[dict], scorer: RubricScorer, per_question: int = 5, draws: int = 5) -> None:
    """The unseen-answers splits through the same path as `interviewer grade --examples`: for each
    question, `per_question` of its train answers with their teachers' grades are the examples (drawn
    `draws` times). Rows bring at most MAX_REFERENCES reference answers, as the command takes."""
    print(f"\nunseen answers at the teachers' own standard, learned from {per_question} of their graded train answers "
          f"per question ({draws} draws; mean [min, max]): pearson")
    for source in ("semeval-beetle", "semeval-scientsbank", "saf-en"):
        test = [r for r in rows if r["source"] == source and r["split"] == "test_unseen_answers"]
        train = [r for r in rows if r["source"] == source and r["split"] == "train"]
        if not test or not train:
            continue

        def record(row: dict) -> dict:
            return {"question": row["question"], "reference_answer": row["references"][:MAX_REFERENCES],
                    "answer": row["answer"]}

        grade = np.array([r["grade"] / r["grade_max"] for r in test])
        alone, taught, means = [], [], []
        for draw in range(draws):
            rng = np.random.default_rng(draw)
            examples = []
            for question in sorted({r["question"] for r in test}):
                theirs = [r for r in train if r["question"] == question]
                picked = rng.choice(len(theirs), min(per_question, len(theirs)), replace=False)
                examples += [{**record(theirs[i]), "grade": theirs[i]["grade"], "grade_max": theirs[i]["grade_max"]}
                             for i in picked]
            grader = BulkGrader(evaluator=scorer, bank={}, store=None)
            grader.learn_standards(examples)
            lines = [grader.resolve(record(r)) for r in test]
            evaluations = best_evaluations(scorer, lines)  # every line resolves: ad-hoc references
            alone.append(pearson([e.score for e in evaluations if e], grade))
            taught.append(pearson([grader.standard_fields(line, e).get("score", e.score)
                                   for line, e in zip(lines, evaluations, strict=True) if e], grade))
            mean_grade = {q: np.mean([x["grade"] / x["grade_max"] for x in examples if x["question"] == q])
                          for q in {x["question"] for x in examples}}
            means.append(pearson([mean_grade[r["question"]] for r in test], grade))

        def spread(values: list[float]) -> str:
            return f"{np.mean(values):.3f} [{min(values):.3f}, {max(values):.3f}]"

        print(f"  {source:<22} n={len(test):>4}  ours alone {alone[0]:.3f}  with the examples {spread(taught)}  "
              f"the examples' mean grade per question {spread(means)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="a vector store for the texts, to re-run quickly")
    args = parser.parse_args()
    started = time.perf_counter()
    bank = bank_index()
    scorer = RubricScorer(embedder(args.cache))
    rows = real_sets()
    if not rows:
        print("../shared/datasets is absent: only the project's own splits are scored")
    semeval_report([r for r in rows if r["source"].startswith("semeval")], scorer, bank)
    saf = [r for r in rows if r["source"] == "saf-en"]
    pearson_report("SAF-EN (points given / full marks)", {
        "unseen answers": [r for r in saf if r["split"] == "test_unseen_answers"],
        "unseen questions": [r for r in saf if r["split"] == "test_unseen_questions"],
    }, scorer, bank)
    pearson_report("PyTorch calibration answers (this team's; blind splits)",
                   {split: calibration_rows((split,)) for split in BLIND}, scorer, bank)
    examples_report(rows, scorer)
    print(f"\ndone in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
