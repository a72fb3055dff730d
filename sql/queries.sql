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
UNION ALL SELECT 'memory_facts', COUNT(*) FROM memory_facts
UNION ALL SELECT 'memory_profiles', COUNT(*) FROM memory_profiles
UNION ALL SELECT 'memory_items', COUNT(*) FROM memory_items
UNION ALL SELECT 'pipeline_runs', COUNT(*) FROM pipeline_runs;

-- PostgreSQL bulk ingest (pipeline/store/ingest.py): COPY into a per-transaction staging table,
-- then one upsert. The column lists are chat_history's columns in table order (a test checks).

-- name: pg_stored_messages
-- Author, time, reply and edit time of the stored messages among one batch's keys, given as one
-- JSON array of [channel id, message id] pairs (a driver parameter: psycopg adapts a list of 5,000
-- ints about 7x slower than this text is sent and read), in one statement.
SELECT h.channel_id, h.message_id, h.user_id, h.ts, h.reply_to, h.edited_ts FROM json_array_elements(%(keys)s::json) AS k JOIN chat_history h ON h.channel_id = (k.value ->> 0)::bigint AND h.message_id = (k.value ->> 1)::bigint;

-- name: pg_members_upsert
-- The import's members, given as one JSON array of objects, in one statement; the latest name
-- per (partition, user) wins, as the SQLite upsert (pipeline/store/ingest.py) decides it.
INSERT INTO members (partition, user_id, display_name, seen_at)
SELECT partition, user_id, display_name, seen_at FROM json_to_recordset(%(members)s::json) AS m (partition text, user_id bigint, display_name text, seen_at timestamptz)
ON CONFLICT (partition, user_id) DO UPDATE SET display_name = EXCLUDED.display_name, seen_at = EXCLUDED.seen_at
WHERE EXCLUDED.seen_at >= members.seen_at;

-- name: sqlite_members_upsert
-- The import's members, one row of parameters each (an executemany of plain values: SQLAlchemy's
-- per-row bind processing cost more than the statement); the latest name per (partition, user) wins.
INSERT INTO members (partition, user_id, display_name, seen_at) VALUES (?, ?, ?, ?)
ON CONFLICT (partition, user_id) DO UPDATE SET display_name = excluded.display_name, seen_at = excluded.seen_at
WHERE excluded.seen_at >= members.seen_at;

-- name: pg_copy_new
-- Binary COPY of a batch's new messages (no key stored) straight into chat_history: COPY has no
-- ON CONFLICT, so it runs under a savepoint and a concurrent writer's copy sends them to staging.
COPY chat_history (message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at, author_name) FROM STDIN (FORMAT BINARY);

-- name: pg_staging_exists
-- Does this transaction's staging table exist? (Asked, never remembered: a rollback drops it.)
SELECT to_regclass('pg_temp.mempipe_stg_chat') IS NOT NULL;

-- name: pg_staging_create
-- The staging table, dropped when the import's transaction ends.
CREATE TEMPORARY TABLE mempipe_stg_chat (LIKE chat_history INCLUDING DEFAULTS) ON COMMIT DROP;

-- name: pg_staging_truncate
-- Empty the staging table between batches of one import.
TRUNCATE mempipe_stg_chat;

-- name: pg_staging_copy
-- Binary COPY of one batch into the staging table.
COPY mempipe_stg_chat (message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at, author_name) FROM STDIN (FORMAT BINARY);

