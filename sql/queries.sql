-- Named queries, loaded once by pipeline/db/queries.py. Blocks start with "-- name: <name>",
-- then a line of description, then the statement with :named parameters.
-- The README quotes get_context verbatim (a test checks it).

-- name: get_context
-- The bot read path: one row by primary key (scope, user_id).
SELECT context, as_of_day, made_at, degraded FROM memory_context WHERE scope = :scope AND user_id = :user_id;

-- name: table_counts
-- Row counts of the tables `mempipe db status` reports.
SELECT 'chat_history' AS t, COUNT(*) AS n FROM chat_history
UNION ALL SELECT 'daily_summaries', COUNT(*) FROM daily_summaries
UNION ALL SELECT 'historical_summaries', COUNT(*) FROM historical_summaries
UNION ALL SELECT 'memory_context', COUNT(*) FROM memory_context
UNION ALL SELECT 'user_facts', COUNT(*) FROM user_facts
UNION ALL SELECT 'pipeline_runs', COUNT(*) FROM pipeline_runs;

-- Migration bookkeeping (pipeline/db/migrations.py): one row per applied migration file.

-- name: schema_migrations_create
-- The runner's own table, made before any migration runs (so no migration creates it).
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

-- name: schema_migrations_applied
-- The versions applied so far, each with the checksum its file had when it was applied.
SELECT version, checksum FROM schema_migrations;

-- name: schema_migrations_record
-- Record one applied migration, in the same transaction as its statements.
INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (:version, :name, :checksum, :applied_at);
