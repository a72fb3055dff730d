"""A fake Gemini REST server for tests and benchmarks.

A real HTTP server on 127.0.0.1 (random free port), standard library only, run in a
background thread, driven by the *real* google-genai client::

    from google import genai
    from google.genai import types
    from tests.fakes.gemini_server import FakeGemini, ok, status

    with FakeGemini() as server:
        server.script(ok('{"summary": "hi"}'), status(429, "quota", retry_delay="2s"))
        client = genai.Client(api_key="test-key", http_options=types.HttpOptions(
            base_url=server.url, api_version="v1"))     # or "v1beta"; timeout=ms
        ...
        client.close()                                  # and `await client.aio.aclose()`

Wire format (read from google-genai 3.3 and verified against it):

* ``POST /{api_version}/models/{model}:generateContent`` and ``...:countTokens``.
  3.x defaults to ``v1`` (``GOOGLE_GENAI_API_VERSION`` env or ``HttpOptions(api_version=)``
  change it); the client prefixes ``models/`` itself, so ``model="gemma-3-27b-it"`` and
  ``model="models/gemma-3-27b-it"`` give the same path. The server accepts any version
  segment (or none) and records it as ``RecordedRequest.api_version``.
* Headers: ``x-goog-api-key: <key>``, ``Content-Type: application/json``; with
  ``HttpOptions(timeout=ms)`` also ``X-Server-Timeout: ceil(seconds)``.
* Body: ``{"contents": [{"role": "user", "parts": [{"text": ...}]}],
  "systemInstruction": {"role": "user", "parts": [...]},
  "generationConfig": {"temperature": 0.0, "responseMimeType": "application/json",
  "responseSchema": {... OpenAPI-ish, "type": "OBJECT" ...} | "responseJsonSchema": {...}}}``.
* Errors: non-200 with ``{"error": {"code", "message", "status", "details": [...]}}``;
  4xx -> ``google.genai.errors.ClientError``, 5xx -> ``ServerError`` (``.code``, ``.status``,
  ``.message``, and ``.details`` = the whole parsed JSON, so
  ``exc.details["error"]["details"]`` holds the RetryInfo entry).

Token estimate (documented, deliberately crude): ``len(text) // 4 + 1`` for the prompt (all
text parts of ``contents`` joined, system instruction *not* included) and for the answer
text. Used for ``usageMetadata``, ``countTokens`` and the ``tpm_limit``.

Order of checks for ``generateContent``: route/API key -> Gemma strictness (400, does not
count toward rate limits, does not consume a scripted action) -> rate limits (429, recorded,
does not consume a scripted action) -> the next scripted action, else the responder.
``latency`` applies to every response (errors included) and to ``countTokens``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import re
import socket
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union
from urllib.parse import urlsplit

__all__ = [
    "Action",
    "FakeGemini",
    "FakeGeminiError",
    "RecordedRequest",
    "blocked",
    "delay",
    "estimate_tokens",
    "hang",
    "malformed",
    "ok",
    "raw",
    "respond_with",
    "status",
    "truncated",
]

# HTTP code -> google.rpc.Code name, as the real API reports them.
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_BATCH_RE = re.compile(r"^/(?:(?P<version>[^/]+)/)?batches/(?P<id>[^/:]+)(?::(?P<verb>[A-Za-z]+))?$")
_PATH_RE = re.compile(r"^/(?:(?P<version>[^/]+)/)?models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")


def estimate_tokens(text: str) -> int:
    """The fake's token estimate: ``len(text) // 4 + 1`` (roughly 4 characters a token)."""
    return len(text) // 4 + 1


class FakeGeminiError(AssertionError):
    """Raised on leaving ``FakeGemini`` when a responder raised while serving a request."""


# --------------------------------------------------------------------------- recording


