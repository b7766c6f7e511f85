"""Real, teacher-graded answer sets (read from ../shared/datasets, never copied into the project).

Each row: source, split, question_id, question, references (alternatives, any of which is a full
answer), answer, target (the grade as a share of full marks, 0-1), grade and grade_max as given, and
label3 (SemEval's correct / contradictory / incorrect, else None). Loaders return [] when a set is
absent, so benchmarks and the fitting script skip it cleanly.
"""

from __future__ import annotations

import csv
from pathlib import Path

DATASETS = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"
# Beetle's 5-way labels grade partial answers apart from wrong ones; SciEntsBank only has 2/3-way.
BEETLE_5WAY = {"correct": 1.0, "partially_correct_incomplete": 0.5}


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def semeval(root: Path = DATASETS) -> list[dict]:
    """Beetle + SciEntsBank, SemEval-2013 Task 7, with the official splits."""
    rows = _read(root / "semeval2013" / "normalised.csv")
    labels = _read(root / "semeval2013" / "extra_labels.csv")
    if not rows or len(rows) != len(labels):
        return []
    out = []
    for row, extra in zip(rows, labels, strict=True):
        corpus = extra["corpus"]
        target = float(row["grade"])
        if corpus == "beetle" and extra["label_5way"]:
            target = BEETLE_5WAY.get(extra["label_5way"], 0.0)
        refs = [r.split("]", 1)[-1].strip() if r.strip().startswith("[") else r.strip()
                for r in row["reference_answer"].split(" || ")]
        out.append({
            "source": f"semeval-{corpus.lower()}", "split": row["split"], "question_id": row["question_id"],
            "question": row["question"], "references": [r for r in refs if r], "answer": row["answer"],
            "target": target, "grade": float(row["grade"]), "grade_max": 1.0, "label3": extra["label_3way"],
        })
    return out


def saf(root: Path = DATASETS) -> list[dict]:
    """SAF-EN: communication-networks answers with scores (and graders' feedback, not used here)."""
    out = []
    for row in _read(root / "saf_en" / "normalised.csv"):
        grade, top = float(row["grade"]), float(row["grade_max"])
        out.append({
            "source": "saf-en", "split": row["split"], "question_id": row["question_id"],
            "question": row["question"], "references": [row["reference_answer"]], "answer": row["answer"],
            "target": min(grade / top, 1.0), "grade": grade, "grade_max": top, "label3": None,
        })
    return out


def real_sets(root: Path = DATASETS) -> list[dict]:
    return semeval(root) + saf(root)
