"""What merges read, in bulk (pipeline/stages/merge.py): the audience data, each user's facts,
profiles, day-1 dailies, historical rows, names and context state — for a whole run, or
narrowed to some users with the same queries."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..calendar import Scope
from ..memory.audience import is_one_to_one, source_partitions
from ..memory.profile import UserFacts
from ..store import StageStorage
from ..store.derived import CONTEXT_STATE

# What a merge reads of a fact (memory/profile.py; with id and user_id): not its sources (JSON,
# decoded row by row: about half of reading a run's facts on PostgreSQL), input hash or times.
MERGED_FACT_COLUMNS = ("partition", "level", "category", "text", "fact_key", "confidence", "event_day",
                       "first_seen", "last_seen", "status", "superseded_on", "origin")

@dataclass(frozen=True)
class Audience:
    """Who can read what, for every user: the channels and how many people spoke in each DM."""
    channels: dict[int, dict]
    dm_speakers: dict[str, int]


class MergeInputs:
    """What merges read, in bulk: for a whole run (every user), or narrowed to some users with
    the same queries (a remember / forget refreshes one user's contexts; a worker's merge job and
    a merge stage spread over processes read each group's users' inputs)."""

    def __init__(self, store: StageStorage, day1s: Iterable[dt.date], user_ids: Iterable[int] | None = None,
                 *, audience: Audience | None = None, fact_columns: Sequence[str] | None = None,
                 plan_only: bool = False):
        """`audience`: the audience data (`.audience`) of inputs read earlier in this run, used
        instead of reading it again (it is every user's, however few users these are for).
        `fact_columns`: read only these of each fact (MERGED_FACT_COLUMNS: inputs for merges only).
        `plan_only`: what planning merges needs (the keys of dailies, historicals and contexts, each
        fact's partition, the audience), not what merging reads: no profiles, no names, facts'
        partitions only — a run whose merges are shared out plans them with these, and every group
        reads its own inputs (reading all of them first took 3.9 s of a 1M-message run, in one process
        while the others waited)."""
        self.store = store
        users = None if user_ids is None else sorted(set(user_ids))
        # Narrowed to some users with no audience given (a control, an in-chat request, a worker's
        # merge group): the channels and DM speaker counts the audience rule asks about, read when
        # it asks (`_audience_of`), not every channel and every DM's speakers — those were a pass
        # over every DM message for each `facts remember` / `forget` (0.27 of 0.33 s at 1M messages).
        self._narrowed = audience is None and users is not None
        self._asked: set[str] = set()  # partitions whose audience rows were read (narrowed)
        self._listed: set[str] = set()  # users' partitions listed since (read with the next question)
        if audience is not None:
            self.channels, self.dm_speakers = audience.channels, audience.dm_speakers
        elif self._narrowed:
            self.channels, self.dm_speakers = {}, {}
        else:
            self.channels, self.dm_speakers = store.channels(), store.dm_speaker_counts()
        self.fact_rows: dict[int, list[dict]] = defaultdict(list)
        for r in store.memory_facts(user_ids=users, columns=("partition",) if plan_only else fact_columns):
            self.fact_rows[r["user_id"]].append(r)
        # with their texts: a merge whose profile is unchanged uses the stored one (stages/merge.py
        # `_Profile`) instead of choosing and rendering it again, night after night
        prows = () if plan_only else store.profiles(user_ids=users)
        self.profiles = {(r["scope"], r["user_id"]): r for r in prows}
        self._until = max(day1s, default=None)
        self._last_active: dict[int, list[tuple[str, dt.date]]] | None = None
        self.daily = {(r["partition"], r["day"], r["user_id"]): r for r in store.dailies(day1s, user_ids=users)}
        self.hist = {(r["partition"], r["day"], r["user_id"]): r for r in store.historicals(day1s, user_ids=users)}
        self.names = {} if plan_only else store.member_names(users)
        rows = store.contexts(text=False, user_ids=users)
        self.contexts = {(r["scope"], r["user_id"]): {k: r.get(k) for k in CONTEXT_STATE} for r in rows}
        self._user_partitions: dict[int, list[str]] = {}
        self._user_facts: dict[int, UserFacts] = {}

    @property
    def audience(self) -> Audience:
        """Every user's audience data (read in full here if these inputs were narrowed)."""
        if self._narrowed:
            self.channels, self.dm_speakers = self.store.channels(), self.store.dm_speaker_counts()
            self._narrowed = False
        return Audience(self.channels, self.dm_speakers)

    def _audience_of(self, partition: str) -> None:
        """Narrowed inputs: read the audience rows of `partition` unless read already — with those
        of the users' partitions listed since (`preload_user_partitions`: the callers list the
        users whose DM scopes the rule will ask about), in one read, not one per question."""
        if not self._narrowed or partition in self._asked:
            return
        wanted = ({partition} | self._listed) - self._asked
        self._asked |= wanted
        self._listed.clear()
        ids = {int(p.partition(":")[2]) for p in wanted if p.startswith(("channel:", "dm:"))}
        if ids:
            self.channels.update(self.store.channels(sorted(ids)))
        if dms := sorted(p for p in wanted if p.startswith("dm:")):
            self.dm_speakers.update(self.store.dm_speaker_counts(dms))

    def user_facts(self, user_id: int) -> UserFacts:
        """The user's facts, indexed once for all their scopes (memory/profile.py `UserFacts`)."""
        if user_id not in self._user_facts:
            self._user_facts[user_id] = UserFacts(self.fact_rows.get(user_id, ()))
        return self._user_facts[user_id]

    def preload_user_partitions(self, user_ids: Iterable[int]) -> None:
        # membership per id, not `set(...) - set(self._user_partitions)`: called once per merge,
        # copying every known user each time was quadratic (51 s of a 1M-message run's merges)
        wanted = {u for u in user_ids if u not in self._user_partitions}
        if wanted:
            found = self.store.partitions_of_users(wanted)
            self._user_partitions.update({u: found.get(u, []) for u in wanted})
            if self._narrowed:
                self._listed.update(p for ps in found.values() for p in ps)

    def user_partitions(self, user_id: int) -> list[str]:
        self.preload_user_partitions([user_id])
        return self._user_partitions[user_id]

    def guild_of(self, partition: str) -> int | None:
        kind, _, ident = partition.partition(":")
        if kind == "guild":
            return int(ident)
        if kind == "channel":
            self._audience_of(partition)
            row = self.channels.get(int(ident))
            return row["guild_id"] if row else None
        return None

    def is_private_dm(self, partition: str) -> bool:
        """One-to-one only when the input said so (and never that it is a group) and at most one
        person has written in it; an unknown DM, or one whose kind was never stated, is not."""
        self._audience_of(partition)
        return is_one_to_one(self.channels.get(int(partition.partition(":")[2])), self.dm_speakers.get(partition, 0))

    def source_partitions(self, scope: Scope, user_id: int) -> list[str]:
        """The audience rule (pipeline/memory/audience.py) over this run's bulk audience data."""
        return source_partitions(scope, user_id, guild_of=self.guild_of, is_private_dm=self.is_private_dm,
                                 user_partitions=self.user_partitions)

    def last_active(self, sources: list[str], user_id: int, as_of: dt.date, facts: list[dict]) -> dt.date | None:
        """The user's latest day with a summary in these partitions (or, once summaries are gone,
        the latest day a fact they may read was said), up to as_of."""
        if self._last_active is None:
            self._last_active = defaultdict(list)
            found = self.store.last_active_days(self._until or as_of, sorted(self.fact_rows))
            for (p, u), d in found.items():
                self._last_active[u].append((p, d))
        allowed = set(sources)
        days = [d for p, d in self._last_active.get(user_id, ()) if p in allowed and d <= as_of]
        days += [r["last_seen"] for r in facts if r["last_seen"] <= as_of]
        return max(days, default=None)

    def name(self, scope: Scope | str, user_id: int) -> str | None:
        """The user's display name in the scope's own partition (a one-to-one DM: the DM's own)."""
        return self.names.get((str(scope), user_id))


