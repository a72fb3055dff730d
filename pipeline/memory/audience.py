"""The audience rule, pure: which partitions a reader in scope S may see of user U's memory
(ARCHITECTURE.md, "scope"). One function, so the merge stage (which reads the whole audience data
of a run in bulk, pipeline/stages/merge.py) and search (which asks the database three point
questions, pipeline/search/find.py) cannot drift apart:

  guild:G   <- guild:G
  channel:C <- channel:C and guild:G (C's guild)
  dm:D      <- dm:D, plus the user's own rows from every partition they posted in, but only when
               D is a one-to-one conversation the user posted in and at most one person spoke in;
               a group DM, or one whose kind the input never stated, gets dm:D alone (fail closed).

A fact of level `global` follows its user into every scope on top of these partitions (the
callers add it: pipeline/memory/profile.py `visible`, views.py `facts_for`, the search query).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ..calendar import Scope


def is_one_to_one(channel: Mapping | None, speakers: int) -> bool:
    """A DM is private only when the input said it is one-to-one (and never that it is a group)
    and at most one person has written in it; an unknown DM, or one whose kind was never stated,
    is not. `channel`: its channels row (one_to_one, is_group), None when unknown."""
    if channel is None or not channel["one_to_one"] or channel["is_group"]:
        return False
    return speakers <= 1


def narrowed_dm(old: Mapping, new: Mapping) -> bool:
    """A DM's channels row that said one-to-one (and never a group) and now does not: what was
    made for it as one-to-one (its contexts and profiles, read from the writer's other partitions)
    must go (sql/migrations/0025_dm_narrowed.*.sql)."""
    return (new["visibility"] == "dm" and bool(old["one_to_one"]) and not old["is_group"]
            and (bool(new["is_group"]) or not new["one_to_one"]))


def source_partitions(scope: Scope, user_id: int, *, guild_of: Callable[[str], int | None],
                      is_private_dm: Callable[[str], bool],
                      user_partitions: Callable[[int], Sequence[str]]) -> list[str]:
    """The partitions a context (or a search) for `user_id` in `scope` reads, the scope's own first.

    guild_of(partition): the guild of a guild or channel partition (None when unknown);
    is_private_dm(partition): see `is_one_to_one`; user_partitions(user_id): every partition the
    user has posted in. Each is asked only when the rule needs it (a search runs them as point
    queries)."""
    own = str(scope)
    if scope.kind == "guild":
        return [own]
    if scope.kind == "channel":
        guild_id = guild_of(own)
        return [own] + ([f"guild:{guild_id}"] if guild_id is not None else [])
    # the user's own one-to-one DM only: the one person who has written in it is this user
    # (a context of anyone else there reads the DM alone — its reader is the DM's owner)
    if is_private_dm(own):
        mine = user_partitions(user_id)
        if own in mine:
            return [own] + [p for p in mine if p != own]
    return [own]
