"""Which question comes next: bank retrieval with metadata filters, no repeats, adaptive difficulty."""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.errors import UserFacingError
from app.interview.models import Mode, SessionConfig, SessionState
from knowledge.vectorstore import QuestionStore, SearchHit

STRONG, WEAK = 4.0, 2.0  # a question score at or above STRONG steps up; at or below WEAK steps down
WEAK_TOPIC_MEAN = 2.5  # a topic whose recent mean score is below this comes back for review
RECENT = 3  # a topic's standing is the mean of its latest few questions: a topic learnt since stops being weak
# At most this share of a session's questions are review questions on weak topics (at least one), so the
# topics a candidate does well in still come up and review is spread over sessions.
REVIEW_SHARE = 0.4
START = 2  # an adaptive session's level before any answer of the user's was scored, in this session or before


def topic_standing(scores: list[tuple[str, float]]) -> dict[str, float]:
    """Each topic's mean over its RECENT latest question scores (`scores` oldest first)."""
    latest: dict[str, list[float]] = {}
    for topic, score in scores:
        latest.setdefault(topic, []).append(score)
    return {t: round(sum(s[-RECENT:]) / len(s[-RECENT:]), 2) for t, s in latest.items()}


@dataclass
class History:
    """What the user has been asked before and, from earlier sessions, where they struggle."""

    seen: dict[str, datetime] = field(default_factory=dict)
    weak_topics: dict[str, float] = field(default_factory=dict)  # topic -> its recent mean score
    standing: dict[str, float] = field(default_factory=dict)  # every topic answered before -> its recent mean
    latest_scores: list[float] = field(default_factory=list)  # the last few question scores, oldest first
    # Never chosen now: a question on screen in the user's interview still going (asked again in another session, its
    # hidden checks ran there uncounted and that session's report showed its model answer while the interview went
    # on), and, for an interview, one on screen in any session of theirs.
    withheld: set[str] = field(default_factory=set)

    @classmethod
    def from_scores(cls, seen: dict[str, datetime], topic_scores: list[tuple[str, float]]) -> History:
        """`topic_scores`: the earlier sessions' question scores, oldest first."""
        standing = topic_standing(topic_scores)
        return cls(seen=seen, weak_topics={t: m for t, m in standing.items() if m < WEAK_TOPIC_MEAN},
                   standing=standing, latest_scores=[score for _, score in topic_scores[-5:]])

    @property
    def starting_difficulty(self) -> int:
        """An adaptive session starts where the user's latest answers left off (START with none)."""
        if not self.latest_scores:
            return START
        return next_difficulty(START, sum(self.latest_scores) / len(self.latest_scores))


def level_for(topic: str, *, config: SessionConfig, state: SessionState, history: History) -> int:
    """The difficulty a question on `topic` is chosen at: the session's fixed one, or in adaptive mode the topic's
    own level, so a candidate strong in one topic and weak in another meets each at their level (one level for
    the session swung with every change of topic). A topic asked in this session moves by its own answers; one
    not yet asked here starts from the user's latest answers on it in earlier sessions, else from the session's
    overall level."""
    if config.difficulty != "adaptive":
        return int(config.difficulty)
    if topic in state.topic_levels:
        return state.topic_levels[topic]
    if topic in history.standing:
        return next_difficulty(2, history.standing[topic])
    return state.target_difficulty


REPEATED = ("You have been asked every question in these topics before, so this session brings back the ones you "
            "saw longest ago.")


def session_size(pool: list[SearchHit], history: History, wanted: int) -> tuple[int, list[str]]:
    """How many questions a session asks, and why not `wanted`: no question repeats while one in the topics
    is new to the user, and "Question 2 of 5" must not be the last one. Once all were asked, they come back,
    the ones seen longest ago first."""
    new = sum(hit.id not in history.seen for hit in pool)
    notes = [] if new else [REPEATED]
    most = new if 0 < new < len(pool) else len(pool)
    if wanted <= most:
        return wanted, notes
    which = "are new to you" if most == new < len(pool) else "are in the bank"
    return most, [*notes, f"Only {most} question(s) in these topics {which}, so the interview has {most} rather "
                          f"than {wanted}."]


