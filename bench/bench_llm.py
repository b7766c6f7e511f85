"""LLM mode with a real small model: per-call latency, and how often the judge's replies could not be
used as they came (a fallback to the offline score, or quotes dropped because the answer never said them).

Run from the repository root after `make llm-local`:  .venv/bin/python bench/bench_llm.py [--sample N]
It starts SmolLM2-135M on llama-cpp-python (scripts/local_llm.py) on loopback, then grades a fixed
sample of the calibration answers (bench/data/calibration*.jsonl: every k-th line, so each kind of
answer is in it) with the LLM judge, and words one question per graded answer. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.interview.phrasing import LLMPhraser  # noqa: E402
from app.llm import LangChainChatModel  # noqa: E402
from evaluators.base import GradingTask  # noqa: E402
from evaluators.judge import LLMJudge  # noqa: E402
from evaluators.rubric import RubricScorer  # noqa: E402
from knowledge.embeddings import get_embedder  # noqa: E402
from knowledge.loader import bank_index  # noqa: E402
from tests.local_llm import CONTEXT_TOKENS, MAX_TOKENS, MODEL_ALIAS, local_model_server  # noqa: E402

DATA = sorted((ROOT / "bench" / "data").glob("calibration*.jsonl"))


class TimedModel(LangChainChatModel):
    """The real client, timing every call (successful or not) by kind."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seconds: dict[str, list[float]] = {"judge": [], "phrasing": []}

    def complete_structured(self, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return super().complete_structured(**kwargs)
        finally:
            self.seconds["judge"].append(time.perf_counter() - started)

    def complete_text(self, **kwargs: Any) -> str:
        started = time.perf_counter()
        try:
            return super().complete_text(**kwargs)
        finally:
            self.seconds["phrasing"].append(time.perf_counter() - started)


def sample(size: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for path in DATA for line in path.read_text().splitlines() if line.strip()]
    step = max(1, len(rows) // size)
    return rows[::step][:size]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=24, help="calibration answers to grade (of 660)")
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--base-url", help="a local model server already running (scripts/local_llm.py)")
    args = parser.parse_args()
    bank = bank_index()
    rows = [r for r in sample(args.sample) if r["question_id"] in bank]
    offline = RubricScorer(get_embedder("minilm"))
    scores: list[tuple[float, float, float]] = []  # the human grade, the offline score, the LLM mode's score
    with tempfile.TemporaryDirectory() as tmp, _server(args.base_url, Path(tmp) / "server.log") as base_url:
        chat = TimedModel(base_url=base_url, model=MODEL_ALIAS, timeout_s=args.timeout, max_retries=0,
                          max_tokens=MAX_TOKENS, context_tokens=CONTEXT_TOKENS)
        judge, phraser = LLMJudge(chat, offline), LLMPhraser(chat)
        fallbacks: dict[str, int] = {}
        dropped = judged = 0
        for number, row in enumerate(rows, 1):
            question = bank[row["question_id"]]
            phraser.question(question, number=number, total=len(rows))
            task = GradingTask.from_question(question, row["answer"])
            evaluation = judge.evaluate(task)
            scores.append((row["grade"], offline.evaluate(task).score, evaluation.score))
            failed = next((n for n in evaluation.notes if n.startswith("LLM judge failed:")), None)
            if failed:
                reason = failed.removeprefix("LLM judge failed: ").split(";")[0].split(":")[0]
                fallbacks[reason] = fallbacks.get(reason, 0) + 1
            else:
                judged += 1
                dropped += any("whose quote is not in the answer" in n for n in evaluation.notes)
    n = len(rows)
    print(f"model {MODEL_ALIAS} (SmolLM2-135M-Instruct Q4_1) on llama-cpp-python, 1 thread, n_ctx {CONTEXT_TOKENS}, "
          f"max_tokens {MAX_TOKENS}; structured output: {chat.method}")
    print(f"sample: {n} of 660 calibration answers (every {max(1, 660 // args.sample)}th line)")
    for kind, values in chat.seconds.items():
        print(f"{kind} call latency: p50 {pct(values, 0.5):.1f} s, p95 {pct(values, 0.95):.1f} s ({len(values)} calls)")
    print(f"judge replies needing the offline fallback: {n - judged}/{n} ({(n - judged) / n:.0%})"
          + (f" by reason {fallbacks}" if fallbacks else ""))
    print(f"judge replies used, with invented quotes dropped: {dropped}/{judged}"
          + (f" ({dropped / judged:.0%})" if judged else ""))
    print(f"judge replies needing a fallback or having quotes dropped: {n - judged + dropped}/{n} "
          f"({(n - judged + dropped) / n:.0%})")
    print_scores(scores)


def print_scores(scores: list[tuple[float, float, float]]) -> None:
    """How far each mode's score is from the human grade, and how often LLM mode scored below offline."""
    n = len(scores)
    for name, at in (("offline", 1), ("LLM mode", 2)):
        print(f"{name}: mean |score - grade| {sum(abs(s[at] - s[0]) for s in scores) / n:.2f}, "
              f"mean score {sum(s[at] for s in scores) / n:.2f} (grades: {sum(s[0] for s in scores) / n:.2f})")
    lower = [s[1] - s[2] for s in scores if s[2] < s[1] - 0.05]
    print(f"LLM mode below offline on {len(lower)}/{n} answers, by {sum(lower) / max(len(lower), 1):.2f} on average"
          f" (at most {max(lower, default=0):.1f}); of answers graded 4 or more: "
          f"{sum(1 for s in scores if s[0] >= 4 and s[2] < s[1] - 0.05)}/{sum(1 for s in scores if s[0] >= 4)}")


@contextmanager
def _server(base_url: str | None, log: Path) -> Iterator[str]:
    if base_url:
        yield base_url
        return
    with local_model_server(log=log) as started:
        yield started


if __name__ == "__main__":
    main()
