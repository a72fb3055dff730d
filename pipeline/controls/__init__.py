"""User controls: what a person may do about their own memory, as library functions — the CLI
(`mempipe user …`, as the operator) and bots (with `requested_by=` the id of who asked) call the
same ones. Every control checks who asks before anything is read or written (the subject, an
admin of `[controls] admins`, or OPERATOR; anyone else: PermissionDenied) and leaves an audit
row in control_actions (`user_audit`), never a text.

    user_show(store, settings, user_id, *, requested_by, scope=None)      what bots may read
    user_export(store, user_id, *, requested_by, settings=None)           every row, as JSON
    pause / resume(store, settings, user_id, *, requested_by, scope=None) stop / restart summarising
    clear(store, settings, user_id, *, requested_by, scope=None, include_history=False)
    erase(store, settings, user_id, *, requested_by)                      right to erasure
    user_audit(store, settings, user_id, *, requested_by)                 the controls recorded
    await remember / forget(ctx, scope, user_id, fact, *, requested_by)   facts, audited

Each write control also takes `clock=` (pipeline/clock.py). ARCHITECTURE.md "User controls" is
the contract; the README's "User controls" says what each keeps and removes.
"""

from .audit import erased_key, user_audit
from .auth import OPERATOR, PermissionDenied, authorize
from .clear import clear, erase
from .export import SCHEMA, user_export
from .facts import forget, remember
from .pause import pause, resume
from .view import user_show

__all__ = ["OPERATOR", "PermissionDenied", "SCHEMA", "authorize", "clear", "erase", "erased_key", "forget",
           "pause", "remember", "resume", "user_audit", "user_export", "user_show"]