def why_chosen(
    hit: SearchHit, *, config: SessionConfig, state: SessionState, history: History, pool: list[SearchHit]
) -> list[str]:
    """What the candidate is told about a choice: a question asked before, a level other than the one asked for
    or reached (unseen questions come first), and a topic back for review. Not what `held_until_the_end` keeps."""
    # A question seen before is said to be a repeat when it is chosen: sessions started together each counted
    # the topics' new questions before the others took them, so the count at the start cannot say it.
    notes = [REPEATED] if hit.id in history.seen else []
    level, own = _other_level(hit, config=config, state=state, history=history, pool=pool)
    if level and not (own and config.mode is Mode.INTERVIEW):
        notes.append(level)
    if (mean := history.weak_topics.get(hit.topic)) is not None and review_open(config, state, history):
        notes.append(f"{hit.topic} comes back for review: your latest answers on it averaged {mean:.1f} / 5.")
    return notes


def held_until_the_end(
    hit: SearchHit, *, config: SessionConfig, state: SessionState, history: History, pool: list[SearchHit]
) -> list[str]:
    """What an interview tells only once it ends: the level its own answers reached ("Your answers put you at
    difficulty 3, but ...") is read from the scores it keeps until then, and told a strong candidate how they did
    while their report was a 409. Named by its question, since it is read after the session."""
    level, own = _other_level(hit, config=config, state=state, history=history, pool=pool)
    if not level or not own or config.mode is not Mode.INTERVIEW:
        return []
    return [f"Question {state.question_number + 1}: {level.replace('this one is', 'it is')}"]


def _other_level(
    hit: SearchHit, *, config: SessionConfig, state: SessionState, history: History, pool: list[SearchHit]
) -> tuple[str | None, bool]:
    """Why a question is not at the level it was chosen for, when none is left there, and whether that level was
    moved by this session's own answers (its topic asked here, or the session's level after any answer). In
    adaptive mode the level is the one the answers reached, never one the candidate chose, and the starting level
    (neither chosen nor reached) goes unsaid: "These topics have no question at difficulty 1" puzzled a candidate
    who never chose one."""
    target = level_for(hit.topic, config=config, state=state, history=history)
    none_at_level = target not in {h.difficulty for h in pool}
    if hit.difficulty == target or not none_at_level and any(
            h.difficulty == target and h.id not in history.seen and h.id not in state.asked for h in pool):
        return None, False
    if config.difficulty != "adaptive":
        return (f"These topics have no question at difficulty {target}, so the questions are at other levels."
                if none_at_level else f"No question at difficulty {target} that you have not seen is left in these "
                "topics, so some questions are at another level."), False
    reached = hit.topic in state.topic_levels or hit.topic in history.standing or state.question_scores \
        or history.latest_scores
    if not reached:
        return None, False
    own = hit.topic in state.topic_levels or hit.topic not in history.standing and bool(state.question_scores)
    lacking = "these topics have no question at that level" if none_at_level else \
        "no question at that level that you have not seen is left in these topics"
    # With no earlier session's scores, a level of START is where the session began, and a middling answer keeps
    # it there: "Your answers put you at difficulty 2" told a candidate whose answers had moved nothing.
    why = (f"Difficulty {target} is where a session starts and your answers so far have left you there"
           if target == START and not history.latest_scores else f"Your answers put you at difficulty {target}")
    return f"{why}, but {lacking}, so this one is at difficulty {hit.difficulty}.", own


def review_open(config: SessionConfig, state: SessionState, history: History) -> bool:
    """Whether this session may still bring a weak topic back for review (at most REVIEW_SHARE of it)."""
    reviews = sum(topic in history.weak_topics for topic in state.asked_topics)
    return reviews < max(1, round(REVIEW_SHARE * config.num_questions))


def next_difficulty(current: int, score: float) -> int:
    """Step up after a strong answer, down after a weak one, within 1-3."""
    if score >= STRONG:
        return min(3, current + 1)
    if score <= WEAK:
        return max(1, current - 1)
    return current


