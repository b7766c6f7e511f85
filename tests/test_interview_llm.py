"""LLM mode of the interviewer against a local OpenAI-compatible server: used when it answers,
and every failure (slow, 500) completes the turn offline with a note in the transcript."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Settings
from app.interview.engine import InterviewEngine
from app.interview.models import SessionConfig
from app.interview.phrasing import LLMPhraser
from app.interview.scoring import AnswerScorer
from app.interview.selection import QuestionSelector
from app.llm import chat_model_from_settings
from app.store import open_repository
from evaluators.rubric import RubricScorer
from tests.fake_openai import NEVER_S, REPLIES_WITHIN_S, FakeOpenAI, content, cut_off, echo, http_error, slow


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


def make_engine(fake, tmp_path: Path, ingested_store, bank, embedder, *, timeout_s: float = REPLIES_WITHIN_S):
    settings = Settings(
        llm_base_url=fake.base_url, llm_model="interviewer-test", llm_timeout_s=timeout_s, llm_max_retries=0
    )
    repo = open_repository(f"sqlite:///{tmp_path / 'llm.db'}")
    engine = InterviewEngine(
        repo=repo,
        selector=QuestionSelector(ingested_store),
        bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=RubricScorer(embedder)),
        phraser=LLMPhraser(chat_model_from_settings(settings)),
    )
    return engine, repo, repo.get_or_create_user("dana").id


def test_llm_phrases_the_question_grounded_in_the_bank_entry(fake, tmp_path, ingested_store, bank, embedder):
    engine, repo, user = make_engine(fake, tmp_path, ingested_store, bank, embedder)
    fake.script([echo(lambda line: "So, tell me. " + line.split("Line:\n", 1)[1])])
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["tensors"], seed=1))
    assert prompt.text.startswith("So, tell me. Let's start.")
    sent = fake.requests[0].prompt_text
    question = {q.id: q for q in bank}[prompt.question_id]
    assert question.question in sent  # grounded: the bank entry is in the prompt
    assert fake.requests[0].body["model"] == "interviewer-test"
    assert repo.get_session(session.id, user).state["notes"] == []


@pytest.mark.parametrize("reply", [slow(delay_s=NEVER_S), http_error(500)], ids=["slow", "http-500"])
def test_llm_failure_falls_back_to_the_template_visibly(fake, tmp_path, ingested_store, bank, embedder, reply):
    engine, repo, user = make_engine(fake, tmp_path, ingested_store, bank, embedder, timeout_s=1.0)
    fake.script([reply])
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["tensors"], seed=1))
    question = {q.id: q for q in bank}[prompt.question_id]
    assert question.question in prompt.text  # the offline template
    notes = repo.get_session(session.id, user).state["notes"]
    assert len(notes) == 1 and "LLM phrasing failed" in notes[0]


@pytest.mark.parametrize("said, why", [
    ("I'm sorry, but I can't help with that request.", "kept under half of the line's words"),
    ("<think>It is torch.cdist.</think> Let's start.", "returned its reasoning"),
    ("Here is the question.", "kept under half of the line's words"),
    ("Let's start. Given points x and y, write pairwise_dist() without loops.", "kept under half"),
    ("Q " * 5000, "characters for a line of"),
])
def test_a_reply_that_is_no_rewording_leaves_the_template(fake, tmp_path, ingested_store, bank, embedder, said, why):
    from app.interview.phrasing import _TERM

    engine, repo, user = make_engine(fake, tmp_path, ingested_store, bank, embedder)
    by_id = {q.id: q for q in bank}
    # A first question whose line names nothing technical: a dropped name ("dropped torch.autograd.Variable") is read
    # before how many words were kept, so a question with one would be refused for that instead.
    for seed in range(1, 60):
        fake.script([content(said)])
        session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=1, topics=["tensors"],
                                                                          seed=seed))
        if not _TERM.search(by_id[prompt.question_id].question):
            break
    assert by_id[prompt.question_id].question in prompt.text  # the offline template
    (note,) = repo.get_session(session.id, user).state["notes"]
    assert note.startswith("Q1: LLM phrasing") and why in note and note.endswith("template used")


def test_llm_speaks_the_verified_feedback_and_falls_back_when_it_fails(fake, tmp_path, ingested_store, bank, embedder):
    engine, repo, user = make_engine(fake, tmp_path, ingested_store, bank, embedder)
    said = echo(lambda line: "Nice start. " + line.split("Line:\n", 1)[1])
    fake.script([echo(lambda line: line.split("Line:\n", 1)[1]), said, http_error(500)] * 3)
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=1))
    outcome = engine.answer(session_id=session.id, user_id=user, text="A tensor is an n-dimensional array.", code=None)
    assert outcome.evaluation["feedback_spoken"] == "Nice start. " + " ".join(outcome.evaluation["feedback"].split())
    assert outcome.evaluation["feedback"]  # the rubric feedback itself is kept
    assert "feedback" in fake.requests[1].prompt_text.lower()


def test_llm_follow_up_is_grounded_in_retrieved_related_entries(fake, tmp_path, ingested_store, bank, embedder):
    engine, repo, user = make_engine(fake, tmp_path, ingested_store, bank, embedder)
    question = {q.id: q for q in bank}["relu-autograd-function"]
    fake.script([content("Q?"), content("Feedback."), content("Could you say how you would check it?")] * 4)
    config = SessionConfig(num_questions=1, topics=["autograd"], difficulty=3, seed=3)
    session, prompt = engine.start(user_id=user, config=config)
    while prompt.question_id != question.id:
        config = config.model_copy(update={"seed": config.seed + 1})
        session, prompt = engine.start(user_id=user, config=config)
    sent_before = len(fake.requests)
    outcome = engine.answer(session_id=session.id, user_id=user, code=None,
                            text="You subclass torch.autograd.Function and write static forward and backward methods.")
    related = outcome.evaluation["related"]
    follow_up_prompt = fake.requests[-1].prompt_text
    assert len(fake.requests) == sent_before + 2  # spoken feedback, then the follow-up
    assert "Related bank question" in follow_up_prompt and related[0]["question"] in follow_up_prompt


def test_a_rewording_keeps_the_lines_technical_names():
    from app.interview.phrasing import _not_a_rewording

    line = "Follow-up: What does torch.var compute by default, and why call zero_grad() first?"
    assert _not_a_rewording(line, "And what does the variance function compute by default? Why zero first?") == \
        "dropped torch.var, zero_grad()"
    assert _not_a_rewording(line, "One more: by default, what does torch.var compute, and why call zero_grad() "
                                  "before that?") is None


def test_a_rewording_asks_and_holds_no_run_of_the_model_answer():
    from app.interview.phrasing import _not_a_rewording

    line = "Follow-up: Your validation pass uses far more memory than training. What would you check?"
    answer = "The loop has a fixed skeleton. Create the optimizer once, before the loop, and call zero_grad."
    leak = ("Your validation pass uses far more memory than training: what would you check? (Model answer: the "
            "loop has a fixed skeleton. Create the optimizer once, before the loop.)")
    assert "words of the model answer" in _not_a_rewording(line, leak, answer)
    meta = ("The interviewer is looking for a detail: your validation pass uses far more memory than training, "
            "what would you check?")
    assert _not_a_rewording(line, meta, answer) == "talked about the task rather than asking"
    sure = "Sure! Here's a reworded version of the question: your validation pass uses far more memory than " \
           "training. What would you check?"
    assert _not_a_rewording(line, sure, answer) == "talked about the task rather than asking"
    flat = "Your validation pass uses far more memory than training. Say what you would check."
    assert _not_a_rewording(line, flat, answer) == "returned no question"
    fine = "Validation is eating far more memory than training. What would you check first?"
    assert _not_a_rewording(line, fine, answer) is None


def test_a_wording_that_adds_a_hint_is_not_a_rewording(bank):
    """Only 8 words in a row of the model answer were caught: a follow-up worded with a hint in other words was
    shown as asked, a free hint where `:hint` costs points in an interview."""
    from app.interview.phrasing import _not_a_rewording

    question = {q.id: q for q in bank}["grad-attribute"]
    line = "What would happen to training if you forgot to call optimizer.zero_grad() in the loop?"
    hinted = f"{line} (Hint: think about how .grad keeps adding up across backward calls until you reset it.)"
    assert _not_a_rewording(line, hinted, question.reference_answer, asked=question.question) == "added a hint"
    unmarked = f"{line} Consider how each backward call accumulates into .grad until you reset it."
    why = _not_a_rewording(line, unmarked, question.reference_answer, asked=question.question)
    assert (why or "").startswith("added words of the model answer"), why
    fine = "Suppose the optimizer.zero_grad() call went missing from your loop: what would happen to training?"
    assert _not_a_rewording(line, fine, question.reference_answer, asked=question.question) is None


def test_once_a_call_of_a_step_gets_no_reply_its_other_calls_are_not_made(fake, tmp_path, ingested_store, bank,
                                                                          embedder):
    """A judge whose reply trickles past the timeout: the feedback and the next prompt are worded offline at once
    (before, each waited out the timeout again: 121 s for one answer at a 20 s timeout, 1 retry)."""
    from evaluators.judge import LLMJudge
    from tests.fake_openai import dripping

    settings = Settings(
        llm_base_url=fake.base_url, llm_model="interviewer-test", llm_timeout_s=1.0, llm_max_retries=0
    )
    repo = open_repository(f"sqlite:///{tmp_path / 'llm.db'}")
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(ingested_store), bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=LLMJudge(chat_model_from_settings(settings), RubricScorer(embedder))),
        # the wordings reply, in time on any machine; the judge's 1 s timeout is its own to wait out
        phraser=LLMPhraser(chat_model_from_settings(settings.model_copy(update={"llm_timeout_s": REPLIES_WITHIN_S}))),
    )
    user = repo.get_or_create_user("dana").id
    fake.script([echo(lambda line: line.split("Line:\n", 1)[1])])
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=1))
    fake.script([dripping({"points": []}, every_s=0.2, drips=int(NEVER_S / 0.2))])
    outcome = engine.answer(session_id=session.id, user_id=user, text="A tensor is an n-dimensional array.", code=None)
    assert len(fake.requests) == 2  # the question's wording and the judge; nothing after the judge got no reply
    assert "fallback" in outcome.evaluation["evaluator"] and outcome.prompt is not None
    notes = repo.get_session(session.id, user).state["notes"]
    assert "Q1 feedback: LLM phrasing failed (not called: an earlier call of this step got no reply, timeout after " \
           "1 s); template used" in notes, notes


def test_a_model_answer_in_look_alike_letters_is_still_the_model_answer():
    """Cyrillic о, е, а, с and р drawn like Latin letters, a zero-width space inside a word, fullwidth letters:
    the words read the same, so the run is found."""
    from app.interview.phrasing import _not_a_rewording

    line = "Follow-up: Your validation pass uses far more memory than training. What would you check?"
    answer = "The loop has a fixed skeleton. Create the optimizer once, before the loop, and call zero_grad."
    look_alike = ("Thе lооp hаs а fixеd skеlеtоn. Crеаtе thе оptimizеr оnсе, bеfоrе thе lоор, "
                  "and call zero_grad.")
    assert look_alike != answer[: len(look_alike)]
    for hidden in (look_alike, "The loop has a fixed ske\u200bleton. Create the optimizer once",
                   "The loop has a fixed skeleton. Ｃｒｅａｔｅ the optimizer once",
                   # Invisible marks inside words (grapheme joiner, variation selector, Hangul filler) and
                   # accents: each split or changed a word for the regex, and the run passed
                   "The l\u034foop has a f\ufe00ixed skel\u3164eton. Créàte the optimizer once"):
        leak = f"Your validation pass uses far more memory than training: what would you check? ({hidden})"
        assert "words of the model answer" in (_not_a_rewording(line, leak, answer) or ""), hidden


def test_a_wording_that_carries_another_questions_model_answer_leaves_the_template(fake, bank):
    """The server saw other answers in judge prompts: a wording must carry none of them, not only its own."""
    from app.services import phraser_for

    question, other = bank[0], bank[1]
    settings = Settings(llm_base_url=fake.base_url, llm_model="m", llm_timeout_s=REPLIES_WITHIN_S, llm_max_retries=0)
    hint = " ".join(other.reference_answer.split()[:12])
    fake.script([echo(lambda line: f"{line.split('Line:', 1)[1].strip()} (Hint: {hint})")])
    phrased = phraser_for(settings).question(question, number=1, total=1)
    assert phrased.text.startswith("Let's start.") and hint not in phrased.text
    assert phrased.note == ("LLM phrasing repeated 8 or more words of another question's model answer in a row; "
                            "template used")


_LEET = str.maketrans("aeiostbg", "43!05789")


@pytest.mark.parametrize("trick", [
    lambda words: " ".join("-".join(w) for w in words),  # a hyphen between every letter
    lambda words: " ".join(w[:2] + "-" + w[2:] for w in words),  # a hyphen inside each word
    lambda words: "-".join(words),  # or between the words
    lambda words: " ".join(" ".join(w) for w in words),  # letters spaced
    lambda words: " ".join(words).replace("o", "0"),  # the digit 0 for the letter o
    lambda words: " ".join(words[:7] + ["um"] + words[7:14] + ["um"] + words[14:]),  # a filler every 7 words
    lambda words: " ".join(f"{w} like" if i % 4 == 3 else w for i, w in enumerate(words)),  # or every 4
    # Leetspeak: only 0 and 1 were read as letters (as o and l), so '7h3 l00p h4s 4 f1x3d' passed.
    lambda words: " ".join(words).translate(_LEET),  # every letter leetspeak has a digit or symbol for
    lambda words: " ".join(words).translate(str.maketrans("aeis", "@3|$")),
    lambda words: " ".join(words).replace("i", "1").replace("e", "3"),  # 1 for i, where 0 was already read as o
    lambda words: " ".join(words).replace("o", "ø").replace("l", "ł").replace("d", "đ"),  # letters NFKD keeps whole
], ids=["letters-hyphened", "words-hyphened", "hyphens-between", "letters-spaced", "zero-for-o", "filler-7",
        "filler-4", "digits", "symbols", "one-for-i", "slashed-letters"])
def test_a_model_answer_spelt_out_in_digits_leetspeak_or_with_fillers_is_still_the_model_answer(trick):
    from app.interview.phrasing import _not_a_rewording

    line = "Follow-up: Your validation pass uses far more memory than training. What would you check?"
    answer = ("The loop has a fixed skeleton. Create the optimizer once, before the loop, and call zero_grad "
              "before every backward pass so gradients do not pile up.")
    hidden = trick(answer.rstrip(".").split()[:16])
    leak = f"Your validation pass uses far more memory than training: what would you check? ({hidden})"
    assert "words of the model answer" in (_not_a_rewording(line, leak, answer) or ""), hidden
    # Punctuation, digits and leetspeak's symbols in a wording of its own are no run of the answer.
    fine = ("Your validation pass uses far more memory than training (2x, say 8 GB at batch 64!): what would you "
            "check | measure first? Great, the loop + optimizer part is right!")
    assert _not_a_rewording(line, fine, answer) is None


def test_a_wording_is_not_waited_for_past_the_length_it_may_take(fake, bank):
    """A wording over 3 times the line's length (+200) is not used, yet each call waited for up to the judge's 800
    tokens: SmolLM2 on a CPU ran a 148-character line's wording to that limit."""
    from app.services import phraser_for

    question = next(q for q in bank if not q.code)
    settings = Settings(llm_base_url=fake.base_url, llm_model="m", llm_timeout_s=REPLIES_WITHIN_S, llm_max_retries=0,
                        llm_max_tokens=800)
    fake.script([cut_off("Let me rephrase that for you at great length")])
    phrased = phraser_for(settings).question(question, number=2, total=2)
    line = question.question
    limit = (3 * len(line) + 200) // 2 + 16
    assert limit < 800 and fake.requests[-1].body["max_tokens"] == limit
    assert phrased.text == line
    cut = f"reply cut off at the length limit ({limit} tokens)"
    assert phrased.note == f"LLM phrasing failed (malformed output: {cut}); template used"


