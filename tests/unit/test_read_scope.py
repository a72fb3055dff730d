"""get_context checks a scope without building parse_scope's objects (pipeline/read.py
_check_scope): it must accept exactly what parse_scope accepts, and refuse the rest with
parse_scope's own ScopeError, every time (a refusal is never cached)."""

from __future__ import annotations

import random

import pytest

from pipeline import read
from pipeline.calendar import parse_scope
from pipeline.errors import ScopeError

EDGES = ["guild:1150000000000000001", "channel:1", "dm:0", "guild:0", "guild:9223372036854775807",
         "guild:9223372036854775808", "dm:9999999999999999999", "channel:10000000000000000000", "guild:00",
         "guild:0009", "guild:", "guild:12a", "Guild:1", "guild:1\n", "guild:١٢", "guild:²", "dm:1:2", " guild:1",
         "thread:1", "guild:+5", "guild:1_000", ":1", "", "guild:１２"]


def _parse_scope_accepts(scope: str) -> bool:
    try:
        parse_scope(scope)
    except ScopeError:
        return False
    return True


def _checked(scope: str) -> bool:
    try:
        read._check_scope(scope)
    except ScopeError:
        return False
    return True


def _random_scopes(n: int):
    rng = random.Random(14)
    kinds = ["guild", "channel", "dm", "gild", "DM", ""]
    digits = "0123456789" * 3 + "²١: a"
    for _ in range(n):
        ident = "".join(rng.choice(digits) for _ in range(rng.choice([0, 1, 2, 18, 19, 19, 19, 20])))
        yield f"{rng.choice(kinds)}:{ident}"


@pytest.mark.parametrize("scope", EDGES)
def test_the_read_scope_check_agrees_with_parse_scope(scope):
    read._check_scope.cache_clear()
    for _ in range(2):  # the second time from the cache, or refused again
        assert _checked(scope) is _parse_scope_accepts(scope)


def test_the_read_scope_check_agrees_with_parse_scope_on_random_scopes():
    read._check_scope.cache_clear()
    scopes = list(_random_scopes(5_000))
    assert sum(map(_parse_scope_accepts, scopes)) > 500  # both answers are well represented
    assert [s for s in scopes if _checked(s) is not _parse_scope_accepts(s)] == []


def test_a_refused_scope_says_what_to_use():
    with pytest.raises(ScopeError, match="guild:<guild_id>, channel:<channel_id> or dm:<channel_id>"):
        read._check_scope("guild:0009")
    with pytest.raises(ScopeError, match="2\\*\\*63"):
        read._check_scope("guild:9223372036854775808")