-- name: pg_staging_upsert
-- Idempotent by (channel_id, message_id); a strictly newer edited_ts by the same author replaces
-- text and edited_ts, nothing else (author_name keeps the name at the message's time). DISTINCT
-- ON is defensive: the importer already keeps one row (the newest edit) per message and refuses
-- a copy by another author.
INSERT INTO chat_history (message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at, author_name)
SELECT DISTINCT ON (channel_id, message_id) message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at, author_name FROM mempipe_stg_chat
ORDER BY channel_id, message_id, edited_ts DESC NULLS LAST
ON CONFLICT (channel_id, message_id) DO UPDATE SET text = EXCLUDED.text, edited_ts = EXCLUDED.edited_ts
WHERE EXCLUDED.edited_ts IS NOT NULL
  AND (chat_history.edited_ts IS NULL OR EXCLUDED.edited_ts > chat_history.edited_ts)
  AND chat_history.user_id = EXCLUDED.user_id;

-- name: pg_messages_count_upto
-- PostgreSQL's sqlite_messages_count_upto.
SELECT count(*) FROM (SELECT 1 FROM chat_history LIMIT %(upto)s) AS rows_upto;

-- name: pg_message_indexes
-- chat_history's secondary indexes — each one's name as regclass writes it (quoted, with its schema
-- when the search path would not find it) and its CREATE statement as pg_get_indexdef writes it —
-- in the order they were made: what a large import drops and builds again at its end. Not the
-- primary key's, a unique index's or any other constraint's: the import's writes need those.
SELECT x.indexrelid::regclass::text, pg_get_indexdef(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = 'chat_history'::regclass AND NOT x.indisunique AND NOT x.indisprimary AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) ORDER BY i.oid;

-- Locks (pipeline/store/locks.py): session advisory locks, keyed by a signed 64-bit hash of a name.

-- name: advisory_try_lock
-- Take the lock without waiting; true when this session now holds it.
SELECT pg_try_advisory_lock(:key);

-- name: advisory_unlock
-- Release a lock this session holds.
SELECT pg_advisory_unlock(:key);

-- name: advisory_backend_pid
-- This session's server process (a reconnect would be another one).
SELECT pg_backend_pid();

-- name: advisory_held
-- Does this very session still hold an advisory lock?
SELECT pg_backend_pid() AS pid, EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted) AS held;

-- name: session_keepalive
-- Set one TCP keepalive setting for this session; a server without the setting skips it.
SELECT set_config(name, :value, false) FROM pg_settings WHERE name = :name;

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

-- Search (pipeline/store/search.py, ARCHITECTURE.md "Search"): one user's memory items matching
-- the query's words that the scope may read — items of the readable partitions (:partitions,
-- from the audience rule) and the user's global facts — best first by the engine's relevance,
-- at most :candidates (pipeline/search/rank.py orders the final few). Fail closed on pending
-- recomputes: a daily summary whose partition-day is queued (a deleted message waits for its
-- day to be made again), and a historical summary whose partition has a queued day among the six
-- days before its day, are left out until a run has made them again.

-- name: search_candidates_sqlite
-- SQLite: FTS5 MATCH (:match restricts user_id inside the engine too), -bm25 as relevance.
SELECT i.kind, i.body, i.partition, i.level, i.day, i.confidence, i.fact_id,
       -bm25(memory_items_fts, 0.0, 1.0) AS relevance
FROM memory_items_fts JOIN memory_items i ON i.id = memory_items_fts.rowid
WHERE memory_items_fts MATCH :match
  AND i.user_id = :user_id
  AND (i.partition IN (SELECT value FROM json_each(:partitions)) OR (i.kind = 'fact' AND i.level = 'global'))
  AND NOT (i.kind = 'daily' AND EXISTS (
      SELECT 1 FROM recompute_queue q WHERE q.partition = i.partition AND q.day = i.day))
  AND NOT (i.kind = 'historical' AND EXISTS (
      SELECT 1 FROM recompute_queue q
      WHERE q.partition = i.partition AND q.day >= date(i.day, '-6 days') AND q.day < i.day))
ORDER BY bm25(memory_items_fts, 0.0, 1.0), i.id
LIMIT :candidates;

-- name: search_candidates_postgresql
-- PostgreSQL: the GIN-indexed tsvector against to_tsquery('english', :tsquery), ts_rank_cd as relevance.
SELECT i.kind, i.body, i.partition, i.level, i.day, i.confidence, i.fact_id,
       ts_rank_cd(i.terms, q.query) AS relevance
FROM memory_items i, to_tsquery('english', :tsquery) AS q(query)
WHERE i.terms @@ q.query
  AND i.user_id = :user_id
  AND (i.partition = ANY(CAST(:partitions AS text[])) OR (i.kind = 'fact' AND i.level = 'global'))
  AND NOT (i.kind = 'daily' AND EXISTS (
      SELECT 1 FROM recompute_queue r WHERE r.partition = i.partition AND r.day = i.day))
  AND NOT (i.kind = 'historical' AND EXISTS (
      SELECT 1 FROM recompute_queue r
      WHERE r.partition = i.partition AND r.day >= i.day - 6 AND r.day < i.day))
ORDER BY relevance DESC, i.id
LIMIT :candidates;

-- name: search_channel
-- Audience point query: a channel's guild and DM kind (one_to_one, is_group).
SELECT guild_id, one_to_one, is_group FROM channels WHERE channel_id = :channel_id;

-- name: search_speakers
-- Audience point query: up to two distinct people who wrote in a partition (is a DM private?).
SELECT COUNT(*) FROM (SELECT DISTINCT user_id FROM chat_history WHERE partition = :partition LIMIT 2) AS s;

