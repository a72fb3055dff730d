-- `mempipe serve` state, read by `mempipe status` (SQLite). Times are ISO-8601 UTC text.
-- The scheduler's job store is in memory: what must survive a restart lives here.

-- One row per scheduled job (refresh, rollover:<timezone>, retention).
CREATE TABLE scheduler_state (
    job_id           TEXT PRIMARY KEY,
    last_started_at  TEXT,
    last_finished_at TEXT,
    last_outcome     TEXT CHECK (last_outcome IN ('running', 'ok', 'failed', 'cancelled')),
    last_error       TEXT,
    last_ok_at       TEXT,                      -- start of the last run that ended ok: covers every earlier fire
    last_run_id      INTEGER,                   -- its pipeline_runs row, when it made one
    last_report      TEXT,                      -- JSON: partitions, calls, tokens, duration, rows deleted
    next_run_at      TEXT                       -- as scheduled by the leader
);

-- Who leads (informational: the lock itself is a file lock next to the database).
CREATE TABLE scheduler_leader (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    holder       TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    host         TEXT NOT NULL,
    since        TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    released_at  TEXT                           -- set on a clean shutdown
);