def test_the_same_llm_failure_on_a_second_question_is_told_with_its_score(fake, tmp_path, ingested_store, bank,
                                                                         embedder):
    """A session note is told once a session (the question's wording falling back again for the same reason is not
    said again), but a score the judge could not give says so with the score itself: a candidate who meets the
    failure again on the second question knows that score is offline too."""
    from evaluators.judge import LLMJudge

    settings = Settings(llm_base_url=fake.base_url, llm_model="interviewer-test", llm_timeout_s=REPLIES_WITHIN_S,
                        llm_max_retries=0)
    repo = open_repository(f"sqlite:///{tmp_path / 'llm.db'}")
    chat = chat_model_from_settings(settings)
    engine = InterviewEngine(
        repo=repo, selector=QuestionSelector(ingested_store), bank={q.id: q for q in bank},
        scorer=AnswerScorer(evaluator=LLMJudge(chat, RubricScorer(embedder))), phraser=LLMPhraser(chat),
    )
    user = repo.get_or_create_user("dana").id
    fake.script([http_error(500)] * 40)  # every call: the wordings and the judge
    session, prompt = engine.start(user_id=user, config=SessionConfig(num_questions=2, topics=["tensors"], seed=1))
    told: dict[int, list[list[str]]] = {}
    while prompt is not None:
        number = prompt.number
        outcome = engine.answer(session_id=session.id, user_id=user, text="A tensor is an n-dimensional array.",
                                code=None)
        assert outcome.evaluation is not None
        told.setdefault(number, []).append(outcome.evaluation["notes"])
        prompt = outcome.prompt
    assert sorted(told) == [1, 2]
    for number, notes_of_answers in told.items():
        for notes in notes_of_answers:
            assert "LLM judge failed: HTTP 500; offline score used" in notes, (number, notes)
    assert repo.get_session(session.id, user).state["notes"] == ["Q1: LLM phrasing failed (HTTP 500); template used"]


