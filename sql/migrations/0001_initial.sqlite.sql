-- mempipe initial schema (SQLite). Times are ISO-8601 UTC text ("2026-11-02T18:22:10.500000Z"),
-- days are local calendar dates as "YYYY-MM-DD", ids are 64-bit integers.

CREATE TABLE channels (
    channel_id  INTEGER PRIMARY KEY,            -- BIGINT: Discord snowflake
    guild_id    INTEGER,                        -- NULL for DMs
    visibility  TEXT NOT NULL CHECK (visibility IN ('public', 'restricted', 'dm')),
    partition   TEXT NOT NULL,
    is_group    INTEGER NOT NULL DEFAULT 0,     -- group DM: more than one human reader
    name        TEXT
);

CREATE TABLE chat_history (
    message_id  INTEGER PRIMARY KEY,
    guild_id    INTEGER,
    channel_id  INTEGER NOT NULL,
    visibility  TEXT NOT NULL CHECK (visibility IN ('public', 'restricted', 'dm')),
    partition   TEXT NOT NULL,
    user_id     INTEGER NOT NULL,
    text        TEXT NOT NULL,
    ts          TEXT NOT NULL,
    reply_to    INTEGER,
    edited_ts   TEXT,
    ingested_at TEXT NOT NULL
);
-- daily stage: one partition's messages in a UTC range (a local day)
CREATE INDEX chat_history_partition_ts ON chat_history (partition, ts);
-- retention and per-user lookups
CREATE INDEX chat_history_ts ON chat_history (ts);
CREATE INDEX chat_history_user_partition ON chat_history (user_id, partition);

CREATE TABLE members (
    guild_key    INTEGER NOT NULL,              -- guild id, 0 for DMs
    user_id      INTEGER NOT NULL,
    display_name TEXT NOT NULL,
    seen_at      TEXT NOT NULL,                 -- ts of the message the name came from
    PRIMARY KEY (guild_key, user_id)
);

CREATE TABLE partition_days (
    partition       TEXT NOT NULL,
    day             TEXT NOT NULL,
    input_hash      TEXT NOT NULL,
    message_count   INTEGER NOT NULL,
    user_count      INTEGER NOT NULL,
    summarizer      TEXT NOT NULL,
    degraded        INTEGER NOT NULL DEFAULT 0,
    degraded_reason TEXT,
    attempts        INTEGER NOT NULL DEFAULT 1,
    computed_at     TEXT NOT NULL,
    PRIMARY KEY (partition, day)
);

CREATE TABLE daily_summaries (
    partition   TEXT NOT NULL,
    day         TEXT NOT NULL,
    user_id     INTEGER NOT NULL,
    summary     TEXT NOT NULL,
    input_hash  TEXT NOT NULL,                  -- the partition-day's hash
    degraded    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (partition, day, user_id)
);
CREATE INDEX daily_summaries_user ON daily_summaries (user_id, partition, day);

CREATE TABLE historical_summaries (
    partition   TEXT NOT NULL,
    user_id     INTEGER NOT NULL,
    day         TEXT NOT NULL,                  -- the day-1 this history is for (covers days 2-7)
    summary     TEXT NOT NULL,
    input_hash  TEXT NOT NULL,
    source_days INTEGER NOT NULL,
    degraded    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (partition, user_id, day)
);

CREATE TABLE user_facts (
    scope       TEXT NOT NULL,
    user_id     INTEGER NOT NULL,
    facts       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (scope, user_id)
);
CREATE INDEX user_facts_user ON user_facts (user_id);

-- What a user asked to forget: filtered out of every summary and context of that user,
-- including ones recomputed later from chat history.
CREATE TABLE forgotten_facts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    scope       TEXT NOT NULL,
    user_id     INTEGER NOT NULL,
    fact        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX forgotten_facts_user ON forgotten_facts (user_id);

CREATE TABLE memory_context (
    scope           TEXT NOT NULL,
    user_id         INTEGER NOT NULL,
    context         TEXT NOT NULL,
    as_of_day       TEXT NOT NULL,
    made_at         TEXT NOT NULL,
    input_hash      TEXT NOT NULL,
    inputs          TEXT NOT NULL,              -- JSON: the hashes of the rows it was made from
    degraded        INTEGER NOT NULL DEFAULT 0,
    degraded_reason TEXT,
    PRIMARY KEY (scope, user_id)
);

CREATE TABLE pipeline_runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT NOT NULL,
    date_from        TEXT,
    date_to          TEXT,
    guild_id         INTEGER,
    dry_run          INTEGER NOT NULL DEFAULT 0,
    started_at       TEXT NOT NULL,
    finished_at      TEXT,
    status           TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed')),
    error            TEXT,
    partition_days   INTEGER NOT NULL DEFAULT 0,
    summarizer_calls INTEGER NOT NULL DEFAULT 0,
    prompt_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cache_hits       INTEGER NOT NULL DEFAULT 0,
    fallbacks        INTEGER NOT NULL DEFAULT 0,
    errors           INTEGER NOT NULL DEFAULT 0,
    dropped_user_ids INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX pipeline_runs_started ON pipeline_runs (started_at);
