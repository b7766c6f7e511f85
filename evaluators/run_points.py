"""A code answer's rubric points judged from its run: a point a hidden check verifies is shown by the check
passing, not by how the code or the words read (code that does what a point says is not a gap, and a line
that looks right in code that fails is not praise)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from evaluators.base import Evaluation, PointVerdict, Verdict
from evaluators.feedback import compose_feedback
from knowledge.schema import Question

# torch.testing.assert_close's report: a header, then per-element statistics a candidate cannot act on beside their
# points ("Greatest relative difference: inf at index (0, 2) (up to 1.3e-06 allowed)").
_COMPARISON = re.compile(r"(?:Tensor-likes|Scalars|Booleans) are not (?:close|equal)!(?P<detail>.*)", re.S)
_MISMATCHED = re.compile(r"Mismatched elements: (\d+) / (\d+)")
_EXPECTED = re.compile(r"Expected .+? but got .+?(?=\.\s|\.$)")
_ITEM = re.compile(r"The failure occurred for item (\S+)")
# The starter's own `raise NotImplementedError`, as the harness reports it: "NotImplementedError: (line 6: raise ...)".
_NOT_WRITTEN = "the starter's body is not written yet"
_UNWRITTEN = re.compile(r"NotImplementedError: \(line (\d+): raise NotImplementedError\)")


def failure_said(check: Mapping[str, Any]) -> str:
    """A failed check's message as one line beside the candidate's points, in the check's own words: torch's
    comparison report becomes what of it helps (how many values differ, where, or the scalar expected); the run's
    own results keep the whole report."""
    message = str(check.get("message") or "")
    unwritten = _UNWRITTEN.fullmatch(message.strip())
    if unwritten:
        return f"stopped at NotImplementedError (line {unwritten[1]}): {_NOT_WRITTEN}"
    found = _COMPARISON.search(message)
    if found is None:
        return " ".join(message.split())
    detail = found.group("detail")
    own = message[:found.start()].strip() or f"not met: {str(check.get('description') or '').rstrip('. ')}"
    said = [f"{m[1]} of {m[2]} values differ" for m in _MISMATCHED.finditer(detail)][:1]
    said += [m[0].rstrip(".") for m in _EXPECTED.finditer(detail)][:1] + [f"in {m[1]}" for m in _ITEM.finditer(detail)]
    detail_said = f" ({', '.join(said)})" if said else ""
    return " ".join(f"{own.rstrip(': ')}{detail_said}".split())


def run_verdicts(question: Question, checks: Sequence[Mapping[str, Any]]) -> list[PointVerdict]:
    """A verdict for each point the task's checks name: covered when every check naming it passed, missed when
    one failed, with the failed check (or the passed ones) as its evidence. Empty when the checks name no points
    or the run reported no per-check results."""
    if question.code is None:
        return []
    results = {str(c.get("name")): c for c in checks}
    verdicts = []
    said: set[str] = set()  # the starter's NotImplementedError, which fails every check alike, is said once
    for point in question.rubric:
        names = [c.name for c in question.code.checks if point.id in c.points]
        if not names or any(n not in results for n in names):
            continue
        failed = [n for n in names if not results[n].get("passed")]
        if failed:
            why = failure_said(results[failed[0]])
            evidence = f"failed hidden check {failed[0]}" + (
                "" if not why else ", with the same error" if why in said else f": {why}")
            if why.endswith(_NOT_WRITTEN):
                said.add(why)
            verdicts.append(PointVerdict(point_id=point.id, description=point.description, weight=point.weight,
                                         verdict=Verdict.MISSED, credit=0.0, evidence=evidence, checks=failed))
        else:
            evidence = f"passed hidden check{'s' if len(names) > 1 else ''} {', '.join(names)}"
            verdicts.append(PointVerdict(point_id=point.id, description=point.description, weight=point.weight,
                                         verdict=Verdict.COVERED, credit=1.0, evidence=evidence, checks=names))
    return verdicts


def judge_run(question: Question, result: Mapping[str, Any]) -> tuple[list[PointVerdict], float]:
    """The run's point verdicts and its score (0-1): the share of the checked points' rubric weight the run
    showed, so a check counts as much as the idea it verifies (the task's core point weighs most); in a task
    whose checks name no points, the runner's own score by check weights."""
    verdicts = run_verdicts(question, result.get("checks") or [])
    total = sum(v.weight for v in verdicts)
    if not total:
        return verdicts, float(result.get("score", 0.0))
    return verdicts, round(sum(v.weight * v.credit for v in verdicts) / total, 4)


def with_asked_words(question: Question, evaluation: Evaluation, run_share: float) -> float:
    """A code answer's share of its code score (0-1): the run's share, and beside it the points the question asks the
    candidate to say in words (`asked_in_words`), judged from the words (or a line of the code that states one in
    full; a point stated in full counts whole, as a passed check does). The run stands for the checked points'
    weight (in a task whose checks name no points, for that of every point not asked in words), so reference code
    with no words on resnet-block, whose question asks why skip connections help and how to serve the model, is
    7 / 11 of the way, not 5 / 5. A task whose question asks only for code is scored by its run alone, as before:
    a run that passes every check is the surest evidence there is, and words never take from it."""
    asked = {p.id: p.weight for p in question.rubric if p.asked_in_words}
    if not asked:
        return run_share
    checked = {point for check in question.code.checks for point in check.points} if question.code else set()
    run_weight = sum(p.weight for p in question.rubric if (p.id in checked if checked else p.id not in asked))
    # A point stated in full counts whole, as a check passed does (its credit may sit just under 1).
    said = sum(p.weight * (1.0 if p.verdict is Verdict.COVERED else p.credit)
               for p in evaluation.points if p.point_id in asked)
    return round((run_share * run_weight + said) / (run_weight + sum(asked.values())), 4)


def _overruled(run: PointVerdict, words: PointVerdict, *, said_after_run: Sequence[str],
               wrong: Sequence[str]) -> PointVerdict:
    """The run's verdict on a point, carrying the sentence of the words that stated in full a point the run missed
    when it came after the run's code (a follow-up answered in words), so the candidate knows it was read.

    A sentence sent with the failing code describes that code, and the reader cannot tell it from its contradiction
    ("I use the unbiased variance", which a failed check of the biased one proves wrong, read as covering it): said
    beside the check as "said in words" it vouched for a wrong statement. Nor is a point carried that the sentence
    does not state in full (full credit: "covered" starts below it), or a sentence the same evaluation quotes as a
    wrong claim. Covered at 0.75-0.98, four of custom-collate-fn's wrong claims ("mask is where the id isn't pad":
    the code sent before states the correction, so the claim is not charged) and "The optimizer steps and the
    gradients are cleared only every accum_steps micro-batches." (for "a final partial group still gets a step")
    were carried."""
    sentence = _flat(words.evidence or "")
    stated = (words.verdict is Verdict.COVERED and words.credit >= 1 and sentence and not words.from_code
              and not words.checks
              and any(sentence in _flat(text) for text in said_after_run)
              and not any(sentence in quote or quote in sentence for quote in map(_flat, wrong) if quote))
    return run.model_copy(update={"words": words.evidence}) if run.verdict is Verdict.MISSED and stated else run


def _read_from_code(point: PointVerdict, failing_lines: set[str]) -> PointVerdict:
    """A point no check verifies, as a line of the code can show it (see `with_run`)."""
    if point.from_code and point.verdict is Verdict.PARTIAL:
        return point.model_copy(update={"verdict": Verdict.MISSED, "credit": 0.0, "evidence": None, "from_code": False})
    if point.verdict is Verdict.COVERED and (point.evidence or "").strip() in failing_lines:
        return point.model_copy(update={"verdict": Verdict.PARTIAL})
    return point


def _flat(text: str) -> str:
    return " ".join(text.split())


def with_run(evaluation: Evaluation, verdicts: Sequence[PointVerdict], *, failing_code: str = "",
             said_after_run: Sequence[str] = ()) -> Evaluation:
    """The words' evaluation with each checked point's verdict taken from the run, and its feedback rewritten.
    `said_after_run` are the words written after the run's code (follow-ups answered in words): only a sentence of
    theirs is said beside a failed check. A point no check verifies is judged from a line of the code (`from_code`)
    only when the line reads as the point in full, and the run says how far: covered when the code passed, partly
    there when it failed (`failing_code`: "def apply(x):" for "used through MyReLU.apply" is no praise in code that
    fails). A line that reads only partly like a point states nothing, in code that passed as in code that failed:
    passing code was credited "partly there" for `val_loss = float(val_loss)` ("monitors a validation metric") and
    `optimizer.step()` ("caveats"), 5 of the bank's 26 reference solutions."""
    lines = {line.strip() for line in failing_code.splitlines() if line.strip()}
    by_run = {v.point_id: v for v in verdicts}
    wrong = [m.quote for m in evaluation.misconceptions]
    points = [_overruled(by_run[p.point_id], p, said_after_run=said_after_run, wrong=wrong) if p.point_id in by_run
              else _read_from_code(p, lines) for p in evaluation.points]
    if points == evaluation.points:
        return evaluation
    return evaluation.model_copy(update={
        "points": points, "feedback": compose_feedback(points, evaluation.misconceptions, evaluation.gate)})


def beyond_full_run(evaluation: Evaluation, asked: Collection[str] = ()) -> Evaluation:
    """The evaluation of a code answer whose code score is full: a point the words missed cost nothing (words add to a
    code score, never take from it), so it is marked `beyond_score` and the feedback says it was not needed for the
    score rather than calling it missing beside a 5 / 5. A point the question asks for in words (`asked`: ids) counts
    in the code score, so it is never beyond it."""
    points = [p.model_copy(update={"beyond_score": True})
              if p.verdict is Verdict.MISSED and not p.checks and p.point_id not in asked else p
              for p in evaluation.points]
    if points == evaluation.points:
        return evaluation
    return evaluation.model_copy(update={
        "points": points, "feedback": compose_feedback(points, evaluation.misconceptions, evaluation.gate)})
