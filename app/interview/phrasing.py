"""How the interviewer words things: deterministic templates offline, an LLM when one is configured.

The LLM only rephrases bank content it is given; it never adds a requirement or a rubric point,
and any failure falls back to the template with a note for the transcript.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.interview.leaks import ANSWER_RUN, AnswerRuns
from evaluators.base import EvaluatorStopped
from evaluators.chat import LLMError
from evaluators.text import content_words
from knowledge.schema import Question

SYSTEM = (
    "You are a friendly but rigorous technical interviewer for PyTorch and deep-learning roles. "
    "Rephrase the interviewer line you are given so it sounds natural in a live interview. Keep every "
    "technical requirement, add none, never reveal or hint at the answer, and reply with the line only."
)


@dataclass(frozen=True)
class Phrased:
    text: str
    note: str | None = None  # set when the LLM failed and the template was used


class Phraser:
    """Offline phrasing; subclasses may reword with a model."""

    name = "templates"

    def question(self, question: Question, *, number: int, total: int) -> Phrased:
        # "Question 2 of 5" and "Follow-up" are the prompt's own fields (`number`, `kind`), which every screen
        # and the report's transcript label it with; in the words too, they read twice.
        text = f"Let's start. {question.question}" if number == 1 else question.question
        if question.code:
            text += " Write your solution to the contract below; hidden checks will run it."
        return Phrased(text)

    def follow_up(self, question: Question, probe: str, related: list[str] | None = None) -> Phrased:
        """The bank's probe for the missed point; `related` (retrieved entries) only informs an LLM."""
        return Phrased(probe)

    def feedback(self, question: Question, feedback: str) -> Phrased | None:
        """A spoken version of the rubric feedback; offline, the rubric feedback itself is shown."""
        return None

    def stop(self) -> None:
        """The process is stopping: from now on every line is the template's (nothing to give up offline)."""
        return None


# Names a rewording must keep as written: torch.var, zero_grad(), nn.Parameter, float32.
_TERM = re.compile(r"\b\w+(?:[._]\w+)+(?:\(\))?|\b\w+\(\)|\b[A-Za-z]+\d+\w*")


def _not_a_rewording(
    line: str, reply: str, answer: str = "", *, others: AnswerRuns | None = None, asked: str = ""
) -> str | None:
    """Why the model's reply cannot stand for the line, or None: empty, a hidden reasoning block (it may
    hold the answer), far longer than the line, a question no longer asked or talk about the task ("The
    interviewer is looking for..."), words of the model answer (`answer`) or of any other (`others`; as
    app.interview.leaks reads them), a hint beyond the line and the question it follows up (`asked`), a
    technical name dropped, or most of the line's words gone ("I'm sorry, I
    can't help with that", "Here is the question.")."""
    if not reply:
        return "returned an empty line"
    if re.search(r"</?\s*think\b", reply, re.I):
        return "returned its reasoning"
    if len(reply) > _longest_wording(line):
        return f"returned {len(reply)} characters for a line of {len(line)}"
    missing = [term for term in dict.fromkeys(_TERM.findall(line)) if term not in reply]
    if missing:
        return f"dropped {', '.join(missing[:3])}"
    stems = {w[:5] for w in content_words(line)}
    if stems and len(stems & {w[:5] for w in content_words(reply)}) < len(stems) / 2:
        return "kept under half of the line's words"
    if "?" in line and "?" not in reply:
        return "returned no question"
    if _META.search(reply) and not _META.search(line):
        return "talked about the task rather than asking"
    for runs, whose in ((AnswerRuns([answer]), "the"), (others, "another question's")):
        if runs and runs.in_text(reply) - runs.in_text(line):  # a run the line itself has is the line's to keep
            return f"repeated {ANSWER_RUN} or more words of {whose} model answer in a row"
    return _hint(f"{asked}\n{line}", reply, answer) if answer else None


