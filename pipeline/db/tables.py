"""SQLAlchemy Core descriptions of the tables that sql/migrations creates.

The migrations are the source of truth for the schema; these objects let the storage layer
build dialect-correct statements (upserts, typed binds). tests/integration/test_schema.py
checks that both agree.
"""

import sqlalchemy as sa

from .types import JsonDocument, LocalDate, UtcDateTime

metadata = sa.MetaData()
Id = sa.BigInteger


def _keys(**types) -> list[sa.Column]:
    """Primary-key columns; ids are given, never generated."""
    return [sa.Column(n, t, primary_key=True, autoincrement=False) if t is Id else sa.Column(n, t, primary_key=True)
            for n, t in types.items()]


def _required(**types) -> list[sa.Column]:
    return [sa.Column(n, t, nullable=False) for n, t in types.items()]


def _optional(**types) -> list[sa.Column]:
    return [sa.Column(n, t) for n, t in types.items()]


def _counts(*names: str, server_default: str | None = None) -> list[sa.Column]:
    return [sa.Column(n, sa.Integer, nullable=False, server_default=server_default) for n in names]


# sql/migrations/0004_audience_keys.*.sql: a DM is one-to-one only when the input said so
# (`one_to_one`) and never said it was a group; a message is (channel, message id); a display
# name belongs to the partition it was seen in.
channels = sa.Table(
    "channels", metadata, *_keys(channel_id=Id), *_optional(guild_id=Id),
    *_required(visibility=sa.Text, partition=sa.Text, is_group=sa.Boolean), *_optional(name=sa.Text),
    *_required(one_to_one=sa.Boolean),
)

chat_history = sa.Table(
    "chat_history", metadata, *_required(message_id=Id), *_optional(guild_id=Id),
    *_required(channel_id=Id, visibility=sa.Text, partition=sa.Text, user_id=Id, text=sa.Text, ts=UtcDateTime),
    *_optional(reply_to=Id, edited_ts=UtcDateTime), *_required(ingested_at=UtcDateTime),
    *_optional(author_name=sa.Text),  # 0008: the author's display name at the time (an edit keeps it)
    sa.PrimaryKeyConstraint("channel_id", "message_id"),
)

members = sa.Table(
    "members", metadata, *_keys(partition=sa.Text, user_id=Id),
    *_required(display_name=sa.Text, seen_at=UtcDateTime),
)

partition_days = sa.Table(
    "partition_days", metadata, *_keys(partition=sa.Text, day=LocalDate),
    *_required(input_hash=sa.Text), *_counts("message_count", "user_count"),
    *_required(summarizer=sa.Text, degraded=sa.Boolean), *_optional(degraded_reason=sa.Text),
    *_counts("attempts"), *_required(computed_at=UtcDateTime),
)

daily_summaries = sa.Table(
    "daily_summaries", metadata, *_keys(partition=sa.Text, day=LocalDate, user_id=Id),
    *_required(summary=sa.Text, input_hash=sa.Text, degraded=sa.Boolean, created_at=UtcDateTime),
)

historical_summaries = sa.Table(
    "historical_summaries", metadata, *_keys(partition=sa.Text, user_id=Id, day=LocalDate),
    *_required(summary=sa.Text, input_hash=sa.Text), *_counts("source_days"),
    *_required(degraded=sa.Boolean, created_at=UtcDateTime), *_counts("attempts", server_default="1"),
    *_optional(degraded_reason=sa.Text),
)

# sql/migrations/0005_long_term_memory.*.sql: structured facts (ARCHITECTURE.md, "facts") and
# the per-(scope, user) profiles rendered from them.
memory_facts = sa.Table(
    "memory_facts", metadata, sa.Column("id", Id, primary_key=True),
    *_required(user_id=Id, partition=sa.Text, level=sa.Text, category=sa.Text, text=sa.Text),
    *_optional(fact_key=sa.Text), *_required(confidence=sa.Float), *_optional(event_day=LocalDate),
    *_required(first_seen=LocalDate, last_seen=LocalDate, sources=JsonDocument, origin=sa.Text, status=sa.Text),
    *_optional(superseded_on=LocalDate), *_required(input_hash=sa.Text, created_at=UtcDateTime, updated_at=UtcDateTime),
)

memory_profiles = sa.Table(
    "memory_profiles", metadata, *_keys(scope=sa.Text, user_id=Id),
    *_required(profile=sa.Text, input_hash=sa.Text), *_counts("fact_count"),
    *_required(as_of_day=LocalDate, made_at=UtcDateTime),
)