def test_a_wording_note_names_the_prompt_it_concerns_in_the_session_and_its_report(fake, tmp_path, ingested_store,
                                                                                 bank, embedder):
    """A failed wording was noted bare ("LLM phrasing failed (HTTP 500); template used") and the report listed it at
    its top: which prompt fell back to the template, the question or its follow-up, was nowhere."""
    from app.reports import build_report, render

    engine, repo, user = make_engine(fake, tmp_path, ingested_store, bank, embedder)
    question = {q.id: q for q in bank}["relu-autograd-function"]
    reworded = echo(lambda line: line.split("Line:\n", 1)[1])
    config = SessionConfig(num_questions=1, topics=["autograd"], difficulty=3, seed=3)
    fake.script([reworded])
    session, prompt = engine.start(user_id=user, config=config)
    while prompt.question_id != question.id:
        config = config.model_copy(update={"seed": config.seed + 1})
        fake.script([reworded])
        session, prompt = engine.start(user_id=user, config=config)
    fake.script([reworded, http_error(500)])  # the spoken feedback, then the follow-up's wording
    outcome = engine.answer(session_id=session.id, user_id=user, code=None,
                            text="You subclass torch.autograd.Function and write static forward and backward methods.")
    assert outcome.prompt is not None and outcome.prompt.kind == "follow_up"
    note = "Q1 follow-up: LLM phrasing failed (HTTP 500); template used"
    assert repo.get_session(session.id, user).state["notes"] == [note]
    stored = repo.get_session(session.id, user)
    report = build_report(session=stored, turns=repo.turns(session.id), bank={q.id: q for q in bank})
    assert f"Note: {note}" in render(report, "markdown")[0].decode()
