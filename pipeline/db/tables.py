"""SQLAlchemy Core descriptions of the tables that sql/migrations creates.

The migrations are the source of truth for the schema; these objects let the storage layer
build dialect-correct statements (upserts, typed binds). tests/integration/test_schema.py
checks that both agree.
"""

import sqlalchemy as sa

from .types import JsonDocument, LocalDate, UtcDateTime

metadata = sa.MetaData()
Id = sa.BigInteger

channels = sa.Table(
    "channels", metadata,
    sa.Column("channel_id", Id, primary_key=True, autoincrement=False),
    sa.Column("guild_id", Id),
    sa.Column("visibility", sa.Text, nullable=False),
    sa.Column("partition", sa.Text, nullable=False),
    sa.Column("is_group", sa.Boolean, nullable=False),
    sa.Column("name", sa.Text),
)

chat_history = sa.Table(
    "chat_history", metadata,
    sa.Column("message_id", Id, primary_key=True, autoincrement=False),
    sa.Column("guild_id", Id),
    sa.Column("channel_id", Id, nullable=False),
    sa.Column("visibility", sa.Text, nullable=False),
    sa.Column("partition", sa.Text, nullable=False),
    sa.Column("user_id", Id, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("ts", UtcDateTime, nullable=False),
    sa.Column("reply_to", Id),
    sa.Column("edited_ts", UtcDateTime),
    sa.Column("ingested_at", UtcDateTime, nullable=False),
)

members = sa.Table(
    "members", metadata,
    sa.Column("guild_key", Id, primary_key=True, autoincrement=False),
    sa.Column("user_id", Id, primary_key=True, autoincrement=False),
    sa.Column("display_name", sa.Text, nullable=False),
    sa.Column("seen_at", UtcDateTime, nullable=False),
)

partition_days = sa.Table(
    "partition_days", metadata,
    sa.Column("partition", sa.Text, primary_key=True),
    sa.Column("day", LocalDate, primary_key=True),
    sa.Column("input_hash", sa.Text, nullable=False),
    sa.Column("message_count", sa.Integer, nullable=False),
    sa.Column("user_count", sa.Integer, nullable=False),
    sa.Column("summarizer", sa.Text, nullable=False),
    sa.Column("degraded", sa.Boolean, nullable=False),
    sa.Column("degraded_reason", sa.Text),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("computed_at", UtcDateTime, nullable=False),
)

daily_summaries = sa.Table(
    "daily_summaries", metadata,
    sa.Column("partition", sa.Text, primary_key=True),
    sa.Column("day", LocalDate, primary_key=True),
    sa.Column("user_id", Id, primary_key=True, autoincrement=False),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("input_hash", sa.Text, nullable=False),
    sa.Column("degraded", sa.Boolean, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

historical_summaries = sa.Table(
    "historical_summaries", metadata,
    sa.Column("partition", sa.Text, primary_key=True),
    sa.Column("user_id", Id, primary_key=True, autoincrement=False),
    sa.Column("day", LocalDate, primary_key=True),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("input_hash", sa.Text, nullable=False),
    sa.Column("source_days", sa.Integer, nullable=False),
    sa.Column("degraded", sa.Boolean, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
    sa.Column("degraded_reason", sa.Text),
)

user_facts = sa.Table(
    "user_facts", metadata,
    sa.Column("scope", sa.Text, primary_key=True),
    sa.Column("user_id", Id, primary_key=True, autoincrement=False),
    sa.Column("facts", sa.Text, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
)

forgotten_facts = sa.Table(
    "forgotten_facts", metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("user_id", Id, nullable=False),
    sa.Column("fact", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

memory_context = sa.Table(
    "memory_context", metadata,
    sa.Column("scope", sa.Text, primary_key=True),
    sa.Column("user_id", Id, primary_key=True, autoincrement=False),
    sa.Column("context", sa.Text, nullable=False),
    sa.Column("as_of_day", LocalDate, nullable=False),
    sa.Column("made_at", UtcDateTime, nullable=False),
    sa.Column("input_hash", sa.Text, nullable=False),
    sa.Column("inputs", JsonDocument, nullable=False),
    sa.Column("degraded", sa.Boolean, nullable=False),
    sa.Column("degraded_reason", sa.Text),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
)

pipeline_runs = sa.Table(
    "pipeline_runs", metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("date_from", LocalDate),
    sa.Column("date_to", LocalDate),
    sa.Column("guild_id", Id),
    sa.Column("dry_run", sa.Boolean, nullable=False),
    sa.Column("started_at", UtcDateTime, nullable=False),
    sa.Column("finished_at", UtcDateTime),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("partition_days", sa.Integer, nullable=False),
    sa.Column("summarizer_calls", sa.Integer, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("cache_hits", sa.Integer, nullable=False),
    sa.Column("fallbacks", sa.Integer, nullable=False),
    sa.Column("errors", sa.Integer, nullable=False),
    sa.Column("dropped_user_ids", sa.Integer, nullable=False),
    sa.Column("llm_calls", sa.Integer, nullable=False, server_default="0"),
    sa.Column("retries", sa.Integer, nullable=False, server_default="0"),
    sa.Column("estimated_cost", sa.Float, nullable=False, server_default="0"),
)

DERIVED_TABLES = (partition_days, daily_summaries, historical_summaries, memory_context)

# `mempipe serve` (sql/migrations/0003_scheduler.*.sql): per-job state and the current leader,
# read by `mempipe status`. The APScheduler job store itself is in memory.
scheduler_state = sa.Table(
    "scheduler_state", metadata,
    sa.Column("job_id", sa.Text, primary_key=True),
    sa.Column("last_started_at", UtcDateTime),
    sa.Column("last_finished_at", UtcDateTime),
    sa.Column("last_outcome", sa.Text),
    sa.Column("last_error", sa.Text),
    sa.Column("last_ok_at", UtcDateTime),
    sa.Column("last_run_id", Id),
    sa.Column("last_report", JsonDocument),
    sa.Column("next_run_at", UtcDateTime),
)

scheduler_leader = sa.Table(
    "scheduler_leader", metadata,
    sa.Column("id", sa.Integer, sa.CheckConstraint("id = 1"), primary_key=True, autoincrement=False),
    sa.Column("holder", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("since", UtcDateTime, nullable=False),
    sa.Column("heartbeat_at", UtcDateTime, nullable=False),
    sa.Column("released_at", UtcDateTime),
)
