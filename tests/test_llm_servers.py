"""How LLM mode copes with the ways real servers differ: which structured-output format they take,
which models they serve, how long their window is, and replies cut off or in prose. Each failure is
one clear note on an offline score (the real server's e2e run is tests/e2e/test_llm_local.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from app.llm import LangChainChatModel, LLMError
from app.llm_scripted import ScriptedChatModel
from evaluators.base import GradingTask
from evaluators.chat import estimate_tokens
from evaluators.judge import LLMJudge
from evaluators.judge_prompt import SYSTEM_PROMPT, build_prompt
from evaluators.judge_reply import JudgeReply, reply_schema
from tests.fake_openai import REPLIES_WITHIN_S, FakeOpenAI, content, cut_off, filtered, http_error

ANSWER = "I subclass torch.autograd.Function and write forward and backward as static methods."


class Probe(BaseModel):
    topic: str


@pytest.fixture
def llama_cpp_like() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=["smollm2-135m"], refuse_json_schema=True) as server:
        yield server


def model_for(server: FakeOpenAI, **options) -> LangChainChatModel:
    return LangChainChatModel(
        base_url=server.base_url, model=options.pop("model", "smollm2-135m"), timeout_s=REPLIES_WITHIN_S, max_retries=0,
        **options
    )


def test_a_server_without_json_schema_gets_json_mode_found_once_and_kept(llama_cpp_like):
    llama_cpp_like.script([content({"topic": "autograd"}), content({"topic": "tensors"})])
    model = model_for(llama_cpp_like, max_tokens=300)
    assert model.complete_structured(system="s", user="u", schema=Probe) == Probe(topic="autograd")
    assert model.complete_structured(system="s", user="u", schema=Probe) == Probe(topic="tensors")
    formats = [r.body["response_format"]["type"] for r in llama_cpp_like.requests]
    assert formats == ["json_schema", "json_object", "json_object"]  # refused once, then remembered
    assert model.method == "json_mode"
    sent = llama_cpp_like.requests[1].body
    assert sent["response_format"]["schema"] == Probe.model_json_schema()  # constrained decoding there
    assert '"topic"' in sent["messages"][0]["content"] and sent["max_tokens"] == 300


@pytest.mark.parametrize(("reply", "reason"), [(filtered(), "refusal: content filter"), (cut_off(), "cut off")],
                         ids=["content-filter", "cut-off"])
def test_a_filtered_or_cut_off_json_mode_reply_is_a_reply_in_the_format_the_server_takes(llama_cpp_like, reply, reason):
    """The SDK raises for these: they were taken for no reply at all, and JSON mode, just taken, stayed unknown."""
    llama_cpp_like.script([reply])
    model = model_for(llama_cpp_like)
    with pytest.raises(LLMError, match=reason):
        model.complete_structured(system="s", user="u", schema=Probe)
    assert model.method == "json_mode"


def test_a_server_that_takes_json_schema_keeps_it():
    with FakeOpenAI() as server:
        server.script([content({"topic": "autograd"})])
        model = model_for(server)
        model.complete_structured(system="s", user="u", schema=Probe)
        assert model.method == "json_schema" and len(server.requests) == 1


def test_an_unknown_model_name_is_named_before_any_call():
    with FakeOpenAI(models=["llama3.2:latest", "qwen2.5"]) as server:
        with pytest.raises(LLMError) as caught:
            model_for(server, model="gpt-4o").complete_text(system="s", user="u")
        assert caught.value.reason.startswith("model 'gpt-4o' is not served at")
        assert "llama3.2:latest, qwen2.5" in caught.value.reason and server.requests == []
        server.script([content("Hello.")])
        assert model_for(server, model="llama3.2").complete_text(system="s", user="u") == "Hello."  # Ollama's bare name


def test_the_window_a_server_reports_sets_the_prompt_budget():
    with FakeOpenAI(models=["m"], context_tokens=2048) as server:
        assert model_for(server, model="m", max_tokens=512).prompt_budget == 1536
        assert model_for(server, model="m", max_tokens=512, context_tokens=4096).prompt_budget == 3584  # setting wins
    with FakeOpenAI() as server:
        assert model_for(server).prompt_budget is None  # not reported, not set: not checked


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (cut_off(), "reply cut off at the length limit"),
        (content("The candidate did well overall; I would give a 4."), "malformed output"),  # prose
        (filtered(), "LLM judge failed: refusal: content filter; offline score used"),  # not "malformed output"
    ],
    ids=["cut-off", "prose", "content-filter"],
)
def test_a_cut_off_prose_or_filtered_judge_reply_scores_offline_with_the_reason(
    llama_cpp_like, offline, relu, reply, reason
):
    llama_cpp_like.script([reply])
    task = GradingTask.from_question(relu, ANSWER)
    result = LLMJudge(model_for(llama_cpp_like, max_tokens=64), offline).evaluate(task)
    assert result.score == offline.evaluate(task).score
    (note,) = result.notes
    assert reason in note and note.endswith("offline score used")


def test_the_judge_prompt_must_fit_the_window(offline, relu):
    task = GradingTask.from_question(relu, ANSWER)
    small = ScriptedChatModel([], budget=200)
    result = LLMJudge(small, offline).evaluate(task)
    assert small.calls == [] and result.score == offline.evaluate(task).score
    assert "does not fit the model's context window (200 tokens left" in result.notes[0]

    reply = JudgeReply(points=[], misconceptions=[], feedback="", score=0)
    without = estimate_tokens(SYSTEM_PROMPT, build_prompt(task, with_reference=False))
    tight = ScriptedChatModel([reply], budget=without + 1)
    result = LLMJudge(tight, offline).evaluate(task)
    assert "###Reference answer" not in tight.calls[0].user and "###Score rubric" in tight.calls[0].user
    assert result.notes[0].startswith("LLM judge: reference answer left out of the prompt")
    roomy = ScriptedChatModel([reply], budget=100_000)
    LLMJudge(roomy, offline).evaluate(task)
    assert "###Reference answer" in roomy.calls[0].user


def test_the_reply_schema_names_this_rubric_and_bounds_every_list_but_validates_as_before(relu):
    schema = reply_schema(GradingTask.from_question(relu, ANSWER))
    shape = schema.model_json_schema()
    point = shape["$defs"]["JudgedPoint"]["properties"]
    assert point["point_id"]["enum"] == [p.id for p in relu.rubric]
    assert shape["properties"]["points"]["maxItems"] == len(relu.rubric)
    assert shape["properties"]["misconceptions"]["maxItems"] == len(relu.misconceptions)
    long_quote = {"point_id": "made-up", "verdict": "covered", "evidence_quote": "x" * 1000}
    parsed = schema.model_validate({"points": [long_quote], "misconceptions": [], "feedback": "", "score": 1})
    assert isinstance(parsed, JudgeReply)  # an unknown id or a long quote is the judge's to handle, as before


def test_the_reply_schema_of_a_question_with_no_wrong_claims_is_a_grammar_llama_cpp_can_read():
    """An ad-hoc question (or a pack entry) has no misconceptions: the claim's enum was empty, which llama.cpp turns
    into a rule with nothing on its right ("JudgedMisconception-claim ::= "); its server failed to parse it and died
    (segmentation fault), and every later call of LLM mode failed until it was restarted by hand."""
    import json
    import re

    from evaluators.adhoc import adhoc_task

    task = adhoc_task(question="What does the ReLU activation output?", answer="ReLU returns zero for negatives.",
                      reference_answer="It outputs max(0, x): the input where it is positive, zero elsewhere.")
    assert not task.misconceptions
    shape = reply_schema(task).model_json_schema()
    assert shape["properties"]["misconceptions"]["maxItems"] == 0
    assert "[]" not in json.dumps(shape)  # no empty enum anywhere
    grammar = pytest.importorskip("llama_cpp.llama_grammar")  # the converter llama-cpp-python's server uses
    rules = grammar.json_schema_to_gbnf(json.dumps(shape)).splitlines()
    assert not [rule for rule in rules if re.fullmatch(r"\S+ ::=\s*", rule)], rules


def test_a_call_that_got_no_reply_does_not_settle_the_output_method(llama_cpp_like):
    """A first call lost to a 503 (or a server not up yet) must not pin json_schema for the process's life."""
    llama_cpp_like.refuse_json_schema = False
    llama_cpp_like.script([http_error(503, "loading model"), content({"topic": "autograd"})])
    model = model_for(llama_cpp_like)
    with pytest.raises(LLMError):
        model.complete_structured(system="s", user="u", schema=Probe)
    assert model.method is None
    llama_cpp_like.refuse_json_schema = True  # now up, and as llama-cpp-python is: no json_schema
    assert model.complete_structured(system="s", user="u", schema=Probe) == Probe(topic="autograd")
    assert model.method == "json_mode"