-- name: search_user_partitions
-- Audience point query: every partition a user has written in (index chat_history (user_id, partition)).
SELECT DISTINCT partition FROM chat_history WHERE user_id = :user_id ORDER BY partition;

-- name: search_forgotten
-- The facts a user forgot, with the scope of each (a search leaves out what they apply to; index forgotten_facts_user).
SELECT scope, fact FROM forgotten_facts WHERE user_id = :user_id ORDER BY id;

-- name: search_member_names
-- Every display name of a user, asked only when the user has forgotten a fact (index members_user).
SELECT DISTINCT display_name FROM members WHERE user_id = :user_id ORDER BY display_name;

-- SQLite bulk ingest (pipeline/store/ingest.py), run with the driver's own `?` parameters: one
-- executemany of tuples in chat_history's column order (a test checks), timestamps as UTC text.

-- name: sqlite_stored_messages
-- Author, time, reply and edit time of the stored messages among one batch's keys, given as one
-- JSON array of [channel id, message id] pairs, in one statement (ingest refuses a copy that
-- changes the first three, and counts a newer edit).
SELECT h.channel_id, h.message_id, h.user_id, h.ts, h.reply_to, h.edited_ts FROM json_each(?) AS k JOIN chat_history h ON h.channel_id = json_extract(k.value, '$[0]') AND h.message_id = json_extract(k.value, '$[1]');

-- name: sqlite_messages_count_upto
-- The rows of chat_history, counted up to a bound (an import asks whether the table is small next
-- to what it writes, without counting a large table whole).
SELECT count(*) FROM (SELECT 1 FROM chat_history LIMIT ?);

-- name: sqlite_message_indexes
-- chat_history's secondary indexes as created, in the order they were (the primary key's own index
-- has no statement): what a large import drops and builds again at its end, in that order.
SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'chat_history' AND sql IS NOT NULL ORDER BY rowid;

-- name: sqlite_messages_upsert
-- Idempotent by (channel_id, message_id); a strictly newer edited_ts by the same author replaces
-- text and edited_ts, nothing else (author_name keeps the name at the message's time).
INSERT INTO chat_history (message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at, author_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (channel_id, message_id) DO UPDATE SET text = excluded.text, edited_ts = excluded.edited_ts
WHERE excluded.edited_ts IS NOT NULL
  AND (chat_history.edited_ts IS NULL OR excluded.edited_ts > chat_history.edited_ts)
  AND chat_history.user_id = excluded.user_id;

-- The job queue of `mempipe worker` (procrastinate's tables, PostgreSQL; pipeline/store/queue.py).

-- name: queue_job_statuses
-- The status of each of a run's jobs. A job that is not there succeeded: workers delete a job
-- when it succeeds.
SELECT id, status::text AS status FROM procrastinate_jobs WHERE id = ANY(:ids);

-- name: queue_cancel
-- A failed or cancelled run's jobs not yet started (procrastinate's cancel, for many ids at once:
-- a cancelled job stays, so a run waiting for it queues it again).
UPDATE procrastinate_jobs SET status = 'cancelled' WHERE id = ANY(:ids) AND status = 'todo';

-- name: queue_drop_ended
-- The queue's jobs that ended without succeeding keep their arguments (partitions, days, user
-- ids): an erase deletes them all (:before NULL), retention those with no event since :before.
-- A run still waiting on one of them finds it gone without its report and queues it again.
DELETE FROM procrastinate_jobs j
WHERE j.queue_name = :queue AND j.status IN ('failed', 'cancelled', 'aborted')
  AND (CAST(:before AS timestamptz) IS NULL
       OR NOT EXISTS (SELECT 1 FROM procrastinate_events e WHERE e.job_id = j.id AND e.at >= :before));

-- name: queue_working_workers
-- How many workers that recorded a heartbeat within the last :seconds run a job of the queue (a
-- run waiting on nobody says so, then fails: pipeline/workers/dispatch.py).
SELECT count(DISTINCT w.id) FROM procrastinate_workers w JOIN procrastinate_jobs j ON j.worker_id = w.id
WHERE j.queue_name = :queue AND j.status = 'doing' AND w.last_heartbeat > now() - make_interval(secs => :seconds);

-- name: queue_notify
-- A worker's job reports to the run waiting for it (its LISTEN channel): the job's key, the
-- folds it made, its counts that pipeline_runs has no column for, or why it failed.
SELECT pg_notify(:channel, :payload);