@dataclasses.dataclass
class RecordedRequest:
    """One request as the server saw it. ``headers`` has lower-case keys."""

    path: str                       # e.g. "/v1/models/gemma-3-27b-it:generateContent"
    model: str                      # e.g. "gemma-3-27b-it" (without "models/")
    method: str                     # "generateContent", "countTokens", ...
    api_version: str | None         # "v1", "v1beta", ...
    headers: dict[str, str]
    body: Any                       # parsed JSON (None when the body was not JSON)
    time: float                     # time.monotonic() at arrival
    prompt_text: str                # text parts of `contents`, joined with "\n"
    system_text: str | None         # text parts of `systemInstruction`, or None
    index: int = 0                  # arrival order, 0-based
    body_bytes: int = 0             # size of the HTTP request body as sent (what the wire carries)
    status_code: int | None = None  # HTTP status the fake answered with (None: no answer yet)
    output_tokens: int = 0          # candidatesTokenCount of its answer (0: none)
    outcome: str | None = None      # "ok", "malformed", "truncated", "blocked", "status",
                                    # "raw", "rate_limited_rpm", "rate_limited_tpm",
                                    # "gemma_rejected", "bad_request", "responder_error"

    @property
    def generation_config(self) -> dict:
        body = self.body if isinstance(self.body, dict) else {}
        return body.get("generationConfig") or {}

    @property
    def prompt_tokens(self) -> int:
        return estimate_tokens(self.prompt_text)


def _texts(content: Any) -> list[str]:
    if not isinstance(content, dict):
        return []
    return [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]


# --------------------------------------------------------------------------- actions


class Action:
    """Base class of scripted per-request behaviours."""


@dataclasses.dataclass(frozen=True)
class _Ok(Action):
    text: str
    finish_reason: str = "STOP"
    outcome: str = "ok"


@dataclasses.dataclass(frozen=True)
class _RespondWith(Action):
    fn: Callable[[RecordedRequest], Union[str, Action]]


@dataclasses.dataclass(frozen=True)
class _Status(Action):
    code: int
    message: str
    retry_delay: str | None = None
    status_name: str | None = None
    extra_details: tuple = ()


@dataclasses.dataclass(frozen=True)
class _Wait(Action):
    seconds: float
    then: Action | None  # None: the responder
    kind: str            # "hang" or "delay"


@dataclasses.dataclass(frozen=True)
class _Blocked(Action):
    reason: str = "SAFETY"
    in_candidate: bool = False


@dataclasses.dataclass(frozen=True)
class _Raw(Action):
    body: bytes
    code: int = 200
    content_type: str = "application/json; charset=UTF-8"


def ok(text: str) -> Action:
    """A valid answer (finishReason STOP) whose text is ``text``."""
    return _Ok(text)


def respond_with(fn: Callable[[RecordedRequest], Union[str, Action]]) -> Action:
    """Answer with ``fn(request)``: a string (valid answer) or another action."""
    return _RespondWith(fn)


def status(code: int, message: str = "fake error", retry_delay: str | float | None = None, *,
           status_name: str | None = None) -> Action:
    """HTTP error ``code`` with Google's error JSON. ``status_name`` defaults from the code
    (429 -> RESOURCE_EXHAUSTED, 500 -> INTERNAL, 503 -> UNAVAILABLE, ...). ``retry_delay``
    ("2s" or a number of seconds) adds a ``google.rpc.RetryInfo`` detail."""
    if isinstance(retry_delay, (int, float)):
        retry_delay = f"{retry_delay:g}s"
    return _Status(code, message, retry_delay, status_name)


def hang(seconds: float, then_action: Action | str | None = None) -> Action:
    """Wait ``seconds`` (use more than the client timeout) before answering with
    ``then_action`` (default: the responder). Interrupted early by ``stop()``."""
    return _Wait(float(seconds), _coerce(then_action) if then_action is not None else None, "hang")


def delay(seconds: float, then_action: Action | str | None = None) -> Action:
    """Extra latency for one request, then ``then_action`` (default: the responder)."""
    return _Wait(float(seconds), _coerce(then_action) if then_action is not None else None, "delay")


