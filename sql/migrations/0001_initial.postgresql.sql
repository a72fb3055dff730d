-- mempipe initial schema (PostgreSQL). Times are timestamptz,
-- days are local calendar dates (DATE), ids are BIGINT.

CREATE TABLE channels (
    channel_id  BIGINT PRIMARY KEY,            -- BIGINT: Discord snowflake
    guild_id    BIGINT,                        -- NULL for DMs
    visibility  TEXT NOT NULL CHECK (visibility IN ('public', 'restricted', 'dm')),
    partition   TEXT NOT NULL,
    is_group    BOOLEAN NOT NULL DEFAULT FALSE,     -- group DM: more than one human reader
    name        TEXT
);

CREATE TABLE chat_history (
    message_id  BIGINT PRIMARY KEY,
    guild_id    BIGINT,
    channel_id  BIGINT NOT NULL,
    visibility  TEXT NOT NULL CHECK (visibility IN ('public', 'restricted', 'dm')),
    partition   TEXT NOT NULL,
    user_id     BIGINT NOT NULL,
    text        TEXT NOT NULL,
    ts          TIMESTAMPTZ NOT NULL,
    reply_to    BIGINT,
    edited_ts   TIMESTAMPTZ,
    ingested_at TIMESTAMPTZ NOT NULL
);
-- daily stage: one partition's messages in a UTC range (a local day)
CREATE INDEX chat_history_partition_ts ON chat_history (partition, ts);
-- retention and per-user lookups
CREATE INDEX chat_history_ts ON chat_history (ts);
CREATE INDEX chat_history_user_partition ON chat_history (user_id, partition);

CREATE TABLE members (
    guild_key    BIGINT NOT NULL,              -- guild id, 0 for DMs
    user_id      BIGINT NOT NULL,
    display_name TEXT NOT NULL,
    seen_at      TIMESTAMPTZ NOT NULL,                 -- ts of the message the name came from
    PRIMARY KEY (guild_key, user_id)
);

CREATE TABLE partition_days (
    partition       TEXT NOT NULL,
    day             DATE NOT NULL,
    input_hash      TEXT NOT NULL,
    message_count   INTEGER NOT NULL,
    user_count      INTEGER NOT NULL,
    summarizer      TEXT NOT NULL,
    degraded        BOOLEAN NOT NULL DEFAULT FALSE,
    degraded_reason TEXT,
    attempts        INTEGER NOT NULL DEFAULT 1,
    computed_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (partition, day)
);

CREATE TABLE daily_summaries (
    partition   TEXT NOT NULL,
    day         DATE NOT NULL,
    user_id     BIGINT NOT NULL,
    summary     TEXT NOT NULL,
    input_hash  TEXT NOT NULL,                  -- the partition-day's hash
    degraded    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (partition, day, user_id)
);
CREATE INDEX daily_summaries_user ON daily_summaries (user_id, partition, day);

CREATE TABLE historical_summaries (
    partition   TEXT NOT NULL,
    user_id     BIGINT NOT NULL,
    day         DATE NOT NULL,                  -- the day-1 this history is for (covers days 2-7)
    summary     TEXT NOT NULL,
    input_hash  TEXT NOT NULL,
    source_days INTEGER NOT NULL,
    degraded    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (partition, user_id, day)
);

CREATE TABLE user_facts (
    scope       TEXT NOT NULL,
    user_id     BIGINT NOT NULL,
    facts       TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, user_id)
);
CREATE INDEX user_facts_user ON user_facts (user_id);

-- What a user asked to forget: filtered out of every summary and context of that user,
-- including ones recomputed later from chat history.
CREATE TABLE forgotten_facts (
    id          BIGSERIAL PRIMARY KEY,
    scope       TEXT NOT NULL,
    user_id     BIGINT NOT NULL,
    fact        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX forgotten_facts_user ON forgotten_facts (user_id);

CREATE TABLE memory_context (
    scope           TEXT NOT NULL,
    user_id         BIGINT NOT NULL,
    context         TEXT NOT NULL,
    as_of_day       DATE NOT NULL,
    made_at         TIMESTAMPTZ NOT NULL,
    input_hash      TEXT NOT NULL,
    inputs          JSONB NOT NULL,              -- JSON: the hashes of the rows it was made from
    degraded        BOOLEAN NOT NULL DEFAULT FALSE,
    degraded_reason TEXT,
    PRIMARY KEY (scope, user_id)
);

CREATE TABLE pipeline_runs (
    id               BIGSERIAL PRIMARY KEY,
    kind             TEXT NOT NULL,
    date_from        DATE,
    date_to          DATE,
    guild_id         BIGINT,
    dry_run          BOOLEAN NOT NULL DEFAULT FALSE,
    started_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ,
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
