-- `mempipe serve` state, read by `mempipe status` (PostgreSQL).
-- The scheduler's job store is in memory: what must survive a restart lives here.

-- One row per scheduled job (refresh, rollover:<timezone>, retention).
CREATE TABLE scheduler_state (
    job_id           TEXT PRIMARY KEY,
    last_started_at  TIMESTAMPTZ,
    last_finished_at TIMESTAMPTZ,
    last_outcome     TEXT CHECK (last_outcome IN ('running', 'ok', 'failed', 'cancelled')),
    last_error       TEXT,
    last_ok_at       TIMESTAMPTZ,               -- start of the last run that ended ok: covers every earlier fire
    last_run_id      BIGINT,                    -- its pipeline_runs row, when it made one
    last_report      JSONB,                     -- partitions, calls, tokens, duration, rows deleted
    next_run_at      TIMESTAMPTZ                -- as scheduled by the leader
);

-- Who leads (informational: the lock itself is a session advisory lock).
CREATE TABLE scheduler_leader (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    holder       TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    host         TEXT NOT NULL,
    since        TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    released_at  TIMESTAMPTZ                    -- set on a clean shutdown
);
