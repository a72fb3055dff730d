"""The fake Gemini server, exercised through the real google-genai client (no patching)."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time

import httpx2
import pydantic
import pytest
from google import genai
from google.genai import errors, types

from tests.fakes.gemini_server import (
    FakeGemini,
    FakeGeminiError,
    RecordedRequest,
    blocked,
    delay,
    hang,
    malformed,
    ok,
    raw,
    respond_with,
    status,
    truncated,
)

API_KEY = "test-key"
FLASH = "gemini-2.5-flash"
GEMMA = "gemma-3-27b-it"


@pytest.fixture
def gemini():
    with FakeGemini() as server:
        yield server


def make_client(server: FakeGemini, *, api_version: str = "v1", timeout_ms: int | None = None,
                **http_options) -> genai.Client:
    return genai.Client(api_key=API_KEY, http_options=types.HttpOptions(
        base_url=server.url, api_version=api_version, timeout=timeout_ms, **http_options))


def agenerate(server: FakeGemini, contents="hello world", *, model: str = FLASH, config=None,
              api_version: str = "v1", timeout_ms: int | None = None, **http_options):
    """One call through the async API, on its own event loop; the client is closed after."""

    async def main():
        client = make_client(server, api_version=api_version, timeout_ms=timeout_ms, **http_options)
        try:
            return await client.aio.models.generate_content(model=model, contents=contents, config=config)
        finally:
            await client.aio.aclose()
            client.close()

    return asyncio.run(main())


# ----------------------------------------------------------------------------- happy path


def test_default_responder_round_trip_with_usage_metadata(gemini):
    response = agenerate(gemini, "hello world")  # 11 chars -> 11 // 4 + 1 = 3 tokens

    assert response.text == '{"ok": true}'
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    usage = response.usage_metadata
    assert usage.prompt_token_count == 3
    assert usage.candidates_token_count == len('{"ok": true}') // 4 + 1
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count
    assert response.model_version == FLASH


def test_requests_are_recorded_with_key_system_instruction_and_config(gemini):
    gemini.script(ok('{"a": 1}'))
    config = types.GenerateContentConfig(system_instruction="You summarise chats.", temperature=0,
                                         response_mime_type="application/json")
    response = agenerate(gemini, ["part one", "part two"], config=config, api_version="v1beta")

    assert json.loads(response.text) == {"a": 1}
    [req] = gemini.requests
    assert req.path == f"/v1beta/models/{FLASH}:generateContent"
    assert (req.api_version, req.model, req.method) == ("v1beta", FLASH, "generateContent")
    assert req.headers["x-goog-api-key"] == API_KEY
    assert req.system_text == "You summarise chats."
    assert req.prompt_text == "part one\npart two"
    assert req.body["generationConfig"] == {"temperature": 0.0, "responseMimeType": "application/json"}
    assert req.body["systemInstruction"] == {"role": "user", "parts": [{"text": "You summarise chats."}]}
    assert req.time <= time.monotonic()
    assert (req.status_code, req.outcome) == (200, "ok")


def test_sync_client_default_v1_and_count_tokens(gemini):
    gemini.script("plain text answer")  # a str in a script means ok(str)
    with genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=gemini.url)) as client:
        response = client.models.generate_content(model=FLASH, contents="hi")
        counted = client.models.count_tokens(model=GEMMA, contents="x" * 40)

    assert response.text == "plain text answer"
    assert counted.total_tokens == 40 // 4 + 1
    assert [r.path for r in gemini.requests] == [f"/v1/models/{FLASH}:generateContent",
                                                 f"/v1/models/{GEMMA}:countTokens"]
    assert gemini.requests[0].system_text is None


def test_response_schema_is_sent_and_parsed(gemini):
    class Summary(pydantic.BaseModel):
        summary: str

    gemini.script(respond_with(lambda req: json.dumps({"summary": req.prompt_text.upper()})))
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Summary)
    response = agenerate(gemini, "abc", config=config)

    assert response.parsed == Summary(summary="ABC")
    assert gemini.requests[0].generation_config["responseSchema"]["type"] == "OBJECT"


def test_script_then_responder_and_responder_may_return_actions():
    def responder(req: RecordedRequest):
        return status(503, "overloaded") if "fail" in req.prompt_text else f"echo:{req.prompt_text}"

    with FakeGemini(responder) as server:
        server.script(ok("first"), delay(0.05, ok("second")))
        assert agenerate(server, "a").text == "first"
        assert agenerate(server, "b").text == "second"
        assert server.pending_script == 0
        assert agenerate(server, "c").text == "echo:c"
        with pytest.raises(errors.ServerError) as exc_info:
            agenerate(server, "please fail")
    assert exc_info.value.code == 503 and exc_info.value.status == "UNAVAILABLE"


# ----------------------------------------------------------------------------- errors


def test_429_with_retry_delay_is_a_client_error_and_not_retried(gemini):
    gemini.script(status(429, "Resource has been exhausted", retry_delay="2s"))
    with pytest.raises(errors.ClientError) as exc_info:
        agenerate(gemini)

    exc = exc_info.value
    assert (exc.code, exc.status, exc.message) == (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted")
    assert exc.details["error"]["details"] == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]
    assert len(gemini.requests) == 1  # the client did not retry on its own


def test_500_is_a_server_error_and_not_retried(gemini):
    gemini.script(status(500, "An internal error has occurred"))
    with genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=gemini.url)) as client:
        assert client._api_client._http_options.retry_options is None  # retries off by default
        with pytest.raises(errors.ServerError) as exc_info:
            client.models.generate_content(model=FLASH, contents="hi")
    assert (exc_info.value.code, exc_info.value.status) == (500, "INTERNAL")
    assert len(gemini.requests) == 1


def test_client_retries_only_when_retry_options_are_set(gemini):
    gemini.script(status(503, "overloaded"), ok("second try"))
    retry = types.HttpRetryOptions(attempts=2, initial_delay=0.01, max_delay=0.01, jitter=0)
    response = agenerate(gemini, retry_options=retry)
    assert response.text == "second try"
    assert [r.status_code for r in gemini.requests] == [503, 200]


def test_hang_past_client_timeout_raises_httpx2_read_timeout(gemini):
    gemini.script(hang(2.0))
    started = time.monotonic()
    with pytest.raises(httpx2.ReadTimeout):  # not a google.genai.errors.APIError
        agenerate(gemini, timeout_ms=300)
    assert time.monotonic() - started < 1.5
    [req] = gemini.requests
    assert req.headers["x-server-timeout"] == "1"  # ceil(0.3 s)
    assert (req.outcome, req.status_code) == ("hang", None)  # still hanging; stop() cuts it short


def test_malformed_and_max_tokens_answers(gemini):
    gemini.script(malformed(), truncated('{"summary": "a long summary"}'))

    bad = agenerate(gemini)
    assert bad.candidates[0].finish_reason == types.FinishReason.STOP
    with pytest.raises(ValueError):
        json.loads(bad.text)

    cut = agenerate(gemini)
    assert cut.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert cut.text == '{"summary": "a'  # half of the 29 characters
    with pytest.raises(ValueError):
        json.loads(cut.text)
    assert [r.outcome for r in gemini.requests] == ["malformed", "truncated"]


def test_non_json_http_body_surfaces_as_json_decode_error(gemini):
    gemini.script(raw("<html>upstream proxy error</html>"))
    with pytest.raises(json.JSONDecodeError):
        agenerate(gemini)


def test_blocked_prompt_and_blocked_candidate(gemini):
    gemini.script(blocked(), blocked(in_candidate=True))

    prompt_blocked = agenerate(gemini)
    assert prompt_blocked.candidates is None and prompt_blocked.text is None
    assert prompt_blocked.prompt_feedback.block_reason == types.BlockedReason.SAFETY

    candidate_blocked = agenerate(gemini)
    assert candidate_blocked.text is None
    assert candidate_blocked.candidates[0].finish_reason == types.FinishReason.SAFETY


def test_responder_exception_becomes_500_and_fails_the_context():
    def broken(req):
        raise KeyError("no such day")

    server = FakeGemini(broken)
    with pytest.raises(FakeGeminiError, match="no such day"):
        with server:
            with pytest.raises(errors.ServerError):
                agenerate(server)
    assert server.requests[0].outcome == "responder_error"


# ----------------------------------------------------------------------------- gemma


@pytest.mark.parametrize("config, message", [
    (types.GenerateContentConfig(system_instruction="Be brief."), "Developer instruction is not enabled"),
    (types.GenerateContentConfig(response_mime_type="application/json"), "JSON mode is not enabled"),
    (types.GenerateContentConfig(response_json_schema={"type": "object"}), "JSON mode is not enabled"),
])
def test_gemma_strict_rejects_system_instruction_and_json_mode(gemini, config, message):
    gemini.script(ok("never used"))
    with pytest.raises(errors.ClientError) as exc_info:
        agenerate(gemini, model=GEMMA, config=config)
    exc = exc_info.value
    assert (exc.code, exc.status) == (400, "INVALID_ARGUMENT")
    assert exc.message == f"{message} for models/{GEMMA}"
    assert gemini.pending_script == 1  # a rejected request consumes no scripted action
    assert gemini.requests[0].outcome == "gemma_rejected"


def test_gemma_accepts_instructions_in_the_user_turn(gemini):
    prompt = "Instructions: answer in JSON only.\n\nChat log: ..."
    response = agenerate(gemini, prompt, model=f"models/{GEMMA}",
                         config=types.GenerateContentConfig(temperature=0.2))
    assert response.text == '{"ok": true}'
    assert gemini.requests[0].model == GEMMA


def test_gemma_strict_can_be_turned_off():
    with FakeGemini(gemma_strict=False) as server:
        response = agenerate(server, model=GEMMA,
                             config=types.GenerateContentConfig(system_instruction="x",
                                                                response_mime_type="application/json"))
    assert response.text == '{"ok": true}'


# ----------------------------------------------------------------------------- rate limits


def test_rpm_limit_returns_429_with_retry_delay_and_window_counts():
    with FakeGemini(rpm_limit=3) as server:
        async def main():
            client = make_client(server)
            outcomes = []
            try:
                for i in range(5):
                    try:
                        await client.aio.models.generate_content(model=GEMMA, contents=f"msg {i}")
                        outcomes.append("ok")
                    except errors.ClientError as exc:
                        outcomes.append(exc)
            finally:
                await client.aio.aclose()
                client.close()
            return outcomes

        outcomes = asyncio.run(main())

    assert outcomes[:3] == ["ok"] * 3
    for exc in outcomes[3:]:
        assert (exc.code, exc.status) == (429, "RESOURCE_EXHAUSTED")
        details = exc.details["error"]["details"]
        assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "60s"} in details
        assert details[0]["violations"][0]["quotaValue"] == "3"
    assert [r.outcome for r in server.requests] == ["ok"] * 3 + ["rate_limited_rpm"] * 2
    assert server.max_requests_in_window(60) == 5
    assert server.max_requests_in_window(60, include_rejected=False) == 3


def test_rpm_window_slides():
    # a 1 s window: a loaded machine must not let the window slide between the first two requests
    with FakeGemini(rpm_limit=1, rate_window=1.0) as server:
        agenerate(server)
        with pytest.raises(errors.ClientError) as exc_info:
            agenerate(server)
        time.sleep(1.05)
        agenerate(server)
    assert exc_info.value.details["error"]["details"][-1]["retryDelay"] == "1s"  # ceil, at least 1 s
    assert [r.status_code for r in server.requests] == [200, 429, 200]


def test_tpm_limit_uses_the_prompt_token_estimate():
    with FakeGemini(tpm_limit=10) as server:
        agenerate(server, "x" * 20)  # 6 tokens
        with pytest.raises(errors.ClientError) as exc_info:
            agenerate(server, "x" * 20)  # 6 + 6 > 10
        agenerate(server, "x" * 8)  # 6 + 3 <= 10
    assert exc_info.value.code == 429
    assert [r.outcome for r in server.requests] == ["ok", "rate_limited_tpm", "ok"]


def test_max_requests_in_window_is_a_sliding_window():
    server = FakeGemini()
    for i, t in enumerate([0.0, 10.0, 59.9, 60.0, 61.0, 200.0]):
        server.requests.append(RecordedRequest(path="", model=FLASH, method="generateContent", api_version="v1",
                                               headers={}, body={}, time=t, prompt_text="", system_text=None,
                                               index=i))
    assert server.max_requests_in_window(60) == 4  # 10.0, 59.9, 60.0, 61.0
    assert server.max_requests_in_window(1) == 2  # 59.9, 60.0
    assert server.max_requests_in_window(60, method="countTokens") == 0


# ----------------------------------------------------------------------------- server behaviour


def test_concurrent_requests_are_served_in_parallel():
    # Every answer waits until all eight requests are inside the server at once: a server that
    # handled them one at a time would break the barrier (its timeout) instead of answering.
    inside = threading.Barrier(8, timeout=10)

    def answer_when_all_arrived(request):
        inside.wait()
        return "ok"

    with FakeGemini(answer_when_all_arrived) as server:
        async def main():
            client = make_client(server)
            try:
                return await asyncio.gather(*(client.aio.models.generate_content(model=FLASH, contents=str(i))
                                              for i in range(8)))
            finally:
                await client.aio.aclose()
                client.close()

        responses = asyncio.run(main())
    assert [r.text for r in responses] == ["ok"] * 8
    assert not server.errors and not inside.broken


def test_unknown_routes_are_404_client_errors(gemini):
    with genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=gemini.url)) as client:
        with pytest.raises(errors.ClientError) as exc_info:
            client.models.embed_content(model="text-embedding-004", contents="x")
    assert exc_info.value.code == 404
    assert gemini.requests[0].method == "batchEmbedContents"


def test_missing_api_key_is_403_and_wrong_key_is_400():
    with FakeGemini(api_key="right") as server:
        host, port = server.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            conn.request("POST", f"/v1/models/{FLASH}:generateContent", body=b'{"contents": []}',
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = json.loads(resp.read())
        finally:
            conn.close()
        with genai.Client(api_key="wrong", http_options=types.HttpOptions(base_url=server.url)) as client:
            with pytest.raises(errors.ClientError) as exc_info:
                client.models.generate_content(model=FLASH, contents="x")
    assert resp.status == 403 and payload["error"]["status"] == "PERMISSION_DENIED"
    assert exc_info.value.code == 400 and "API key not valid" in exc_info.value.message


def test_stop_is_prompt_with_a_hanging_request_and_idle_keepalive_connections():
    before = threading.active_count()
    server = FakeGemini().start()
    server.script(ok("kept alive"), hang(30.0))
    client = make_client(server, timeout_ms=200)
    try:
        client.models.generate_content(model=FLASH, contents="a")  # leaves a keep-alive connection
        with pytest.raises(httpx2.ReadTimeout):
            client.models.generate_content(model=FLASH, contents="b")
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 1.0
        assert threading.active_count() == before
    finally:
        client.close()
        server.stop()  # idempotent


# ----------------------------------------------------------------------------- canned answers


def _daily_prompt(*, fold: bool = False) -> str:
    """A daily (or fold) prompt as mempipe renders it, over a few messages of two speakers."""
    import datetime as dt

    from pipeline.config import load_settings
    from pipeline.summarize import ChatLine, PartitionDay
    from pipeline.summarize.facts_out import prepared
    from pipeline.summarize.llm import LLMSummarizer

    ts = dt.datetime(2026, 11, 5, 9, tzinfo=dt.timezone.utc)
    said = [(1, "I'm moving to Lisbon in March."), (2, "lol"), (1, "My favourite game is Celeste & co."),
            (2, "I have 2 cats. They are cute."), (1, "i like turtles"), (2, "My favorite editor is Vim, I love it.")]
    lines = tuple(ChatLine(1190000000000000000 + i, uid, {1: "Ana", 2: "Bo"}[uid], text, ts + dt.timedelta(minutes=i))
                  for i, (uid, text) in enumerate(said))
    pd = prepared(PartitionDay("guild:1", ts.date(), lines, {1: "Ana", 2: "Bo"}))
    summarizer = LLMSummarizer(load_settings(), client=None)
    if fold:
        return summarizer._render_fold(pd, pd.lines, {1: "Ana: was here."})
    return summarizer._render_daily(pd, pd.lines, None)


@pytest.mark.parametrize("fold", [False, True])
def test_canned_daily_and_fold_answers_carry_facts_that_validate(fold):
    from pipeline.summarize.schemas import DailyOut, FactOut
    from tests.fakes.responders import canned_answer

    with FakeGemini(canned_answer) as server:
        response = agenerate(server, _daily_prompt(fold=fold))
    raw = json.loads(response.text)
    for item in raw["summaries"]:
        for fact in item["facts"]:
            assert fact["sources"] and all(n.isdigit() for n in fact["sources"])  # the numbers the prompt shows
            # valid as given, nothing coerced but the numbers read as message handles
            assert FactOut.model_validate(fact).model_dump() == fact | {"sources": [f"m{n}" for n in fact["sources"]]}
    answer = DailyOut.model_validate_json(response.text)
    facts = {s.speaker: [(f.text, f.category, f.confidence, f.global_safe, f.sources, f.key) for f in s.facts]
             for s in answer.summaries}
    assert facts == {
        "p1": [("Is moving to Lisbon in March", "other", 0.8, False, ["m1"], None),
               ("Their favourite game is Celeste & co", "preference", 0.95, True, ["m3"], "favourite game")],
        "p2": [("Has 2 cats", "other", 0.8, False, ["m4"], None),
               ("Their favorite editor is Vim, I love it", "preference", 0.95, True, ["m6"], "favourite editor")]}


def test_canned_merge_and_forget_answers():
    from pipeline.summarize.prompts import render
    from pipeline.summarize.schemas import ForgetOut, MergeOut
    from tests.fakes.responders import canned_answer

    with FakeGemini(canned_answer) as server:
        merge = agenerate(server, render("merge", name="Ana", day1="Ana: today &", historical="Past week: x",
                                         target_chars=100))
        forget = agenerate(server, render("forget", facts=["Lives in Lisbon.", "Keeps BEES & wasps.", "keeps bees"],
                                          fact="keeps bees"))
    assert MergeOut.model_validate_json(merge.text).context == "Ana: today &\nPast week: x"
    assert "facts" not in json.loads(merge.text)
    assert ForgetOut.model_validate_json(forget.text).forget == [2, 3]


def test_an_answer_past_max_output_tokens_is_cut_there_as_gemini_does(gemini):
    long = "word " * 400  # ~500 tokens by the fake's estimate
    gemini.script(ok(long), ok(long))
    cut = agenerate(gemini, config=types.GenerateContentConfig(max_output_tokens=100))
    assert cut.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert len(cut.text) <= 400 and long.startswith(cut.text)
    whole = agenerate(gemini, config=types.GenerateContentConfig(max_output_tokens=1000))
    assert whole.text == long and whole.candidates[0].finish_reason == types.FinishReason.STOP
