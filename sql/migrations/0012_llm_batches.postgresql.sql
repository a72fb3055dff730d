-- Gemini Batch mode (gemini.batch; issue 16 item 3; pipeline/llm/batch.py). A request is
-- content-addressed: its key hashes everything the model sees, so an answer is found again by
-- asking the same question, and is validated and used by the code an interactive answer goes
-- through. These rows hold chat text (prompts) and summaries (answers): user erase, clear and
-- forget delete every one (they are recomputed); a used one is deleted when a run ends with
-- nothing deferred (the night is done; until then a forced run may ask for it again).

-- One request: pending (recorded by a run, not yet sent), submitted (in a job), answered
-- (the job's answer is here) or failed (its job failed, expired or was given up: the next run
-- sends it interactively).
CREATE TABLE llm_batch_requests (
    request_key    TEXT PRIMARY KEY,
    model          TEXT NOT NULL,
    request        JSONB NOT NULL,              -- prompt, system text, schema name, max_output_tokens
    state          TEXT NOT NULL CHECK (state IN ('pending', 'submitted', 'answered', 'failed')),
    job_name       TEXT,                        -- batches/<id> once submitted
    answer         TEXT,                        -- the model's text (answered)
    answer_error   TEXT,                        -- why the answer cannot be used (blocked, truncated, an error)
    answered_by    TEXT,                        -- 'batch', or 'interactive': its job failed or its answer
                                                -- was unusable, and the interactive answer is kept for the
                                                -- item's next round (a chunked day waits for its reduce)
    prompt_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    used_at        TIMESTAMPTZ                         -- an item's row was made with it
);
CREATE INDEX llm_batch_requests_state ON llm_batch_requests (state, model);
CREATE INDEX llm_batch_requests_job ON llm_batch_requests (job_name);

-- One submitted job, and the run that submitted it (serve's poll starts it again once the
-- answers are in). state: running, succeeded, failed, cancelled, expired, timed_out.
CREATE TABLE llm_batch_jobs (
    name          TEXT PRIMARY KEY,
    model         TEXT NOT NULL,
    state         TEXT NOT NULL,
    requests      INTEGER NOT NULL,
    submitted_at  TIMESTAMPTZ NOT NULL,
    checked_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ,
    error         TEXT,
    run_kind      TEXT NOT NULL,
    date_from     DATE,
    date_to       DATE,
    guild_id      BIGINT,
    rerun_at      TIMESTAMPTZ                   -- when serve started the run again after collecting
);
CREATE INDEX llm_batch_jobs_state ON llm_batch_jobs (state);

-- Items that waited for a batch job's answer (nothing written, not an error; a later run makes
-- them). They are items like the others, so 0010's sum becomes
--   partition_days + historical_items + context_items
--     = summarized + passed_* + errors + deferred
ALTER TABLE pipeline_runs ADD COLUMN deferred INTEGER NOT NULL DEFAULT 0;
