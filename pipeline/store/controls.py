"""User controls: exclusion windows, the audit trail, the recompute queue, message deletion.

sql/migrations/0006_user_controls.*.sql made the tables:
- memory_exclusions: messages of a user not summarised or mined for facts — in one partition
  (`scope`) or every one ("*"), with from_ts <= ts < until_ts (NULL: open). The daily stage
  reads them once per run (pipeline/stages/exclusions.py).
- control_actions: one row per control (who asked, about whom, where, when, how many rows), never
  a text.
- recompute_queue: partition-days the next run recomputes whatever their age (pipeline/runner.py
  `plan_run`); a run removes a row when it has done the day (`write_batch(done_queued=…)`).

sql/migrations/0016 made erased_names: sha256 hashes of erased users' name words per partition,
which the daily stage blanks in older chat (pipeline/stages/erased.py).

Writes take an optional `conn`: inside a caller's transaction (`store.transaction()`: a message
deletion, an import with deletion rows, a control that writes several tables) they add to it;
without one, each is its own transaction.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import defaultdict
from typing import Collection, Iterable, Iterator, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.tables import chat_history, control_actions, erased_names, memory_exclusions, memory_facts, recompute_queue
from ..errors import ErasedDuringRun, RemovedDuringRun
from .base import chunks, insert_for, select_in
from .locks import lock_key

EXCLUSION_KINDS = ("pause", "clear")
ANY_PARTITION = "*"
# what a message lookup returns: enough to queue its partition-day and to audit its author
MESSAGE_KEYS = ("channel_id", "message_id", "partition", "guild_id", "user_id", "ts")
# Controls that remove and a run's writes (PostgreSQL): an erase, a forget, a clear and a deletion
# hold it exclusively for their transaction, each write batch shares it, so a control
# waits for the batches under way to commit (and then removes what they wrote) and a batch that
# comes after it sees it (`refuse_after_removal`).
REMOVAL_LOCK = lock_key("mempipe:erase")
# control_actions kinds that remove what a run may have read: recorded in the control's own transaction
# a pause starts now: it removes nothing a run under way has read, and is not among them
STOPPING = ("erase", "forget", "clear")  # a run that read before one writes nothing more
DELETION = "delete_messages"  # frequent (a bot's delete events): the run goes on, its facts checked
_SINCE = sa.select(control_actions.c.id, control_actions.c.action).where(
    control_actions.c.id > sa.bindparam("marker"), control_actions.c.action.in_([*STOPPING, DELETION]))


def refuse_after_removal(conn: Connection, marker: int | None, own: Collection[int] = ()) -> bool:
    """Inside a write batch's transaction, the controls recorded after `marker` (the newest
    control_actions id when the run began; None: no check), but the run's own (`own`: an in-chat
    forget it applied, whose effect it has read since). ErasedDuringRun after an erase,
    RemovedDuringRun after a forget or clear: a run that read a user's rows before one would
    otherwise write back what it removed, for good (facts are not made again from messages alone,
    and a global fact reaches every guild). True when messages were deleted since: the batch's
    facts are then checked against the messages still stored (store/facts.py apply_fact_plan)."""
    if marker is None:
        return False
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock_shared(REMOVAL_LOCK)))
    elif not conn.connection.dbapi_connection.in_transaction:
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # SQLite: the check and the writes under one write lock
    since = {action for id_, action in conn.execute(_SINCE, {"marker": marker}) if id_ not in own}
    stop_for(since)
    return DELETION in since


def stop_for(actions: Collection[str]) -> None:
    """The error that stops a run which read before these controls (shared with the in-memory store)."""
    if "erase" in actions:
        raise ErasedDuringRun("a user was erased while this run was working: it stops without writing what it "
                              "made since (it may hold their data); run it again to make it without them")
    if stopped := sorted(set(actions) & set(STOPPING)):
        raise RemovedDuringRun(f"a {' and a '.join(stopped)} of a user's memory was recorded while this run was "
                               "working: it stops without writing what it made since (it may hold what was "
                               "removed); run it again to make the rest")


class ControlsStorage(Protocol):
    def last_control_id(self) -> int: ...
    def lock_removals(self, conn: Connection) -> None: ...
    def exclusions(self, user_ids: Iterable[int] | None = None) -> list[dict]: ...
    def add_exclusion(self, user_id: int, scope: str, kind: str, from_ts: dt.datetime | None,
                      until_ts: dt.datetime | None, now: dt.datetime, *, conn: Connection | None = None) -> int: ...
    def end_exclusions(self, user_id: int, scope: str, kind: str | None, until_ts: dt.datetime, *,
                       conn: Connection | None = None) -> int: ...
    def record_action(self, action: str, subject_key: str, requested_by: int | None, scope: str | None,
                      at: dt.datetime, rows_affected: int, detail: dict, *, conn: Connection | None = None) -> int: ...
    def actions(self, subject_key: str | None = None) -> list[dict]: ...
    def enqueue_days(self, rows: Iterable[dict], now: dt.datetime, *, conn: Connection | None = None) -> int: ...
    def erased_names(self) -> list[dict]: ...
    def add_erased_names(self, partitions: Iterable[str], word_keys: Iterable[str], at: dt.datetime, *,
                         conn: Connection | None = None) -> int: ...
    def queued_days(self) -> list[dict]: ...
    def dequeue_days(self, keys: Iterable[tuple], *, conn: Connection | None = None) -> int: ...
    def find_messages(self, keys: Iterable[tuple[int, int]] = (), message_ids: Iterable[int] = (), *,
                      conn: Connection | None = None) -> list[dict]: ...
    def user_messages(self, user_id: int, *, partition: str | None = None, from_ts: dt.datetime | None = None,
                      until_ts: dt.datetime | None = None, conn: Connection | None = None) -> list[dict]: ...
    def delete_message_rows(self, keys: Iterable[tuple[int, int]], *, conn: Connection | None = None) -> int: ...
    def drop_fact_sources(self, partitions: Iterable[str], sources: Iterable[str], *,
                          conn: Connection | None = None) -> dict[int, dict[str, int]]: ...


def message_key(source: str) -> tuple[int, int] | None:
    """(channel id, message id) of a fact's message source ("channel:message"); None for the
    others ("manual", "chat")."""
    channel, sep, message = source.partition(":")
    return (int(channel), int(message)) if sep and channel.isdigit() and message.isdigit() else None


def cited_messages(rows: Iterable[dict]) -> set[tuple[int, int]]:
    """The (channel id, message id) keys the facts `rows` cite."""
    return {k for r in rows for s in r["sources"] if (k := message_key(s)) is not None}


def still_sourced(rows: Iterable[dict], stored: Collection[tuple[int, int]]) -> list[dict]:
    """Facts about to be written after a deletion (shared with the in-memory store): each keeps
    only the message sources among `stored` (keys, as `cited_messages` gives them); one that
    cited messages and has none left is dropped. Other sources stay."""
    out = []
    for r in rows:
        kept = [s for s in r["sources"] if (k := message_key(s)) is None or k in stored]
        if kept and len(kept) < len(r["sources"]):
            r = {**r, "sources": kept}
        if kept:
            out.append(r)
    return out


def without_sources(facts: Iterable[dict], gone: set[str]) -> tuple[list[int], dict[int, list[str]], dict[int, dict[str, int]]]:
    """What a deletion does to facts (shared with the in-memory store): the ids of those resting
    only on `gone` messages (deleted), the new sources of those that keep others (updated), and
    per user {"facts_deleted": n, "facts_updated": n}."""
    deleted, updated = [], {}
    counts: dict[int, dict[str, int]] = defaultdict(lambda: {"facts_deleted": 0, "facts_updated": 0})
    for f in facts:
        sources = list(f["sources"] or [])
        kept = [s for s in sources if s not in gone]
        if len(kept) == len(sources):
            continue
        if kept:
            updated[f["id"]] = kept
            counts[f["user_id"]]["facts_updated"] += 1
        else:
            deleted.append(f["id"])
            counts[f["user_id"]]["facts_deleted"] += 1
    return deleted, updated, dict(counts)


def queue_key(key: tuple) -> tuple[str, dt.date, dt.datetime | None]:
    """(partition, day) or (partition, day, queued_at as the run read it)."""
    return (key[0], key[1], key[2] if len(key) > 2 else None)


class ControlsStore:
    # ------------------------------------------------------------------ exclusions

    def exclusions(self, user_ids: Iterable[int] | None = None) -> list[dict]:
        """Exclusion windows (every user's, or some users'), oldest first."""
        c = memory_exclusions.c
        q = sa.select(memory_exclusions).order_by(c.id)
        if user_ids is None:
            return self.rows("reading exclusions", q)
        rows = self.rows_in("reading exclusions", lambda ids: q.where(c.user_id.in_(ids)), user_ids)
        return sorted(rows, key=lambda r: r["id"])

    def add_exclusion(self, user_id: int, scope: str, kind: str, from_ts: dt.datetime | None,
                      until_ts: dt.datetime | None, now: dt.datetime, *, conn: Connection | None = None) -> int:
        """A window of the user's messages in `scope` (a partition, or "*") that runs leave out."""
        if kind not in EXCLUSION_KINDS:
            raise ValueError(f"unknown exclusion kind {kind!r} (use pause or clear)")
        with self.writing_in("recording an exclusion", conn) as c:
            return c.execute(sa.insert(memory_exclusions).values(
                user_id=user_id, scope=scope, kind=kind, from_ts=from_ts, until_ts=until_ts, created_at=now,
            ).returning(memory_exclusions.c.id)).scalar_one()

    def end_exclusions(self, user_id: int, scope: str, kind: str | None, until_ts: dt.datetime, *,
                       conn: Connection | None = None) -> int:
        """Close the user's open windows of `scope` (of `kind`, or any kind): a resume. Returns
        how many were open."""
        c = memory_exclusions.c
        where = [c.user_id == user_id, c.scope == scope, c.until_ts.is_(None)]
        if kind is not None:
            where.append(c.kind == kind)
        with self.writing_in("ending exclusions", conn) as cx:
            return cx.execute(sa.update(memory_exclusions).where(*where).values(until_ts=until_ts)).rowcount

    # ------------------------------------------------------------------ the audit trail

    def last_control_id(self) -> int:
        """The newest control_actions id (0: none yet): a run's marker (refuse_after_removal)."""
        with self.reading("reading control actions") as conn:
            return conn.execute(sa.select(sa.func.max(control_actions.c.id))).scalar() or 0

    def lock_removals(self, conn: Connection) -> None:
        """First in a removing control's transaction (erase, forget, clear, deletion): wait
        for the write batches under way (REMOVAL_LOCK), and on SQLite take the write lock before
        the control reads what it removes."""
        if conn.dialect.name == "postgresql":
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(REMOVAL_LOCK)))
        elif not conn.connection.dbapi_connection.in_transaction:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    def record_action(self, action: str, subject_key: str, requested_by: int | None, scope: str | None,
                      at: dt.datetime, rows_affected: int, detail: dict, *, conn: Connection | None = None) -> int:
        with self.writing_in("recording a control action", conn) as c:
            return c.execute(sa.insert(control_actions).values(
                action=action, subject_key=subject_key, requested_by=requested_by, scope=scope, at=at,
                rows_affected=rows_affected, detail=detail,
            ).returning(control_actions.c.id)).scalar_one()

    def actions(self, subject_key: str | None = None) -> list[dict]:
        """Control actions (of one subject, or all), oldest first."""
        c = control_actions.c
        q = sa.select(control_actions).order_by(c.id)
        if subject_key is not None:
            q = q.where(c.subject_key == subject_key)
        return self.rows("reading control actions", q)

    # ------------------------------------------------------------------ the recompute queue

    def enqueue_days(self, rows: Iterable[dict], now: dt.datetime, *, conn: Connection | None = None) -> int:
        """Queue {partition, day, reason} rows for the next run; a day queued again gets the new
        reason and time (a run that read the older entry then leaves it queued)."""
        rows = {(r["partition"], r["day"]): {"partition": r["partition"], "day": r["day"], "reason": r["reason"],
                                             "queued_at": now} for r in rows}
        if not rows:
            return 0
        with self.writing_in("queueing partition-days", conn) as c:
            stmt = insert_for(c)(recompute_queue)
            c.execute(stmt.on_conflict_do_update(
                index_elements=[recompute_queue.c.partition, recompute_queue.c.day],
                set_={"reason": stmt.excluded.reason, "queued_at": stmt.excluded.queued_at}),
                [rows[k] for k in sorted(rows)])
        return len(rows)

    def erased_names(self) -> list[dict]:
        """Every erased name word's key, by partition, with when it was erased."""
        c = erased_names.c
        return self.rows("reading erased names", sa.select(erased_names).order_by(c.partition, c.word_key))

    def add_erased_names(self, partitions: Iterable[str], word_keys: Iterable[str], at: dt.datetime, *,
                         conn: Connection | None = None) -> int:
        """Each word key erased in each partition as of `at` (a word erased again: the later time)."""
        rows = [{"partition": p, "word_key": k, "erased_at": at} for p in sorted(set(partitions))
                for k in sorted(set(word_keys))]
        if not rows:
            return 0
        with self.writing_in("recording erased names", conn) as c:
            stmt = insert_for(c)(erased_names)
            c.execute(stmt.on_conflict_do_update(index_elements=[erased_names.c.partition, erased_names.c.word_key],
                                                 set_={"erased_at": stmt.excluded.erased_at}), rows)
        return len(rows)

    def queued_days(self) -> list[dict]:
        c = recompute_queue.c
        return self.rows("reading the recompute queue", sa.select(recompute_queue).order_by(c.partition, c.day))

    def dequeue_days(self, keys: Iterable[tuple], *, conn: Connection | None = None) -> int:
        """Remove (partition, day) entries; an entry given with the queued_at a run read is
        removed only when it was not queued again since."""
        with self.writing_in("dequeueing partition-days", conn) as c:
            return dequeue_in(c, keys)

    # ------------------------------------------------------------------ messages

    def find_messages(self, keys: Iterable[tuple[int, int]] = (), message_ids: Iterable[int] = (), *,
                      conn: Connection | None = None) -> list[dict]:
        """Stored messages by (channel id, message id), and every stored message with one of
        `message_ids` (in any channel): MESSAGE_KEYS, in (channel, message) order."""
        c = chat_history.c
        cols = [c[k] for k in MESSAGE_KEYS]
        by_channel: dict[int, list[int]] = defaultdict(list)
        for channel_id, message_id in keys:
            by_channel[channel_id].append(message_id)
        with self._reading_in("reading messages", conn) as cx:
            found = {}
            for channel_id, ids in sorted(by_channel.items()):
                for r in select_in(cx, lambda chunk, ch=channel_id: sa.select(*cols).where(
                        c.channel_id == ch, c.message_id.in_(chunk)), ids):
                    found[(r.channel_id, r.message_id)] = dict(r._mapping)
            for r in select_in(cx, lambda chunk: sa.select(*cols).where(c.message_id.in_(chunk)), message_ids):
                found[(r.channel_id, r.message_id)] = dict(r._mapping)
        return [found[k] for k in sorted(found)]

    def user_messages(self, user_id: int, *, partition: str | None = None, from_ts: dt.datetime | None = None,
                      until_ts: dt.datetime | None = None, conn: Connection | None = None) -> list[dict]:
        """A user's stored messages (MESSAGE_KEYS) in a partition (None: every one) with
        from_ts <= ts < until_ts (None: open), in time order."""
        c = chat_history.c
        q = sa.select(*[c[k] for k in MESSAGE_KEYS]).where(c.user_id == user_id)
        if partition is not None:
            q = q.where(c.partition == partition)
        if from_ts is not None:
            q = q.where(c.ts >= from_ts)
        if until_ts is not None:
            q = q.where(c.ts < until_ts)
        with self._reading_in("reading a user's messages", conn) as cx:
            return [dict(r._mapping) for r in cx.execute(q.order_by(c.ts, c.channel_id, c.message_id))]

    def delete_message_rows(self, keys: Iterable[tuple[int, int]], *, conn: Connection | None = None) -> int:
        """Delete chat_history rows by (channel id, message id); returns how many were there."""
        c = chat_history.c
        by_channel: dict[int, list[int]] = defaultdict(list)
        for channel_id, message_id in keys:
            by_channel[channel_id].append(message_id)
        with self.writing_in("deleting messages", conn) as cx:
            return sum(cx.execute(sa.delete(chat_history).where(c.channel_id == ch, c.message_id.in_(chunk))).rowcount
                       for ch, ids in sorted(by_channel.items()) for chunk in chunks(ids))

    def drop_fact_sources(self, partitions: Iterable[str], sources: Iterable[str], *,
                          conn: Connection | None = None) -> dict[int, dict[str, int]]:
        """Facts of `partitions` lose the `sources` ("channel:message"): a fact resting only on
        them is deleted, one with other sources keeps those. Returns per user
        {"facts_deleted": n, "facts_updated": n}."""
        gone = set(sources)
        if not gone:
            return {}
        c = memory_facts.c
        with self.writing_in("removing facts of deleted messages", conn) as cx:
            facts = [dict(r._mapping) for r in select_in(
                cx, lambda chunk: sa.select(c.id, c.user_id, c.sources).where(c.partition.in_(chunk)), partitions)]
            deleted, updated, counts = without_sources(facts, gone)
            for chunk in chunks(deleted):
                cx.execute(sa.delete(memory_facts).where(c.id.in_(chunk)))
            for fact_id, kept in sorted(updated.items()):
                cx.execute(sa.update(memory_facts).where(c.id == fact_id).values(sources=kept))
            return counts

    @contextlib.contextmanager
    def _reading_in(self, op: str, conn: Connection | None) -> Iterator[Connection]:
        if conn is not None:
            yield conn
        else:
            with self.reading(op) as own:
                yield own


def dequeue_in(conn: Connection, keys: Iterable[tuple]) -> int:
    """dequeue_days inside the caller's transaction (write_batch)."""
    c = recompute_queue.c
    done = 0
    for partition, day, queued_at in sorted({queue_key(k) for k in keys}, key=lambda k: k[:2]):
        where = [c.partition == partition, c.day == day]
        if queued_at is not None:
            where.append(c.queued_at <= queued_at)
        done += conn.execute(sa.delete(recompute_queue).where(*where)).rowcount
    return done

