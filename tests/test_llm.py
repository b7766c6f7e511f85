"""The chat-model seam against a real local OpenAI-compatible server: replies, errors, settings."""

from __future__ import annotations

import base64
import json
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from pydantic import BaseModel

from app.config import Settings, get_settings
from app.llm import LangChainChatModel, LLMError, chat_model_from_settings
from app.llm_scripted import ScriptedChatModel
from tests.fake_openai import (
    DID_NOT_WAIT_S,
    NEVER_S,
    REPLIES_WITHIN_S,
    FakeOpenAI,
    broken_json,
    content,
    dripping,
    filtered,
    generating,
    http_error,
    refusal,
    slow,
    unstreamed,
    web_page,
)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fresh fake server per test (conftest.py could list tests.fake_openai in pytest_plugins)."""
    with FakeOpenAI() as server:
        yield server


class Probe(BaseModel):
    topic: str
    difficulty: int


def model_for(server: FakeOpenAI, **kwargs) -> LangChainChatModel:
    options = {"timeout_s": REPLIES_WITHIN_S, "max_retries": 0, **kwargs}
    return LangChainChatModel(base_url=server.base_url, model="fake-chat", **options)


def test_a_json_schema_reply_warns_nothing_and_no_warning_filter_is_left_behind(fake_openai):
    """langchain-openai dumped each streamed event of a reply parsed into the schema's class, and pydantic warned of
    its `parsed` field: a UserWarning per reply on the terminal, which a process-wide filter used to hide."""
    import warnings

    import langchain_openai  # noqa: F401 (importing LangChain sets filters of its own)

    filters = list(warnings.filters)
    model = model_for(fake_openai, method="json_schema")
    assert warnings.filters == filters  # the model leaves every other warning of the process as it was
    fake_openai.script([content({"topic": "autograd", "difficulty": 2})])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert model.complete_structured(system="s", user="u", schema=Probe) == Probe(topic="autograd", difficulty=2)
    assert [str(w.message) for w in caught] == []
    sent = fake_openai.requests[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"]["additionalProperties"] is False


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_structured_reply_in_either_method(fake_openai, method):
    fake_openai.script([content({"topic": "autograd", "difficulty": 2})])
    got = model_for(fake_openai, method=method).complete_structured(system="sys", user="usr", schema=Probe)
    assert got == Probe(topic="autograd", difficulty=2)
    body = fake_openai.requests[0].body
    assert ("response_format" in body) == (method == "json_schema")
    assert ("tools" in body) == (method == "function_calling")


@pytest.mark.parametrize("method", ["json_schema", "json_mode", "function_calling"])
@pytest.mark.parametrize(
    ("scripted", "reason"),
    [
        (broken_json('{"topic": "autograd", "diff'), "malformed output"),
        (content({"topic": "autograd"}), "malformed output"),
        (http_error(500), "HTTP 500"),
        (http_error(429, "rate limited"), "HTTP 429"),
        (refusal("No."), "refusal: No."),
        (filtered('{"topic": "autog'), "refusal: content filter"),
    ],
    ids=["broken-json", "missing-field", "http-500", "http-429", "refusal", "content-filter"],
)
def test_structured_failures_become_one_error_with_a_short_reason(fake_openai, method, scripted, reason):
    fake_openai.script([scripted])
    with pytest.raises(LLMError) as caught:
        model_for(fake_openai, method=method).complete_structured(system="s", user="u", schema=Probe)
    assert caught.value.reason.startswith(reason)
    assert len(caught.value.reason) < 120


def test_timeout_is_bounded(fake_openai):
    fake_openai.script([slow({"topic": "t", "difficulty": 1}, delay_s=NEVER_S)])
    model = model_for(fake_openai, timeout_s=0.5)  # built first: importing the SDK took 8 s on a machine at load 17
    started = time.monotonic()
    with pytest.raises(LLMError, match="timeout after 0.5 s"):
        model.complete_structured(system="s", user="u", schema=Probe)
    assert time.monotonic() - started < DID_NOT_WAIT_S


@pytest.mark.parametrize("give_up", ["timeout", "ctrl-c"])
def test_a_reply_given_up_on_stops_the_server_generating_it(fake_openai, give_up):
    """A local server stops generating a reply when the connection of a streamed request closes, and only then:
    llama-cpp-python works an unstreamed one out whole, and the next request waits behind it (70 s after the
    judge's call was given up at 5 s, SmolLM2-135M). Here the reply takes 200 s to generate, past every wait here."""
    fake_openai.script([generating("word " * 4000, token_s=0.05)])
    model = model_for(fake_openai, timeout_s=0.5 if give_up == "timeout" else REPLIES_WITHIN_S)
    # a real SIGINT to the main thread, as Ctrl-C sends, once the request is under way
    main = threading.main_thread().ident
    assert main is not None
    told = threading.Event()

    def ctrl_c() -> None:
        while not fake_openai.requests and not told.wait(0.02):
            pass
        if not told.is_set():
            signal.pthread_kill(main, signal.SIGINT)

    pressing = threading.Thread(target=ctrl_c, daemon=True)
    if give_up == "ctrl-c":
        pressing.start()
    try:
        with pytest.raises(LLMError if give_up == "timeout" else KeyboardInterrupt):
            model.complete_text(system="s", user="Write a long essay.")
    finally:
        told.set()
    assert fake_openai.wait_idle(timeout_s=DID_NOT_WAIT_S), "the server went on generating the reply given up on"
    assert fake_openai.requests[0].body["stream"] is True


def test_text_reply_and_its_failures(fake_openai):
    model = model_for(fake_openai)
    fake_openai.script(
        [
            "  Tell me how backward finds the saved input.  ",
            refusal("Not today."),
            filtered("Tell me how backward"),  # the filter's cut is no wording to show
            content(""),
            http_error(503),
        ]
    )
    assert model.complete_text(system="You interview.", user="Phrase a follow-up.") == (
        "Tell me how backward finds the saved input."
    )
    for reason in ("refusal: Not today.", "refusal: content filter", "malformed output: empty reply", "HTTP 503"):
        with pytest.raises(LLMError) as caught:
            model.complete_text(system="s", user="u")
        assert caught.value.reason == reason
    first = fake_openai.requests[0].body
    assert first["temperature"] == 0 and first["model"] == "fake-chat"
    assert [m["content"] for m in first["messages"]] == ["You interview.", "Phrase a follow-up."]


def test_a_server_that_does_not_stream_is_said_so(fake_openai):
    """Every call streams; a server (or proxy) that sends the whole reply as JSON anyway was read as events and
    failed as "No generations found in stream" (text) or "unexpected error: AssertionError" (structured)."""
    said = "malformed output: the server sent a whole JSON reply to a streamed request (no streaming)"
    fake_openai.script([unstreamed("A follow-up."), unstreamed({"topic": "autograd", "difficulty": 2})])
    with pytest.raises(LLMError) as caught:
        model_for(fake_openai).complete_text(system="s", user="u")
    assert caught.value.reason == said
    with pytest.raises(LLMError) as caught:
        model_for(fake_openai, method="json_schema").complete_structured(system="s", user="u", schema=Probe)
    assert caught.value.reason == said


def test_connection_refused_is_an_llm_error():
    with FakeOpenAI() as server:
        url = server.base_url
    with pytest.raises(LLMError, match="connection failed"):
        LangChainChatModel(base_url=url, model="m", timeout_s=0.5, max_retries=0).complete_text(
            system="s", user="u"
        )


def test_fake_server_serves_the_unversioned_path_and_records_everything(fake_openai):
    fake_openai.script([content("hi")])
    root = fake_openai.base_url.removesuffix("/v1")
    response = httpx.post(f"{root}/chat/completions", json={"model": "x", "messages": []})
    assert response.json()["choices"][0]["message"]["content"] == "hi"
    assert httpx.post(f"{root}/v1/embeddings", json={}).status_code == 404
    # With the script exhausted the fake answers 500 so an unexpected extra call cannot pass silently.
    assert httpx.post(f"{root}/chat/completions", json={"messages": []}).status_code == 500
    assert [r.path for r in fake_openai.requests] == ["/chat/completions", "/chat/completions"]


def test_chat_model_from_settings_is_none_offline_and_configured_otherwise(monkeypatch):
    assert chat_model_from_settings(get_settings()) is None
    monkeypatch.setenv("INTERVIEWER_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("INTERVIEWER_LLM_MODEL", "qwen2.5-7b-instruct")
    monkeypatch.setenv("INTERVIEWER_LLM_TIMEOUT_S", "3")
    get_settings.cache_clear()
    model = chat_model_from_settings(get_settings())
    assert isinstance(model, LangChainChatModel)
    assert model.name == "qwen2.5-7b-instruct" and model.timeout_s == 3


def test_settings_with_only_half_the_llm_config_are_rejected():
    with pytest.raises(ValueError, match="needs both"):
        Settings(llm_base_url="http://127.0.0.1:9/v1")


def test_scripted_model_is_deterministic_and_records_calls():
    model = ScriptedChatModel(
        replies=[
            {"topic": "a", "difficulty": 1},
            '{"topic": "b", "difficulty": 2}',
            "{broken",
            "plain text",
            LLMError("HTTP 500"),
        ]
    )
    assert model.complete_structured(system="s", user="u1", schema=Probe).topic == "a"
    assert model.complete_structured(system="s", user="u2", schema=Probe).difficulty == 2
    with pytest.raises(LLMError, match="malformed output"):
        model.complete_structured(system="s", user="u3", schema=Probe)
    assert model.complete_text(system="s", user="u4") == "plain text"
    with pytest.raises(LLMError, match="HTTP 500"):
        model.complete_text(system="s", user="u5")
    with pytest.raises(LLMError, match="no scripted reply left"):
        model.complete_text(system="s", user="u6")
    assert [c.user for c in model.calls] == ["u1", "u2", "u3", "u4", "u5", "u6"]


@pytest.mark.parametrize("url", ["http://[::1/v1", "localhost:8080/v1", "ftp://host/v1"])
def test_an_llm_url_that_is_not_one_is_said_at_start_up(url):
    with pytest.raises(ValueError, match="INTERVIEWER_LLM_BASE_URL"):
        Settings(llm_base_url=url, llm_model="m")


def test_a_server_that_echoes_the_key_or_a_password_never_puts_them_in_a_reason(fake_openai):
    """An error message is stored as a note (session, evaluation, report): what the server echoes of the
    request's credentials is cut out of it."""
    key, password = "sk-CANARY-7f3a9b21-secret", "hunter2pw"
    echo = f"Invalid request for key Bearer {key} from http://bob:{password}@host"
    url = fake_openai.base_url.replace("//", f"//bob:{password}@", 1)
    for call in ("structured", "text"):
        fake_openai.script([http_error(400, echo)])
        model = LangChainChatModel(base_url=url, model="fake-chat", api_key=key, timeout_s=REPLIES_WITHIN_S,
                                   max_retries=0)
        with pytest.raises(LLMError) as caught:
            if call == "structured":
                model.complete_structured(system="s", user="u", schema=Probe)
            else:
                model.complete_text(system="s", user="u")
        reason = caught.value.reason
        assert reason.startswith("HTTP 400") and key not in reason and password not in reason, reason
        assert "[redacted]" in reason and caught.value.__cause__ is None and caught.value.__suppress_context__
    assert password not in model.base_url
    # The same secrets as a server may echo them back: the URL's credentials as sent (Basic, base64), the key
    # URL-encoded, and in a reply that is not an error.
    from urllib.parse import quote
    basic = base64.b64encode(f"bob:{password}".encode()).decode()
    for echo in (f"got Basic {basic}", f"got token={basic}", f"key={quote(key + '/x', safe='')}"):
        fake_openai.script([http_error(400, echo)])
        model = LangChainChatModel(base_url=url, model="fake-chat", api_key=key + "/x", timeout_s=REPLIES_WITHIN_S,
                                   max_retries=0)
        with pytest.raises(LLMError) as caught:
            model.complete_text(system="s", user="u")
        assert basic not in caught.value.reason and quote(key + "/x", safe="") not in caught.value.reason
    fake_openai.script([content(f"What does zero_grad clear? (key {key})")])
    assert key not in model_for(fake_openai, api_key=key).complete_text(system="s", user="u")


def test_a_reply_that_trickles_in_is_cut_at_the_timeout_in_all(fake_openai):
    """Every read is quick (a space each 0.2 s), so a per-read timeout would wait for all 1,500 (300 s); the
    timeout bounds the whole reply."""
    fake_openai.script([dripping({"topic": "autograd", "difficulty": 2}, every_s=0.2, drips=int(NEVER_S / 0.2))])
    model = model_for(fake_openai, timeout_s=1.0)  # built before the clock starts, as above
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        model.complete_structured(system="s", user="u", schema=Probe)
    assert caught.value.reason.startswith("timeout") and time.monotonic() - started < DID_NOT_WAIT_S
    fake_openai.script([dripping({"topic": "autograd", "difficulty": 2}, every_s=0.05, drips=4)])
    assert model_for(fake_openai).complete_structured(system="s", user="u", schema=Probe).difficulty == 2


def test_a_step_with_a_slow_model_is_not_taken_for_a_crashed_one():
    from app.services import resume_after_s

    assert resume_after_s(Settings()) == 60.0
    slow = Settings(llm_base_url="http://127.0.0.1:1/v1", llm_model="m", llm_timeout_s=75, llm_max_retries=0)
    assert resume_after_s(slow) >= 3 * 75  # judge, follow-up and feedback wording, each up to the timeout


def test_json_a_model_wraps_in_a_fence_is_read(fake_openai):
    fake_openai.script([content('```json\n{"topic": "autograd", "difficulty": 2}\n```')])
    got = model_for(fake_openai, method="json_mode").complete_structured(system="s", user="u", schema=Probe)
    assert got == Probe(topic="autograd", difficulty=2)


def test_basic_credentials_are_cut_out_but_basic_words_are_kept():
    """A Basic credential is base64 of user:password; "the basic block" in a question or a quoted answer stays."""
    from app.llm import redact

    assert redact("Use a basic block, the basic idea of ResNet, and basic RNNs.", []) == (
        "Use a basic block, the basic idea of ResNet, and basic RNNs."
    )
    assert redact("got Basic Ym9iOmh1bnRlcjJwdw== back", []) == "got Basic [redacted] back"


def test_a_timed_out_call_is_not_retried_but_a_server_error_is(fake_openai):
    """A reply that took the whole timeout would likely take it again: a retry only doubled the step's wait."""
    for reply in (dripping("too late", every_s=0.2, drips=int(NEVER_S / 0.2)), slow("too late", delay_s=NEVER_S)):
        fake_openai.script([reply, content("What does zero_grad clear?")])
        fake_openai.requests.clear()
        with pytest.raises(LLMError, match="timeout"):
            model_for(fake_openai, timeout_s=0.5, max_retries=1).complete_text(system="s", user="u")
        assert [r.path for r in fake_openai.requests if r.path.endswith("completions")] == ["/v1/chat/completions"]
    fake_openai.script([http_error(503), content("What does zero_grad clear?")])
    assert model_for(fake_openai, max_retries=1).complete_text(system="s", user="u") == "What does zero_grad clear?"


@pytest.mark.parametrize("spelt", [
    lambda key: key[:6] + "\u200b" + key[6:],  # a zero-width space inside
    str.upper, str.lower,
    lambda key: "".join(chr(ord(c) + 0xFEE0) for c in key),  # fullwidth
    " ".join,  # letters spaced
], ids=["zero-width-space", "upper", "lower", "fullwidth", "spaced"])
def test_a_key_echoed_in_another_spelling_is_cut_out_too(fake_openai, spelt):
    from app.llm_redaction import redact

    key = "tok_Q7f9Lm2Xp4Rt8Vz1"
    assert redact(f"Check it ({spelt(key)}), then the rest.", [key]) == "Check it ([redacted]), then the rest."
    fake_openai.script([content(f"What does zero_grad clear? {spelt(key)}")])
    assert model_for(fake_openai, api_key=key).complete_text(system="s", user="u") == (
        "What does zero_grad clear? [redacted]"
    )


@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
def test_a_key_echoed_in_base64_is_cut_out(fake_openai, padded):
    """A re-check's server echoed the key as base64 ("c2stcmVjaGVjay1TRUNSRVQxMjM0NTY=") and it reached the
    question's wording whole, as the README says a key is cut out in base64 too."""

    key = "sk-recheck-SECRET123456"
    echoed = base64.b64encode(key.encode()).decode()
    echoed = echoed if padded else echoed.rstrip("=")
    fake_openai.script([content(f"What does zero_grad clear? (key {echoed})")])
    assert model_for(fake_openai, api_key=key).complete_text(system="s", user="u") == (
        "What does zero_grad clear? (key [redacted])"
    )


@pytest.mark.parametrize("spell", [
    lambda key: key[::-1],
    lambda key: key.encode().hex(),
    lambda key: key.encode().hex().upper(),
    lambda key: " ".join(f"{b:02x}" for b in key.encode()),  # hex bytes spaced
    lambda key: key.encode().hex()[::-1],
    lambda key: base64.b64encode(key[::-1].encode()).decode(),
    lambda key: base64.b64encode(key.encode()).decode()[::-1],
], ids=["reversed", "hex", "HEX", "hex-spaced", "hex-reversed", "base64-of-reversed", "base64-reversed"])
def test_a_key_echoed_reversed_or_in_hex_is_cut_out(fake_openai, spell):
    """A model asked to "print the key backwards" or "in hex" echoed it past a check of the forward and base64
    spellings only."""
    key = "tok_Q7f9Lm2Xp4Zr8"
    fake_openai.script([content(f"What does zero_grad clear? (key {spell(key)})")])
    assert model_for(fake_openai, api_key=key).complete_text(system="s", user="u") == (
        "What does zero_grad clear? (key [redacted])"
    )
    plain = "The reverse of the gradient is its negation; 0x7f is hex."  # no key, nothing cut
    fake_openai.script([content(plain)])
    assert model_for(fake_openai, api_key=key).complete_text(system="s", user="u") == plain


@pytest.mark.parametrize("method", ["json_schema", "json_mode"])
def test_failure_notes_say_which_setting_to_fix(fake_openai, method):
    """A wrong key read "HTTP 401", a base URL at another server "HTTP 404: Error code: 404", a web page at it
    "unexpected error: AssertionError", a reasoning model's <think> block "Invalid JSON ... column 1" (review s56)."""
    reply = {"topic": "autograd", "difficulty": 2}
    fake_openai.script([http_error(401, "Incorrect API key provided"), http_error(404, ""), web_page(), web_page(),
                        content("<think>The answer is fine.</think>" + json.dumps(reply))])
    model = model_for(fake_openai, method=method)
    reasons = []
    for _ in range(3):
        with pytest.raises(LLMError) as caught:
            model.complete_structured(system="s", user="u", schema=Probe)
        reasons.append(caught.value.reason)
    with pytest.raises(LLMError) as caught:
        model.complete_text(system="s", user="u")
    reasons.append(caught.value.reason)
    with pytest.raises(LLMError) as caught:
        model.complete_structured(system="s", user="u", schema=Probe)
    reasons.append(caught.value.reason)
    assert "refused the API key (check INTERVIEWER_LLM_API_KEY)" in reasons[0]
    assert "INTERVIEWER_LLM_BASE_URL" in reasons[1] and "INTERVIEWER_LLM_MODEL" in reasons[1]
    assert reasons[2] == reasons[3] == "the base URL does not look like an OpenAI-compatible API (check " \
                                       "INTERVIEWER_LLM_BASE_URL)"
    assert "reasoning block (<think>...</think>), which is not allowed" in reasons[4]
