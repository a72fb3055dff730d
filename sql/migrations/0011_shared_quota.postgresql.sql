-- One LLM quota shared by every process on the database (PostgreSQL; issue 16):
-- pipeline/llm/shared_limiter.py counts the configured per-model limits here, under
-- `SELECT … FOR UPDATE` of the model's row, with the rule of pipeline/llm/limiter.py: a request
-- counts from when it is sent until one window after its answer arrived.

-- One row per model: what holds every request to it (a 429's retry delay) and its daily count.
CREATE TABLE llm_quota_models (
    model          TEXT PRIMARY KEY,
    blocked_until  TIMESTAMPTZ,                 -- a 429 asked for a pause until then
    day            DATE,                        -- the UTC day day_requests counts
    day_requests   INTEGER NOT NULL DEFAULT 0
);

-- Requests in the window: in flight (held_until NULL) or answered and counted until held_until.
-- A process that dies with a request in flight leaves its row: it stops counting at
-- sent_at + the request timeout + one window (the server has seen it by then, if ever).
CREATE TABLE llm_quota_slots (
    id          BIGSERIAL PRIMARY KEY,
    model       TEXT NOT NULL REFERENCES llm_quota_models (model),
    tokens      INTEGER NOT NULL,
    sent_at     TIMESTAMPTZ NOT NULL,
    held_until  TIMESTAMPTZ,
    holder      TEXT NOT NULL                   -- host:pid, for `mempipe status` and debugging
);
CREATE INDEX llm_quota_slots_model ON llm_quota_slots (model, held_until);