# sql/migrations/0007_search_index.*.sql: what search reads (ARCHITECTURE.md, "search"). Written only
# by the database's triggers on memory_facts, daily_summaries and historical_summaries; the
# full-text side is memory_items_fts (SQLite FTS5, with its shadow tables) or the `terms` column
# (PostgreSQL tsvector, generated), neither described here.
memory_items = sa.Table(
    "memory_items", metadata, sa.Column("id", Id, primary_key=True),
    *_required(kind=sa.Text, user_id=Id, partition=sa.Text, level=sa.Text, day=LocalDate),
    *_optional(confidence=sa.Float, fact_id=Id), *_required(body=sa.Text),
)
SEARCH_INDEX = "memory_items"
# the tables whose triggers write memory_items (and so the full-text index)
SEARCH_SOURCES = frozenset({"memory_facts", "daily_summaries", "historical_summaries"})
FTS_TABLE = "memory_items_fts"  # SQLite; its shadow tables are memory_items_fts_<data|idx|docsize|config>


def is_search_index(table_name: str) -> bool:
    """The search index and the full-text engine's own tables: copies of other rows, kept by
    triggers, so never exported, scanned or deleted from directly."""
    return table_name == SEARCH_INDEX or table_name == FTS_TABLE or table_name.startswith(FTS_TABLE + "_")


forgotten_facts = sa.Table(
    "forgotten_facts", metadata, sa.Column("id", Id, primary_key=True),
    *_required(scope=sa.Text, user_id=Id, fact=sa.Text, created_at=UtcDateTime),
)

memory_context = sa.Table(
    "memory_context", metadata, *_keys(scope=sa.Text, user_id=Id),
    *_required(context=sa.Text, as_of_day=LocalDate, made_at=UtcDateTime, input_hash=sa.Text,
               inputs=JsonDocument, degraded=sa.Boolean),
    *_optional(degraded_reason=sa.Text), *_counts("attempts", server_default="1"),
    *_optional(recent=sa.Text, recent_hash=sa.Text),
)

# Facts proposed by the daily stage and what became of them, per run (validate.REASONS).
FACT_COUNTS = ("facts_added", "facts_updated", "facts_unchanged", "facts_rejected_low_confidence",
               "facts_rejected_ungrounded", "facts_rejected_unsafe", "facts_rejected_raw_id",
               "facts_rejected_not_a_speaker", "facts_rejected_forgotten")

# Where each item of a run went (sql/migrations/0010_run_counts.sql): its partition-days,
# historical rows and contexts add up to summarized + the passed_* reasons + errors; the
# planned_* are a dry run's estimate (README, "mempipe run").
ITEM_COUNTS = ("historical_items", "context_items", "summarized", "passed_fits", "passed_week_rendered",
               "passed_recent_rendered", "passed_no_recent", "passed_reused", "passed_unchanged",
               "planned_llm_calls", "planned_prompt_tokens")

# sql/migrations/0012_llm_batches.*.sql: items that waited for a batch answer (gemini.batch); they
# are items too: the sum of 0010 adds them (summarized + passed + errors + deferred).
BATCH_COUNTS = ("deferred",)

# sql/migrations/0013_chat_requests.*.sql: in-chat memory requests applied by kind, refused by
# reason (pipeline/memory/requests.py REFUSALS), and facts dropped for resting on a request message.
REQUEST_COUNTS = ("requests_remembered", "requests_forgotten", "requests_refused_other_person",
                  "requests_refused_unsafe", "facts_rejected_request")

# sql/migrations/0014_fold_waits.*.sql: today's partition-days whose fold of a few new messages
# waited for more in an hourly refresh (pipeline/stages/daily.py `_fold_waits`): a pass-through
# reason, in the sum of 0010 like the others.
WAIT_COUNTS = ("passed_fold_waits",)

pipeline_runs = sa.Table(
    "pipeline_runs", metadata, sa.Column("id", Id, primary_key=True), *_required(kind=sa.Text),
    *_optional(date_from=LocalDate, date_to=LocalDate, guild_id=Id),
    *_required(dry_run=sa.Boolean, started_at=UtcDateTime), *_optional(finished_at=UtcDateTime),
    *_required(status=sa.Text), *_optional(error=sa.Text),
    *_counts("partition_days", "summarizer_calls", "prompt_tokens", "output_tokens", "cache_hits", "fallbacks",
             "errors", "dropped_user_ids"),
    *_counts("llm_calls", "retries", server_default="0"),
    sa.Column("estimated_cost", sa.Float, nullable=False, server_default="0"),
    *_counts(*FACT_COUNTS, server_default="0"),
    *_counts(*ITEM_COUNTS, server_default="0"),
    *_counts(*BATCH_COUNTS, server_default="0"),
    *_counts(*REQUEST_COUNTS, server_default="0"),
    *_counts(*WAIT_COUNTS, server_default="0"),
)

