"""The fake Gemini server's Batch API (tests/fakes/README.md, "Batch API"), as google-genai 3.3
sends and reads it (google/genai/batches.py, Gemini Developer API):

* create: ``POST /{version}/models/{model}:batchGenerateContent`` with ``{"batch": {"displayName",
  "inputConfig": {"requests": {"requests": [{"request": {"model", "contents", "systemInstruction",
  "generationConfig"}, "metadata": {...}}]}}}}`` -> an Operation ``{"name": "batches/<id>",
  "metadata": {"@type": ...GenerateContentBatch, "model", "displayName", "state":
  "BATCH_STATE_PENDING", "createTime", ...}}`` (the client reads ``name`` and ``metadata.*``).
* get: ``GET /{version}/batches/<id>`` -> the same; a succeeded job adds ``metadata.output
  .inlinedResponses.inlinedResponses``: one ``{"response": <GenerateContentResponse>, "metadata"}``
  or ``{"error": {"code", "message"}, "metadata"}`` per request, in request order.
* cancel: ``POST /{version}/batches/<id>:cancel`` -> ``{}``; the job is then BATCH_STATE_CANCELLED.

A job stays BATCH_STATE_PENDING until the test says otherwise: ``server.finish_batches()`` answers
each inline request with the script and responder exactly as generateContent would (recorded in
``server.requests`` with ``method == "inline"``), ``server.fail_batches(state=...)`` ends it
without answers (BATCH_STATE_FAILED, BATCH_STATE_EXPIRED, ...).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import time
from typing import Any

from . import gemini_server as g


@dataclasses.dataclass
class FakeBatchJob:
    name: str                       # "batches/fake-batch-1"
    model: str                      # without "models/"
    display_name: str | None
    requests: list[dict]            # the inline requests as sent ({"request": ..., "metadata": ...})
    api_version: str | None         # of the create call
    state: str = "BATCH_STATE_PENDING"
    responses: list[dict] | None = None
    created: str = dataclasses.field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat())

    def as_json(self) -> dict:
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "model": f"models/{self.model}", "displayName": self.display_name, "state": self.state,
            "createTime": self.created, "batchStats": {"requestCount": str(len(self.requests))},
        }
        if self.responses is not None:
            meta["output"] = {"inlinedResponses": {"inlinedResponses": self.responses}}
        out = {"name": self.name, "metadata": meta}
        if self.state not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
            out["done"] = True
        return out


class FakeBatches:
    def __init__(self, fake: "g.FakeGemini"):
        self.fake = fake
        self.jobs: dict[str, FakeBatchJob] = {}
        self._ids = itertools.count(1)

    # ----------------------------------------------------------------- HTTP

    def route(self, rec: "g.RecordedRequest", http_method: str, match) -> tuple:
        if not rec.headers.get("x-goog-api-key"):
            return g._error(403, "Method doesn't allow unregistered callers."), "bad_request"
        if self.fake.api_key is not None and rec.headers["x-goog-api-key"] != self.fake.api_key:
            return g._error(400, "API key not valid. Please pass a valid API key."), "bad_request"
        if match is None:  # models/<model>:batchGenerateContent
            if http_method != "POST" or not isinstance(rec.body, dict):
                return g._error(400, "Invalid JSON payload received."), "bad_request"
            return self._create(rec)
        rec.method = f"batches.{match['verb'] or http_method.lower()}"
        rec.api_version = match["version"]
        with self.fake._lock:
            job = self.jobs.get(f"batches/{match['id']}")
        if job is None:
            return g._error(404, f"Batch batches/{match['id']} not found."), "bad_request"
        if http_method == "GET" and match["verb"] is None:
            return (200, job.as_json()), "ok"
        if http_method == "POST" and match["verb"] == "cancel":
            with self.fake._lock:
                if job.state in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                    job.state = "BATCH_STATE_CANCELLED"
            return (200, {}), "ok"
        return g._error(404, f"fake Gemini: no route for {http_method} {rec.path}"), "bad_request"

    def _create(self, rec: "g.RecordedRequest") -> tuple:
        batch = rec.body.get("batch") or {}
        requests = (((batch.get("inputConfig") or {}).get("requests") or {}).get("requests")) or []
        if not requests:
            return g._error(400, "batch.inputConfig.requests must not be empty"), "bad_request"
        job = FakeBatchJob(f"batches/fake-batch-{next(self._ids)}", rec.model, batch.get("displayName"),
                           list(requests), rec.api_version)
        with self.fake._lock:
            self.jobs[job.name] = job
        return (200, job.as_json()), "ok"

    # ----------------------------------------------------------------- test controls

    def _running(self, name: str | None) -> list[FakeBatchJob]:
        with self.fake._lock:
            return [j for j in self.jobs.values() if (name is None or j.name == name)
                    and j.state in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING")]

    def finish(self, name: str | None) -> int:
        answered = 0
        for job in self._running(name):
            job.responses = [self._answer(job, item) for item in job.requests]
            answered += len(job.responses)
            job.state = "BATCH_STATE_SUCCEEDED"
        return answered

    def end(self, name: str | None, state: str) -> int:
        jobs = self._running(name)
        for job in jobs:
            job.state = state
        return len(jobs)

    def _answer(self, job: FakeBatchJob, item: dict) -> dict:
        """One inline request answered like a generateContent request (script, then responder)."""
        body = item.get("request") or {}
        system = body.get("systemInstruction")
        rec = g.RecordedRequest(
            path=f"/{job.name}", model=str(body.get("model") or job.model).removeprefix("models/"), method="inline",
            api_version=job.api_version, headers={}, body=body, time=time.monotonic(),
            prompt_text="\n".join(t for c in body.get("contents") or [] for t in g._texts(c)),
            system_text="\n".join(g._texts(system)) if system is not None else None)
        with self.fake._lock:
            rec.index = len(self.fake.requests)
            self.fake.requests.append(rec)
            action = self.fake._script.popleft() if self.fake._script else None
        (code, payload), outcome = self.fake._run(action, rec)
        rec.status_code, rec.outcome = code, outcome if isinstance(outcome, str) else outcome[0]
        meta = {"metadata": item["metadata"]} if item.get("metadata") else {}
        if code == 200 and isinstance(payload, dict):
            return {"response": payload, **meta}
        error = payload.get("error", {}) if isinstance(payload, dict) else {"code": code, "message": "not JSON"}
        return {"error": {"code": error.get("code", code), "message": error.get("message", "")}, **meta}
