"""Who may act on a user's memory (pipeline/controls/auth.py) and `[controls] admins`."""

from __future__ import annotations

import hashlib
import os
import pickle

import pytest

from pipeline.config import load_settings
from pipeline.controls import OPERATOR, PermissionDenied, authorize, erased_key
from pipeline.controls.audit import action_row, audit_line
from pipeline.errors import ConfigError, IdError, MempipeError

ANA, CY, DEE = 1160000000000000001, 1160000000000000003, 1160000000000000004


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("MEMPIPE_"):
            monkeypatch.delenv(name)


def settings_with(tmp_path, text: str):
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path)


def test_no_admins_by_default_and_ids_by_the_one_rule(tmp_path, monkeypatch):
    assert load_settings().controls.admins == []
    assert settings_with(tmp_path, f'[controls]\nadmins = [{CY}, "{DEE}"]\n').controls.admins == [CY, DEE]
    monkeypatch.setenv("MEMPIPE_CONTROLS__ADMINS", f"[{ANA}]")
    assert load_settings().controls.admins == [ANA]
    monkeypatch.delenv("MEMPIPE_CONTROLS__ADMINS")
    for bad in ("[1.16e18]", "[-1]", '["1_000"]', "[true]", "42"):
        with pytest.raises(ConfigError, match="controls.admins"):
            settings_with(tmp_path, f"[controls]\nadmins = {bad}\n")
    with pytest.raises(ConfigError, match="controls.admin: not a setting"):
        settings_with(tmp_path, "[controls]\nadmin = [1]\n")


def test_the_subject_an_admin_and_the_operator_may_anyone_else_may_not(tmp_path):
    settings = settings_with(tmp_path, f"[controls]\nadmins = [{CY}]\n")
    assert authorize(settings, "clear", ANA, ANA) == "subject"
    assert authorize(settings, "clear", ANA, str(ANA)) == "subject"
    assert authorize(settings, "clear", ANA, CY) == "admin"
    assert authorize(settings, "clear", ANA, OPERATOR) == "operator"
    assert authorize(None, "export", ANA, OPERATOR) == "operator"
    with pytest.raises(PermissionDenied, match=f"user {DEE} may not clear the memory of user {ANA}") as err:
        authorize(settings, "clear", ANA, DEE)
    assert isinstance(err.value, MempipeError)
    with pytest.raises(PermissionDenied):
        authorize(None, "export", ANA, CY)  # no settings: no admins
    for bad in (None, 1.5, "OPERATOR", "operator", True, -1):
        with pytest.raises(IdError):
            authorize(settings, "clear", ANA, bad)


def test_operator_is_one_object():
    assert repr(OPERATOR) == "OPERATOR"
    assert pickle.loads(pickle.dumps(OPERATOR)) is OPERATOR


def test_audit_rows_hold_counts_and_roles_never_text():
    import datetime as dt

    at = dt.datetime(2026, 11, 5, 12, tzinfo=dt.timezone.utc)
    row = action_row("clear", ANA, "admin", CY, "guild:1", at, {"memory_facts": 2, "daily_summaries": 0})
    assert row == {"action": "clear", "subject_key": str(ANA), "requested_by": CY, "scope": "guild:1", "at": at,
                   "rows_affected": 2, "detail": {"by": "admin", "rows": {"memory_facts": 2}}}
    assert action_row("pause", ANA, "operator", OPERATOR, None, at, {})["requested_by"] is None
    assert audit_line(row | {"id": 1}) == (f"2026-11-05 12:00:00 UTC  clear    guild:1  by admin {CY}  "
                                           "(memory_facts 2)")
    assert erased_key(ANA) == "erased:" + hashlib.sha256(str(ANA).encode()).hexdigest()[:16]
