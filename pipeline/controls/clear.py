"""`clear` and `erase`: a user's memory removed from one scope or everywhere, and a user removed
from the database.

clear in scope S reaches what S's context of the user is built from (the audience rule,
`MergeInputs.source_partitions`): the user's daily and historical summaries, facts and in-chat
requests (`chat_requests`: a pending one is then never applied) of those partitions (without a
scope: all of them, `global` facts included), and the user's profiles and contexts that read one
of them. A `clear` exclusion window (until now) keeps the messages said
before it out of every later summary and fact, and the partition-days the user spoke in are
queued, so the next run makes the other speakers' summaries again without them. With
`include_history` the user's messages there are deleted too (pipeline.ingest.delete_messages).

erase = clear everywhere with the history, plus the user's names (`members`), forgotten facts,
exclusion windows, and every row of any table with the user's id (found by reflection); every
summary of a partition-day that quoted, mentioned or answered the user, the summaries and
contexts made from them, and other users' summaries, facts, profiles and contexts that name the
user are deleted and made again by the next run — where the name is gone, a mention reads as a
neutral placeholder, and so does the name typed as plain text in other members' messages posted
before the erase (erased_names keeps sha256 hashes of its words, pipeline/stages/erased.py). The
user's earlier audit rows are re-keyed to "erased:<hash>", and one audit row is added, with
counts only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from ..calendar import Scope, parse_scope
from ..clock import Clock, system_clock
from ..config import Settings
from ..ids import parse_id
from ..ingest import delete_messages
from ..ingest.deletion import partition_days_of
from ..stages.erased import name_word_keys
from ..stages.merge_inputs import MergeInputs
from ..summarize.text import STOPWORDS, names_person, tokens
from .audit import erased_key, record, requester_id
from .auth import authorize
from .pause import ANY


def _days(settings: Settings, messages: Iterable[dict]) -> set[tuple]:
    """The (partition, local day) of each message, as the daily stage cuts days."""
    return partition_days_of(messages, settings.timezones.for_guild)


def reach_of_clear(store, user_id: int, scope: Scope | None) -> tuple[set[str] | None, set[str] | None]:
    """The partitions whose summaries and facts of the user a clear in `scope` deletes, and the
    scopes whose profile and context of the user it deletes (None, None: everywhere)."""
    if scope is None:
        return None, None
    inputs = MergeInputs(store, [], [user_id])
    partitions = set(inputs.source_partitions(scope, user_id))
    held = {r["scope"] for r in store.contexts(user_id=user_id, text=False)}
    held |= {r["scope"] for r in store.profiles(user_id=user_id, text=False)}
    scopes = {s for s in held if partitions & set(inputs.source_partitions(parse_scope(s), user_id))}
    return partitions, scopes | {str(scope)}


def _delete_history(store, settings: Settings, user_id: int, messages: list[dict], requested_by: Any,
                    clock: Clock, conn) -> Counter:
    """The user's messages, deleted the way a bot's message-delete event deletes them
    (pipeline.ingest.delete_messages: their partition-days queued, facts resting only on them
    removed, other facts lose them as sources), inside the control's transaction. The audit row
    it writes about the user is folded into the control's own (its counts are in it)."""
    if not messages:
        return Counter()
    before = store.last_action_id(conn=conn)
    done = delete_messages(store, [(m["channel_id"], m["message_id"]) for m in messages], settings, clock=clock,
                           requested_by=requester_id(requested_by), conn=conn)
    store.drop_actions(str(user_id), after_id=before, conn=conn)
    return Counter({"chat_history": done["deleted"], "memory_facts": done["facts_deleted"] + done["facts_updated"]})