# In-chat memory requests, one per message (sql/migrations/0013_chat_requests.*.sql): the text
# only while pending.
chat_requests = sa.Table(
    "chat_requests", metadata, *_keys(channel_id=Id, message_id=Id),
    *_required(user_id=Id, partition=sa.Text, day=LocalDate, ts=UtcDateTime, kind=sa.Text),
    *_optional(text=sa.Text), *_required(status=sa.Text), *_optional(reason=sa.Text),
    *_required(detected_at=UtcDateTime), *_optional(handled_at=UtcDateTime),
)

DERIVED_TABLES = (partition_days, daily_summaries, historical_summaries, memory_context, memory_profiles)

# `mempipe serve` (sql/migrations/0003_scheduler.*.sql): per-job state and the current leader,
# read by `mempipe status`. The APScheduler job store itself is in memory.
scheduler_state = sa.Table(
    "scheduler_state", metadata, *_keys(job_id=sa.Text),
    *_optional(last_started_at=UtcDateTime, last_finished_at=UtcDateTime, last_outcome=sa.Text, last_error=sa.Text,
               last_ok_at=UtcDateTime, last_run_id=Id, last_report=JsonDocument, next_run_at=UtcDateTime),
)

scheduler_leader = sa.Table(
    "scheduler_leader", metadata,
    sa.Column("id", sa.Integer, sa.CheckConstraint("id = 1"), primary_key=True, autoincrement=False),
    *_required(holder=sa.Text, pid=sa.Integer, host=sa.Text, since=UtcDateTime, heartbeat_at=UtcDateTime),
    *_optional(released_at=UtcDateTime),
)


# sql/migrations/0006_user_controls.*.sql: what users asked for (ARCHITECTURE.md, "User controls").
control_actions = sa.Table(
    "control_actions", metadata, sa.Column("id", Id, primary_key=True),
    *_required(action=sa.Text, subject_key=sa.Text), *_optional(requested_by=Id, scope=sa.Text),
    *_required(at=UtcDateTime), *_counts("rows_affected", server_default="0"), *_required(detail=JsonDocument),
)

memory_exclusions = sa.Table(
    "memory_exclusions", metadata, sa.Column("id", Id, primary_key=True),
    *_required(user_id=Id, scope=sa.Text, kind=sa.Text), *_optional(from_ts=UtcDateTime, until_ts=UtcDateTime),
    *_required(created_at=UtcDateTime),
)

# sql/migrations/0016_erased_names.*.sql: sha256 hashes of erased users' name words, per partition
erased_names = sa.Table(
    "erased_names", metadata, *_keys(partition=sa.Text, word_key=sa.Text), *_required(erased_at=UtcDateTime),
)

recompute_queue = sa.Table(
    "recompute_queue", metadata, *_keys(partition=sa.Text, day=LocalDate),
    *_required(reason=sa.Text, queued_at=UtcDateTime),
)


# sql/migrations/0011_shared_quota.*.sql: the per-model limits counted for every process
# (pipeline/llm/shared_limiter.py). held_until NULL: the request is in flight.
llm_quota_models = sa.Table(
    "llm_quota_models", metadata, *_keys(model=sa.Text),
    *_optional(blocked_until=UtcDateTime, day=LocalDate), *_counts("day_requests", server_default="0"),
)

llm_quota_slots = sa.Table(
    "llm_quota_slots", metadata, sa.Column("id", Id, primary_key=True),
    sa.Column("model", sa.Text, sa.ForeignKey("llm_quota_models.model"), nullable=False),
    *_required(tokens=sa.Integer, sent_at=UtcDateTime), *_optional(held_until=UtcDateTime),
    *_required(holder=sa.Text),
)



# sql/migrations/0012_llm_batches.*.sql: Gemini Batch mode (pipeline/llm/batch.py). A request by its
# content's key (pending, submitted, answered, failed) and the jobs that carry them.
llm_batch_requests = sa.Table(
    "llm_batch_requests", metadata, *_keys(request_key=sa.Text),
    *_required(model=sa.Text, request=JsonDocument, state=sa.Text), *_optional(job_name=sa.Text, answer=sa.Text,
                                                                             answer_error=sa.Text, answered_by=sa.Text),
    *_counts("prompt_tokens", "output_tokens", server_default="0"),
    *_required(created_at=UtcDateTime, updated_at=UtcDateTime), *_optional(used_at=UtcDateTime),
    *_optional(item_key=sa.Text),  # 0015: the item that recorded it (store/batches.py drop_batch_requests)
)

llm_batch_jobs = sa.Table(
    "llm_batch_jobs", metadata, *_keys(name=sa.Text), *_required(model=sa.Text, state=sa.Text),
    *_counts("requests"), *_required(submitted_at=UtcDateTime),
    *_optional(checked_at=UtcDateTime, finished_at=UtcDateTime, error=sa.Text), *_required(run_kind=sa.Text),
    *_optional(date_from=LocalDate, date_to=LocalDate, guild_id=Id, rerun_at=UtcDateTime),
)
