-- In-chat memory requests (issue 17; README, "In-chat memory requests"): "remember that I'm …",
-- "forget what I said about …", found by the daily stage and applied once through the controls
-- of pipeline/controls/facts.py. One row per request message: detected (pending, with what to
-- remember or forget), then applied or refused — the text is then cleared (a forgotten topic is
-- kept in forgotten_facts alone). A request seen again (a day recomputed) is never applied twice.
CREATE TABLE chat_requests (
    channel_id    INTEGER NOT NULL,
    message_id    INTEGER NOT NULL,
    user_id       INTEGER NOT NULL,
    partition     TEXT NOT NULL,
    day           TEXT NOT NULL,
    ts            TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('remember', 'forget')),
    text          TEXT,                        -- NULL once handled
    status        TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'refused')),
    reason        TEXT,                        -- why refused (other_person, unsafe)
    detected_at   TEXT NOT NULL,
    handled_at    TEXT,
    PRIMARY KEY (channel_id, message_id)
);
CREATE INDEX chat_requests_pending ON chat_requests (status, ts);

-- Counted per run (pipeline_runs; mempipe runs): requests applied by kind, refused by reason,
-- and extracted facts dropped because they rest on a request message.
ALTER TABLE pipeline_runs ADD COLUMN requests_remembered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN requests_forgotten INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN requests_refused_other_person INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN requests_refused_unsafe INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_request INTEGER NOT NULL DEFAULT 0;