def clear(store, settings: Settings, user_id: Any, *, requested_by: Any, scope: str | Scope | None = None,
          include_history: bool = False, clock: Clock = system_clock) -> dict:
    """Delete the user's memory in `scope` (None: everywhere) and keep what they said before now
    out of later summaries there; with include_history also their messages there. One
    transaction. Returns {"user_id", "scope", "partitions" (None: all), "rows": counts per
    table}. Recorded in the audit ("clear")."""
    user_id = parse_id(user_id, "user_id")
    sc = parse_scope(scope) if isinstance(scope, str) else scope
    by = authorize(settings, "clear", user_id, requested_by)
    now = clock()
    partitions, scopes = reach_of_clear(store, user_id, sc)
    messages = [m for m in store.user_messages(user_id) if partitions is None or m["partition"] in partitions]
    spoke = _days(settings, messages) | {
        (r["partition"], r["day"]) for r in store.summaries_of_user(user_id)["daily_summaries"]
        if partitions is None or r["partition"] in partitions}
    windows = [ANY] if partitions is None else sorted(partitions)
    with store.transaction() as conn:
        store.lock_removals(conn)  # runs' write batches under way commit first; later ones see this clear
        counts = store.delete_user_rows(user_id, partitions, scopes, conn=conn)
        for where in windows:
            store.add_exclusion(user_id, where, "clear", None, now, now, conn=conn)
        counts["memory_exclusions"] += len(windows)
        counts["recompute_queue"] += store.enqueue_days(
            [{"partition": p, "day": d, "reason": "clear"} for p, d in spoke], now, conn=conn)
        if include_history:
            counts += _delete_history(store, settings, user_id, messages, requested_by, clock, conn)
        _drop_batch_requests(store, counts, conn)
        record(store, "clear", user_id, by, requested_by, None if sc is None else str(sc), now, counts, conn=conn,
               include_history=include_history)
    store.purge_deleted_text()
    return {"user_id": user_id, "scope": None if sc is None else str(sc),
            "partitions": None if partitions is None else sorted(partitions), "rows": dict(sorted(counts.items()))}


def _drop_batch_requests(store, counts, conn) -> None:
    """Batch mode's requests and answers (llm_batch_requests) quote chat text and summaries: every
    one not yet used goes (the simple safe rule; a later run asks again for what it still needs)."""
    if dropped := store.drop_batch_requests(conn=conn):
        counts["llm_batch_requests"] += dropped


def _name_words(names: Iterable[str]) -> set[str]:
    """Words a text must contain to name someone by one of `names` (names_person's rule)."""
    out = set()
    for name in names:
        own = set(tokens(name))
        out |= (own - STOPWORDS) or own
    return out


def erase(store, settings: Settings, user_id: Any, *, requested_by: Any, clock: Clock = system_clock) -> dict:
    """Erase the user: everything `clear` removes everywhere, their messages, their names,
    forgotten facts and exclusion windows, every row with their id, and other users' rows that
    quote or name them (made again, without them, by the next run). Leaves one audit row without
    personal data: subject "erased:<hash>", no requester when the user asked. One transaction.
    Returns {"subject_key", "rows": counts per table}."""
    user_id = parse_id(user_id, "user_id")
    by = authorize(settings, "erase", user_id, requested_by)
    now = clock()
    known = store.member_names([user_id])
    names = sorted({n for n in known.values() if n})
    messages = store.user_messages(user_id)
    days = _days(settings, messages) | _days(settings, store.messages_naming_user(user_id))
    days |= {(r["partition"], r["day"]) for r in store.summaries_of_user(user_id)["daily_summaries"]}
    key = erased_key(user_id)
    with store.transaction() as conn:
        store.lock_removals(conn)  # runs' write batches under way commit first; later ones see this erase
        counts = _delete_history(store, settings, user_id, messages, requested_by, clock, conn)
        named_in = {p for p, _u in known} | {m["partition"] for m in messages}
        erased, redo = store.erase_user_rows(
            user_id, days=days, name_words=_name_words(names), names=lambda text: names_person(text, names),
            named_in=named_in, subject_key=key, conn=conn)
        counts += erased
        # others' chat keeps the name as they typed it: runs read it as "someone" (stages/erased.py)
        counts["erased_names"] += store.add_erased_names(named_in, name_word_keys(names), now, conn=conn)
        counts["recompute_queue"] += store.enqueue_days(
            [{"partition": p, "day": d, "reason": "erase"} for p, d in redo], now, conn=conn)
        _drop_batch_requests(store, counts, conn)
        # ended worker jobs (pipeline/workers/) keep their arguments, user ids among them
        counts["procrastinate_jobs"] += store.queue_drop_ended(settings.workers.queue, conn=conn)
        counts["error_texts"] += store.rekey_error_texts(user_id, key, conn=conn)  # a failed job's error may name U
        rows = {k: v for k, v in sorted(counts.items()) if v}
        store.record_action("erase", key, None if by in ("subject", "operator") else requester_id(requested_by),
                            None, now, sum(rows.values()), {"by": by, "rows": rows}, conn=conn)
    store.purge_deleted_text()
    return {"subject_key": key, "rows": rows}