class QuestionSelector:
    def __init__(self, store: QuestionStore) -> None:
        self._store = store
        self._related: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        self._pools: dict[tuple[tuple[str, ...], tuple[str, ...]], list[SearchHit]] = {}

    def pool(self, config: SessionConfig, known: Collection[str] | None = None) -> list[SearchHit]:
        """Every entry matching the session's frameworks and topics, of those in `known` (the bank the server
        holds: a pack ingested again while it runs puts entries in the index that it does not have). Cached
        per filter: a Chroma lookup costs ~5 ms per turn and the bank only changes on deploy (like `related`)."""
        key = (tuple(sorted(config.frameworks or ())), tuple(sorted(config.topics or ())))
        hits = self._pools.get(key)
        if hits is None:
            filters = {"framework": config.frameworks, "topic": config.topics}
            hits = self._store.catalog(filters)
            if hits:
                self._pools[key] = hits
                if len(self._pools) > 256:
                    self._pools.pop(next(iter(self._pools)))
        hits = [h for h in hits if known is None or h.id in known]
        if not hits:
            raise UserFacingError(
                "no bank questions match these frameworks and topics; widen the selection "
                "(or run `interviewer ingest` if the bank is not ingested yet)"
            )
        return hits

    def related(self, question_id: str, question: str, missed: list[str], *, k: int = 3) -> list[dict[str, str]]:
        """Bank entries near what the candidate missed: retrieved, so explanations stay grounded.

        One search per missed point (the question plus that point), merged by best score. Per-point
        results are cached: there are only a few hundred points in the bank, and `warm` fills the
        cache at start-up, so no answer waits for a query embedding."""
        best: dict[str, tuple[float, str]] = {}
        for point in missed[:3]:
            for hit in self._point_neighbours(question_id, question, point, k):
                if hit["id"] != question_id and hit["score"] > best.get(hit["id"], (-1.0, ""))[0]:
                    best[hit["id"]] = (hit["score"], hit["question"])
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:k]
        return [{"id": id_, "question": text} for id_, (_, text) in ranked]

    def _point_neighbours(self, question_id: str, question: str, point: str, k: int) -> list[dict]:
        key = (question_id, point, k)
        if key not in self._related:
            self._remember(key, self._store.search(f"{question} {point}", k=k + 1))
        return self._related[key]

    def _remember(self, key: tuple[str, str, int], hits: list[SearchHit]) -> None:
        self._related[key] = [{"id": h.id, "question": h.question, "score": h.score} for h in hits]
        if len(self._related) > 4096:
            self._related.pop(next(iter(self._related)))

    def warm(self, bank: dict[str, Any], k: int = 3) -> None:
        """Search every rubric point's neighbours ahead of time (a server does this at start-up), all
        queries embedded in one batch: 563 points in ~3.8 s against ~6.5 s one by one."""
        keys = [(q.id, q.question, p.description) for q in bank.values() for p in q.rubric]
        keys = [key for key in keys if (key[0], key[2], k) not in self._related]
        found = self._store.search_many([f"{question} {point}" for _, question, point in keys], k=k + 1)
        for (question_id, _, point), hits in zip(keys, found, strict=True):
            self._remember((question_id, point, k), hits)

    def choose(
        self, *, config: SessionConfig, state: SessionState, history: History, rng: random.Random,
        known: Collection[str] | None = None,
    ) -> SearchHit | None:
        """The next question, or None when the matching pool has nothing left for this session."""
        candidates = [h for h in self.pool(config, known) if h.id not in state.asked and h.id not in history.withheld]
        if not candidates:
            return None
        level = {topic: level_for(topic, config=config, state=state, history=history)
                 for topic in {h.topic for h in candidates}}
        jitter = {h.id: rng.random() for h in sorted(candidates, key=lambda h: h.id)}
        reviewing = review_open(config, state, history)
        fixed = config.difficulty != "adaptive"

        def rank(hit: SearchHit) -> tuple[float, ...]:
            last_seen = history.seen.get(hit.id)
            # Unseen first; once the pool is exhausted, the least recently seen.
            seen_rank = 0.0 if last_seen is None else 1.0 + last_seen.timestamp() / 1e10
            spread = float(state.asked_topics.count(hit.topic))
            off_level = float(abs(hit.difficulty - level[hit.topic]))
            return (
                seen_rank,
                # A weak topic comes back whatever its questions' level: review is what it is for.
                0.0 if reviewing and hit.topic in history.weak_topics else 1.0,
                # A level the candidate fixed is kept while the topics have an unseen question at it, topics spread
                # second. An adaptive level gives way to the spread: each topic has a level of its own, and a weak
                # topic with many easy questions must not fill a session once the strong topics' hard ones are
                # used up.
                *((off_level, spread) if fixed else (spread, off_level)),
                jitter[hit.id],
            )

        return min(candidates, key=rank)
