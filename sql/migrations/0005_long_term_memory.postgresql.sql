-- Long-term memory (PostgreSQL): structured facts with privacy levels, per-(scope, user) profiles,
-- the recent part of a context kept apart from its profile, and per-run fact counters.
-- ARCHITECTURE.md, "facts" and "profile", is the contract.

-- One row per fact about one user. `partition` is where it was said (or remembered): its
-- audience. `level` is that partition's level, or `global` when validated as safe everywhere
-- (promoted from guild_public only). A forgotten fact's rows are deleted (no status keeps its
-- text); an UPDATE keeps the old row as `superseded` (history), never across levels.
CREATE TABLE memory_facts (
    id            BIGSERIAL PRIMARY KEY,
    user_id       BIGINT NOT NULL,
    partition     TEXT NOT NULL,
    level         TEXT NOT NULL CHECK (level IN ('dm', 'channel_restricted', 'guild_public', 'global')),
    category      TEXT NOT NULL CHECK (category IN ('identity', 'preference', 'relationship', 'event', 'plan',
                                                    'skill/work', 'other')),
    text          TEXT NOT NULL,
    fact_key      TEXT,                        -- the attribute a newer value replaces ("favourite game")
    confidence    DOUBLE PRECISION NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    event_day     DATE,                        -- the absolute date of an episodic fact
    first_seen    DATE NOT NULL,
    last_seen     DATE NOT NULL,
    sources       JSONB NOT NULL,               -- JSON: ["<channel_id>:<message_id>", ...], or ["manual"]
    origin        TEXT NOT NULL CHECK (origin IN ('extracted', 'manual')),
    status        TEXT NOT NULL CHECK (status IN ('active', 'superseded')),
    superseded_on DATE,
    input_hash    TEXT NOT NULL,               -- the partition-day (or command) it was made from
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX memory_facts_user ON memory_facts (user_id, status);
CREATE INDEX memory_facts_partition ON memory_facts (partition);

-- The facts a scope may read of one user, rendered (MEMORY.md-style); rebuilt when its fact set
-- changes (input_hash). The merge puts it in front of the recent part of the context.
CREATE TABLE memory_profiles (
    scope       TEXT NOT NULL,
    user_id     BIGINT NOT NULL,
    profile     TEXT NOT NULL,
    input_hash  TEXT NOT NULL,
    fact_count  INTEGER NOT NULL,
    as_of_day   DATE NOT NULL,
    made_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, user_id)
);

-- The recent part of a context (today + past week, the summarizer's merge) and its hash: a
-- changed profile re-renders the context without a model call.
ALTER TABLE memory_context ADD COLUMN recent TEXT;
ALTER TABLE memory_context ADD COLUMN recent_hash TEXT;

ALTER TABLE pipeline_runs ADD COLUMN facts_added INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_updated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_unchanged INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_low_confidence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_ungrounded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_unsafe INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_raw_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_not_a_speaker INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN facts_rejected_forgotten INTEGER NOT NULL DEFAULT 0;

-- The facts blobs of `facts remember` become manual facts, one per line, at the level of the
-- scope they were remembered in; the blob table goes.
INSERT INTO memory_facts (user_id, partition, level, category, text, confidence, first_seen, last_seen, sources,
                          origin, status, input_hash, created_at, updated_at)
SELECT user_id, scope,
       CASE WHEN scope LIKE 'guild:%' THEN 'guild_public' WHEN scope LIKE 'channel:%' THEN 'channel_restricted'
            ELSE 'dm' END,
       'other', trim(line), 1.0, (updated_at AT TIME ZONE 'UTC')::date, (updated_at AT TIME ZONE 'UTC')::date,
       '["manual"]'::jsonb, 'manual', 'active', 'user_facts', updated_at, updated_at
FROM user_facts, regexp_split_to_table(facts, E'\n') AS line
WHERE trim(line) <> '';
DROP TABLE user_facts;
