-- User controls (PostgreSQL): what users asked for, and the work it leaves for the next run.
-- ARCHITECTURE.md, "User controls", is the contract.

-- Every control (pause, resume, clear, erase, message deletion, forget …): who asked, about whom,
-- where, when and how many rows it touched. Never a text: an erase leaves this row only, with
-- the subject as a one-way hash (subject_key), so it holds no personal data.
CREATE TABLE control_actions (
    id            BIGSERIAL PRIMARY KEY,
    action        TEXT NOT NULL,
    subject_key   TEXT NOT NULL,               -- the user id as text; after an erase, "erased:<hash>"
    requested_by  BIGINT,                      -- NULL when the subject asked to be erased
    scope         TEXT,                        -- NULL: everywhere
    at            TIMESTAMPTZ NOT NULL,
    rows_affected INTEGER NOT NULL DEFAULT 0,
    detail        JSONB NOT NULL                -- JSON: counts per table, never a text
);
CREATE INDEX control_actions_subject ON control_actions (subject_key, at);

-- Messages of a user that are not summarised or mined for facts: those in the scope's partition
-- (scope "*": every partition) with ts in [from_ts, until_ts) — a pause from when it was asked
-- until a resume; a clear everything before it. Summaries of days they fall in are recomputed.
CREATE TABLE memory_exclusions (
    id            BIGSERIAL PRIMARY KEY,
    user_id       BIGINT NOT NULL,
    scope         TEXT NOT NULL,               -- a partition, or "*"
    kind          TEXT NOT NULL CHECK (kind IN ('pause', 'clear')),
    from_ts       TIMESTAMPTZ,                        -- NULL: from the beginning
    until_ts      TIMESTAMPTZ,                        -- NULL: until further notice
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX memory_exclusions_user ON memory_exclusions (user_id);

-- Partition-days the next run recomputes whatever their age (a deleted message, a clear): the
-- run takes them with its own days and removes them when done.
CREATE TABLE recompute_queue (
    partition  TEXT NOT NULL,
    day        DATE NOT NULL,
    reason     TEXT NOT NULL,
    queued_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (partition, day)
);
