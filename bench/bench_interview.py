"""Interview engine figures: time to first question, turn latency, concurrent sessions per process.

Run from the repository root:  .venv/bin/python bench/bench_interview.py
Offline mode (MiniLM scorer, SQLite in a temp dir, embedded Chroma), text answers. Prints figures only.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import evaluators.rubric as rubric_module  # noqa: E402
from app.interview.engine import InterviewEngine  # noqa: E402
from app.interview.models import SessionConfig  # noqa: E402
from app.interview.scoring import AnswerScorer  # noqa: E402
from app.interview.selection import QuestionSelector  # noqa: E402
from app.store import open_repository  # noqa: E402
from evaluators.base import GradingTask  # noqa: E402
from evaluators.rubric import RubricScorer  # noqa: E402
from knowledge.embeddings import get_embedder  # noqa: E402
from knowledge.loader import bank_index  # noqa: E402
from knowledge.vectorstore import open_store  # noqa: E402

TARGET_P95_MS = 100.0
TURNS_PER_SESSION = 6


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def build(tmp: Path) -> InterviewEngine:
    # Simulated candidates reuse the same answer texts; real ones do not, so no sentence vector
    # may be reused across answers here (the cache still serves follow-ups in real sessions).
    rubric_module.TEXT_CACHE_SIZE = 0
    embedder = get_embedder("minilm")
    bank = bank_index()
    store = open_store(data_dir=str(tmp), embedder=embedder)
    store.upsert(list(bank.values()))
    repo = open_repository(f"sqlite:///{tmp / 'bench.db'}")
    scorer = RubricScorer(embedder)
    scorer.warm([GradingTask.from_question(q, "") for q in bank.values()])  # as the API does at start-up
    return InterviewEngine(repo=repo, selector=QuestionSelector(store), bank=bank,
                           scorer=AnswerScorer(evaluator=scorer))


def candidate_answer(engine: InterviewEngine, question_id: str) -> str:
    """A realistic partial answer: the first half of the reference, in the candidate's turn."""
    reference = engine._bank[question_id].reference_answer
    return reference[: max(120, len(reference) // 2)]


def one_session(engine: InterviewEngine, name: str, seed: int) -> tuple[float, list[float]]:
    user = engine._repo.get_or_create_user(name).id
    start = time.perf_counter()
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=4, seed=seed))
    first = (time.perf_counter() - start) * 1000
    turns = []
    for _ in range(TURNS_PER_SESSION):
        if prompt is None:
            break
        t0 = time.perf_counter()
        outcome = engine.answer(session_id=session.id, user_id=user, text=candidate_answer(engine, prompt.question_id),
                                code=None)
        turns.append((time.perf_counter() - t0) * 1000)
        prompt = outcome.prompt
    return first, turns


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engine = build(Path(tmp))
        one_session(engine, "warmup", 0)  # rubric vectors and model warm
        firsts, turns = [], []
        for i in range(8):
            first, t = one_session(engine, f"solo{i}", i + 1)
            firsts.append(first)
            turns.extend(t)
        print(f"time to first question: p50 {statistics.median(firsts):.1f} ms, max {max(firsts):.1f} ms")
        print(f"turn latency (1 session at a time): p50 {statistics.median(turns):.1f} ms, "
              f"p95 {pct(turns, 0.95):.1f} ms over {len(turns)} turns")
        print("\nconcurrent sessions in one process (threads, each answering as fast as it can):")
        sustained = 0
        for level in (1, 2, 4, 8, 16):
            with ThreadPoolExecutor(level) as pool:
                t0 = time.perf_counter()
                names = [(f"c{level}-{i}", 100 + i) for i in range(level * 2)]
                results = list(pool.map(lambda item: one_session(engine, *item), names))
                wall = time.perf_counter() - t0
            lat = [t for _, ts in results for t in ts]
            p95 = pct(lat, 0.95)
            print(f"  {level:>3} concurrent: p50 {statistics.median(lat):6.1f} ms  p95 {p95:6.1f} ms  "
                  f"{len(lat) / wall:5.1f} turns/s")
            if p95 < TARGET_P95_MS:
                sustained = level
        print(f"\nsessions sustained with p95 turn latency < {TARGET_P95_MS:.0f} ms: {sustained}")


if __name__ == "__main__":
    main()