def malformed(text: str = 'Sure! Here is the JSON you asked for:\n{"ok": tru') -> Action:
    """A well-formed 200 answer (finishReason STOP) whose *model text* is not valid JSON.
    For a broken HTTP body use ``raw(...)``."""
    return _Ok(text, "STOP", "malformed")


def truncated(text: str, keep: int | float | None = 0.5) -> Action:
    """A 200 answer with finishReason MAX_TOKENS and ``text`` cut short: ``keep`` is a
    fraction (float) or a number of characters (int) to keep; ``None`` sends ``text`` as is."""
    if isinstance(keep, float):
        text = text[: max(1, int(len(text) * keep))] if text else text
    elif isinstance(keep, int):
        text = text[:keep]
    return _Ok(text, "MAX_TOKENS", "truncated")


def blocked(reason: str = "SAFETY", *, in_candidate: bool = False) -> Action:
    """A 200 answer blocked for safety. Default: prompt blocked -> ``promptFeedback.blockReason``
    and no candidates (``response.candidates is None``, ``response.text is None``).
    ``in_candidate=True``: one candidate with ``finishReason`` = ``reason`` and no content."""
    return _Blocked(reason, in_candidate)


def raw(body: str | bytes, code: int = 200, content_type: str = "application/json; charset=UTF-8") -> Action:
    """Send ``body`` verbatim (e.g. a 200 whose HTTP body is not JSON at all)."""
    return _Raw(body.encode() if isinstance(body, str) else body, code, content_type)


def _coerce(action: Action | str) -> Action:
    if isinstance(action, str):
        return _Ok(action)
    if isinstance(action, Action):
        return action
    raise TypeError(f"not a FakeGemini action: {action!r}")


def _default_responder(request: RecordedRequest) -> str:
    return '{"ok": true}'


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True  # server_close() joins handler threads
    request_queue_size = 1024  # listen() backlog; the default 5 drops SYNs under bursts (1 s stalls)
    fake: "FakeGemini"

    def handle_error(self, request, client_address):
        # A client that gave up (timeout) closes its socket under us: not an error.
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) or self.fake._stopping.is_set():
            return
        self.fake.errors.append(exc)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real API
    disable_nagle_algorithm = True  # else Nagle + delayed ACK add ~40 ms per response
    server: _Server
    server_version = "FakeGemini/1.0"
    sys_version = ""

    def setup(self):
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def log_message(self, format, *args):  # noqa: A002 - silence access logs
        pass

    def do_POST(self):
        self.server.fake._handle(self, "POST")

    def do_GET(self):
        self.server.fake._handle(self, "GET")


