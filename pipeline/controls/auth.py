"""Who may act on a user's memory: the user themselves, a configured admin
(`[controls] admins`), or the operator (the CLI). Checked before anything is read or written."""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..errors import MempipeError
from ..ids import parse_id


class PermissionDenied(MempipeError):
    """The requester is neither the subject of the control nor an admin."""


class _Operator:
    """Whoever runs mempipe itself (the CLI, a cron job): always allowed. Bots pass the id of the
    person who asked instead (`requested_by=interaction.user.id`)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OPERATOR"

    def __reduce__(self):
        return "OPERATOR"


OPERATOR = _Operator()
Requester = int | _Operator


def authorize(settings: Settings | None, action: str, subject: int, requested_by: Any) -> str:
    """How the requester may act on `subject`'s memory: "operator", "subject" or "admin"
    (admins: settings.controls.admins; no settings, no admins). Anyone else: PermissionDenied.
    A requester that is not a 64-bit id (nor OPERATOR) is an IdError."""
    if requested_by is OPERATOR:
        return "operator"
    requester = parse_id(requested_by, "requested_by")
    if requester == subject:
        return "subject"
    if settings is not None and requester in settings.controls.admins:
        return "admin"
    raise PermissionDenied(
        f"user {requester} may not {action} the memory of user {subject}: only that user or an admin "
        f"([controls] admins in the configuration) may")


def requester_id(requested_by: Any) -> int | None:
    """The requester as stored in control_actions.requested_by (NULL for the operator)."""
    return None if requested_by is OPERATOR else parse_id(requested_by, "requested_by")