def _hint(line: str, reply: str, answer: str) -> str | None:
    """Why the wording of a question or follow-up reads as a hint, or None: it says so ("Hint:", "think about
    how...") where the line does not, or it brings in more than `ADDED_ANSWER_WORDS` content words of the model
    answer that the line (with the question it follows up) does not use. A run of 8 words of the answer is caught
    apart; a hint in other words was shown as the question ("...? (Hint: think about how .grad keeps adding up
    across backward calls until you reset it.)"), a free hint where `:hint` costs points in an interview."""
    if _HINTING.search(reply) and not _HINTING.search(line):
        return "added a hint"
    stems = [{w[:5] for w in content_words(text)} for text in (line, reply, answer)]
    added = sorted((stems[1] - stems[0]) & stems[2])
    if len(added) > ADDED_ANSWER_WORDS:
        return f"added words of the model answer ({', '.join(added[:4])})"
    return None


# A rewording may bring in a couple of the answer's words by chance ("loop", "first"); a hint brings in several.
ADDED_ANSWER_WORDS = 2
_HINTING = re.compile(
    r"\bhints?\b|\bthink (about|of) (how|why|what)\b|\b(remember|recall) (that|how)\b|\bkeep in mind\b", re.I)


def _longest_wording(line: str) -> int:
    """The most characters a wording of the line may take."""
    return 3 * len(line) + 200


_META = re.compile(r"\b(the|this) (interviewer|line|rephras\w*|rewording)\b|\bthe candidate\b|"
                   r"\b(reworded|rephrased|revised) (version|question|line)\b|^\W*(sure|certainly|of course)\b", re.I)


class LLMPhraser(Phraser):
    """Conversational wording from an OpenAI-compatible model, grounded in the bank entry."""

    name = "llm"

    def __init__(self, chat_model: Any, *, bank_answers: Iterable[str] = ()) -> None:
        self._chat = chat_model
        # Every model answer of the bank: a wording must carry no other question's answer either, one the server
        # may have seen in a judge prompt.
        self._others = AnswerRuns(bank_answers)

    def _reword(self, template: Phrased, context: str, answer: str = "", asked: str = "") -> Phrased:
        try:
            text = self._chat.complete_text(
                system=SYSTEM, user=f"Context (bank entry):\n{context}\n\nLine:\n{template.text}",
                max_chars=_longest_wording(template.text),
            )
        except EvaluatorStopped:
            # The server is stopping. The step ends now, worded from the template, and is stored whole: a 503 here
            # would come after the answer was stored (the next question is worded after), half a step.
            return Phrased(template.text, note="LLM phrasing given up as the server stopped; template used")
        except Exception as exc:  # every LLM failure degrades to the template, visibly
            failure = exc.reason if isinstance(exc, LLMError) else f"unexpected error: {type(exc).__name__}"
            return Phrased(template.text, note=f"LLM phrasing failed ({failure}); template used")
        text = " ".join(str(text).split())
        why = _not_a_rewording(template.text, text, answer, others=self._others, asked=asked)
        if why:
            return Phrased(template.text, note=f"LLM phrasing {why}; template used")
        return Phrased(text)

    def stop(self) -> None:
        if callable(stop := getattr(self._chat, "stop", None)):
            stop()

    def question(self, question: Question, *, number: int, total: int) -> Phrased:
        template = super().question(question, number=number, total=total)
        return self._reword(template, question.question, question.reference_answer)

    def follow_up(self, question: Question, probe: str, related: list[str] | None = None) -> Phrased:
        nearby = "".join(f"\nRelated bank question: {text}" for text in related or [])
        context = f"{question.question}\nProbe: {probe}{nearby}\nDo not answer the probe for the candidate."
        return self._reword(super().follow_up(question, probe), context, question.reference_answer, question.question)

    def feedback(self, question: Question, feedback: str) -> Phrased | None:
        """Only the verified rubric feedback is reworded: the model adds no judgement of its own."""
        return self._reword(Phrased(feedback), f"{question.question}\nSay this feedback to the candidate, "
                                                "keeping every point and quote and adding none:")