class FakeGemini:
    """Fake Gemini API server. Context manager; see the module docstring.

    responder: ``callable(RecordedRequest) -> str | Action`` used for generateContent when
        the script queue is empty (default: answers ``'{"ok": true}'``).
    latency: seconds added before every response.
    rpm_limit / tpm_limit: per sliding ``rate_window`` (60 s) over *admitted* generateContent
        requests; exceeding them gives 429 RESOURCE_EXHAUSTED with RetryInfo.
    gemma_strict: reject ``systemInstruction`` and JSON mode for ``gemma-*`` models with 400.
    api_key: when set, other keys get 400 "API key not valid"; a missing key is always 403.
    """

    def __init__(self, responder: Callable[[RecordedRequest], Union[str, Action]] | None = None, *,
                 latency: float = 0.0, rpm_limit: int | None = None, tpm_limit: int | None = None,
                 gemma_strict: bool = True, rate_window: float = 60.0, api_key: str | None = None):
        self.responder = responder or _default_responder
        self.latency = latency
        self.rpm_limit = rpm_limit
        self.tpm_limit = tpm_limit
        self.gemma_strict = gemma_strict
        self.rate_window = rate_window
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []  # exceptions raised by responders / the server
        self._script: collections.deque[Action] = collections.deque()
        self._admitted: collections.deque[tuple[float, int]] = collections.deque()  # (time, tokens)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None
        self._answers = 0
        from .gemini_batches import FakeBatches  # the Batch API endpoints (batches/<id>, :batchGenerateContent)

        self._batches = FakeBatches(self)

    # ----------------------------------------------------------------- lifecycle

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("FakeGemini is not started")
        return self._url

    def start(self) -> "FakeGemini":
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        host, port = server.server_address[:2]
        self._url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"FakeGemini:{port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes hang()/delay()/latency waits
        server.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # unblock keep-alive handlers waiting for the next request
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "FakeGemini":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()
        if exc_type is None:
            self.check()

    def check(self) -> None:
        """Raise FakeGeminiError if a responder (or the server) raised while serving."""
        if self.errors:
            text = "\n".join("".join(traceback.format_exception(e)) for e in self.errors)
            raise FakeGeminiError(f"{len(self.errors)} error(s) inside FakeGemini:\n{text}")

    # ----------------------------------------------------------------- test API

    def script(self, *actions: Action | str) -> "FakeGemini":
        """Queue actions consumed in order by generateContent requests (a str means ok(str))."""
        coerced = [_coerce(a) for a in actions]
        with self._lock:
            self._script.extend(coerced)
        return self

    @property
    def pending_script(self) -> int:
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget recorded requests, the script, rate-limit state and errors."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self._admitted.clear()
            self.errors.clear()

    def calls(self, method: str = "generateContent") -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == method]

    def max_requests_in_window(self, seconds: float = 60.0, *, method: str = "generateContent",
                               include_rejected: bool = True) -> int:
        """Max number of ``method`` requests whose arrival times fall in any window of
        ``seconds`` (half-open: [t, t + seconds)). ``include_rejected=False`` counts only
        requests that were not refused with 429/400 by the fake's own limits."""
        with self._lock:
            times = sorted(r.time for r in self.requests if r.method == method and (
                include_rejected or r.outcome not in ("rate_limited_rpm", "rate_limited_tpm", "gemma_rejected")))
        best, lo = 0, 0
        for hi, t in enumerate(times):
            while t - times[lo] >= seconds:
                lo += 1
            best = max(best, hi - lo + 1)
        return best

    # ----------------------------------------------------------------- Batch API (gemini_batches.py)

    @property
    def batch_jobs(self) -> dict:
        """name -> FakeBatchJob (state, model, requests, responses) of every job created."""
        return self._batches.jobs

    def finish_batches(self, name: str | None = None) -> int:
        """Answer every inline request of the running job `name` (default: every running job) with
        the script and responder, as generateContent would, and mark it succeeded. Returns how many
        requests were answered."""
        return self._batches.finish(name)

    def fail_batches(self, name: str | None = None, state: str = "BATCH_STATE_FAILED") -> int:
        """End the running job(s) without answers: BATCH_STATE_FAILED, or e.g. BATCH_STATE_EXPIRED."""
        return self._batches.end(name, state)

    # ----------------------------------------------------------------- internals

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _handle(self, h: _Handler, http_method: str) -> None:
        arrival = time.monotonic()
        length = int(h.headers.get("Content-Length") or 0)
        raw_body = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw_body) if raw_body else {}
        except ValueError:
            body = None
        split = urlsplit(h.path)
        m = _PATH_RE.match(split.path)
        contents = body.get("contents") if isinstance(body, dict) else None
        prompt_text = "\n".join(t for c in (contents or []) for t in _texts(c))
        system = body.get("systemInstruction") if isinstance(body, dict) else None
        rec = RecordedRequest(
            path=h.path,
            model=m["model"] if m else "",
            method=m["method"] if m else "",
            api_version=m["version"] if m else None,
            headers={k.lower(): v for k, v in h.headers.items()},
            body=body,
            time=arrival,
            prompt_text=prompt_text,
            system_text="\n".join(_texts(system)) if system is not None else None,
            body_bytes=len(raw_body),
        )
        with self._lock:
            rec.index = len(self.requests)
            self.requests.append(rec)

        (code, payload), outcome = self._decide(rec, http_method)
        self._wait(self.latency)
        if self._stopping.is_set():
            h.close_connection = True
            return
        if isinstance(payload, bytes):
            data, ctype = payload, outcome[1]
            outcome = outcome[0]
        else:
            data, ctype = json.dumps(payload).encode(), "application/json; charset=UTF-8"
        rec.status_code, rec.outcome = code, outcome
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _decide(self, rec: RecordedRequest, http_method: str):
        """Returns (http code, JSON-able payload or bytes, outcome)."""
        batch_route = _BATCH_RE.match(urlsplit(rec.path).path)
        if batch_route is not None or rec.method == "batchGenerateContent":
            return self._batches.route(rec, http_method, batch_route)
        if http_method != "POST" or not rec.method:
            return _error(404, f"fake Gemini: no route for {http_method} {rec.path}"), "bad_request"
        key = rec.headers.get("x-goog-api-key")
        if not key:
            return _error(403, "Method doesn't allow unregistered callers (callers without established "
                               "identity). Please use API Key or other form of API consumer identity to "
                               "call this API."), "bad_request"
        if self.api_key is not None and key != self.api_key:
            return _error(400, "API key not valid. Please pass a valid API key."), "bad_request"
        if rec.body is None or not isinstance(rec.body, dict):
            return _error(400, "Invalid JSON payload received."), "bad_request"
        if rec.method == "countTokens":
            return (200, {"totalTokens": rec.prompt_tokens}), "ok"
        if rec.method != "generateContent":
            return _error(404, f"fake Gemini: method {rec.method} is not implemented"), "bad_request"

        if self.gemma_strict and rec.model.startswith("gemma-"):
            cfg = rec.generation_config
            if rec.body.get("systemInstruction") is not None:
                return _error(400, f"Developer instruction is not enabled for models/{rec.model}"), "gemma_rejected"
            if (cfg.get("responseMimeType") == "application/json" or cfg.get("responseSchema") is not None
                    or cfg.get("responseJsonSchema") is not None):
                return _error(400, f"JSON mode is not enabled for models/{rec.model}"), "gemma_rejected"

        limited = self._admit(rec)
        if limited is not None:
            return limited

        with self._lock:
            action: Action | None = self._script.popleft() if self._script else None
        return self._run(action, rec)

    def _admit(self, rec: RecordedRequest):
        tokens = rec.prompt_tokens
        now = rec.time
        with self._lock:
            while self._admitted and now - self._admitted[0][0] >= self.rate_window:
                self._admitted.popleft()
            if self.rpm_limit is not None and len(self._admitted) >= self.rpm_limit:
                frees_at = self._admitted[len(self._admitted) - self.rpm_limit][0] + self.rate_window
                return _quota_error(rec.model, "requests", self.rpm_limit, frees_at - now), "rate_limited_rpm"
            if self.tpm_limit is not None:
                used = sum(t for _, t in self._admitted)
                if used + tokens > self.tpm_limit:
                    if tokens > self.tpm_limit:
                        wait = self.rate_window
                    else:
                        wait, freed = 0.0, 0
                        for t_arr, t_tok in self._admitted:
                            freed += t_tok
                            if used - freed + tokens <= self.tpm_limit:
                                wait = t_arr + self.rate_window - now
                                break
                    return _quota_error(rec.model, "input_token_count", self.tpm_limit, wait), "rate_limited_tpm"
            self._admitted.append((now, tokens))
        return None

    def _run(self, action: Action | None, rec: RecordedRequest):
        for _ in range(100):  # responders may return actions that wrap actions
            if action is None:
                try:
                    action = _coerce(self.responder(rec))
                except Exception as exc:  # surfaced by check() / __exit__
                    self.errors.append(exc)
                    return _error(500, f"fake Gemini responder raised {exc!r}"), "responder_error"
            if isinstance(action, _RespondWith):
                try:
                    action = _coerce(action.fn(rec))
                except Exception as exc:
                    self.errors.append(exc)
                    return _error(500, f"fake Gemini responder raised {exc!r}"), "responder_error"
                continue
            if isinstance(action, _Wait):
                rec.outcome = action.kind  # visible while waiting; replaced once answered
                self._wait(action.seconds)
                action = action.then
                continue
            if isinstance(action, _Ok):
                answer = self._answer(rec, action.text, action.finish_reason)
                cut = answer["candidates"][0]["finishReason"] == "MAX_TOKENS" and action.finish_reason != "MAX_TOKENS"
                return (200, answer), "truncated" if cut else action.outcome  # cut at maxOutputTokens
            if isinstance(action, _Status):
                return _error(action.code, action.message, action.retry_delay, action.status_name), "status"
            if isinstance(action, _Blocked):
                return (200, self._blocked(rec, action)), "blocked"
            if isinstance(action, _Raw):
                return (action.code, action.body), ("raw", action.content_type)
            raise TypeError(f"unknown action {action!r}")
        raise RuntimeError("FakeGemini: responder recursion too deep")

    def _next_id(self) -> str:
        with self._lock:
            self._answers += 1
            return f"fake-{self._answers}"

    def _usage(self, rec: RecordedRequest, answer_text: str | None) -> dict:
        prompt = rec.prompt_tokens
        usage = {"promptTokenCount": prompt, "totalTokenCount": prompt,
                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
        if answer_text is not None:
            cand = estimate_tokens(answer_text)
            rec.output_tokens = cand
            usage["candidatesTokenCount"] = cand
            usage["totalTokenCount"] = prompt + cand
        return usage

    def _answer(self, rec: RecordedRequest, text: str, finish_reason: str) -> dict:
        # as Gemini does: an answer longer than the request's maxOutputTokens is cut there
        limit = rec.generation_config.get("maxOutputTokens")
        if limit and estimate_tokens(text) > limit:
            text, finish_reason = text[: limit * 4], "MAX_TOKENS"
        return {
            "candidates": [{
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": finish_reason,
                "index": 0,
            }],
            "usageMetadata": self._usage(rec, text),
            "modelVersion": rec.model,
            "responseId": self._next_id(),
        }

    def _blocked(self, rec: RecordedRequest, action: _Blocked) -> dict:
        ratings = [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}]
        if action.in_candidate:
            return {
                "candidates": [{"finishReason": action.reason, "index": 0, "safetyRatings": ratings}],
                "usageMetadata": self._usage(rec, None),
                "modelVersion": rec.model,
                "responseId": self._next_id(),
            }
        return {
            "promptFeedback": {"blockReason": action.reason, "safetyRatings": ratings},
            "usageMetadata": self._usage(rec, None),
            "modelVersion": rec.model,
            "responseId": self._next_id(),
        }


def _error(code: int, message: str, retry_delay: str | None = None, status_name: str | None = None,
           details: list | None = None) -> tuple[int, dict]:
    err: dict[str, Any] = {"code": code, "message": message,
                           "status": status_name or _STATUS_NAMES.get(code, "UNKNOWN")}
    details = list(details or [])
    if retry_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
    if details:
        err["details"] = details
    return code, {"error": err}


def _quota_error(model: str, what: str, limit: int, wait: float) -> tuple[int, dict]:
    seconds = max(1, math.ceil(wait))
    if what == "requests":
        metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
        quota_id = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    else:
        metric = "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count"
        quota_id = "GenerateContentInputTokensPerModelPerMinute-FreeTier"
    message = (f"You exceeded your current quota, please check your plan and billing details. "
               f"* Quota exceeded for metric: {metric}, limit: {limit}, model: {model}\n"
               f"Please retry in {seconds}s.")
    details = [{
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": metric, "quotaId": quota_id,
                        "quotaDimensions": {"location": "global", "model": model},
                        "quotaValue": str(limit)}],
    }]
    return _error(429, message, f"{seconds}s", details=details)
