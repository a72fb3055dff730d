"""`mempipe user …`: the user controls (pipeline/controls/) from the command line, as the operator."""

from __future__ import annotations

from typing import Any

import click

from .main import State, _echo_json, _scope, cli, json_option, user_option

OPERATOR_NOTE = ("Runs as the operator: always allowed. (A bot calls the same functions in pipeline.controls "
                 "with requested_by=<who asked>; only that user or a [controls] admin may.)")
ID_KEYS = ("user_id", "id", "requested_by")  # 64-bit ids in the JSON: strings (a JavaScript number keeps 53 bits)
scope_filter = click.option("--scope", callback=_scope, default=None,
                            help="guild:<id>, channel:<id> or dm:<channel id> (default: everywhere).")


def _ids_as_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: str(v) if k in ID_KEYS and isinstance(v, int) and not isinstance(v, bool) else _ids_as_text(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_ids_as_text(v) for v in value]
    return value


def _where(scope: str | None) -> str:
    return "everywhere" if scope in (None, "*") else scope


def _rows(counts: dict[str, int]) -> str:
    return ", ".join(f"{table} {n}" for table, n in counts.items() if n) or "nothing"


@cli.group("user", help=f"""Show, export, pause, resume, clear or erase what mempipe keeps about a user, and the
audit of those controls (README, "User controls").

{OPERATOR_NOTE}""")
def user():
    pass


@user.command("show", help=f"""What the bots may read about USER: per scope, the context, the profile, the facts the
scope may read (level, category, dates, sources), the day and week summaries it is built from, and
whether the user paused memory there. Without --scope: every scope USER has a context, profile or
facts in. Recorded in the audit. {OPERATOR_NOTE}

\b
Example: mempipe user show --user 1160000000000000001 --scope guild:1150000000000000001""")
@user_option
@scope_filter
@json_option
@click.pass_obj
def user_show_cmd(state: State, user_id, scope, as_json):
    from ..controls import OPERATOR, user_show
    from ..controls.view import show_text

    report = user_show(state.store(), state.settings, user_id, requested_by=OPERATOR, scope=scope,
                       clock=state.clock)
    if as_json:
        _echo_json(_ids_as_text(report))
    else:
        click.echo(show_text(report))


@user.command("export", help=f"""Print every row of every table about or by USER (messages, names, summaries,
facts, profiles, contexts, forgotten facts, exclusions, audit rows) as one JSON document
("schema": "mempipe-export-1"; 64-bit ids as strings, dates ISO-8601). Recorded in the audit.
{OPERATOR_NOTE}

\b
Example: mempipe user export --user 1160000000000000001 > u.json""")
@user_option
@click.pass_obj
def user_export_cmd(state: State, user_id):
    from ..controls import OPERATOR, user_export

    _echo_json(user_export(state.store(), user_id, requested_by=OPERATOR, settings=state.settings,
                           clock=state.clock))


@user.command("pause", help=f"""Stop summarising USER's messages in SCOPE (default: everywhere) from now on: no
summary and no fact is made of them until `mempipe user resume`. The messages are still stored
(the bot's own history may need them) and what was made before stays readable until cleared.
{OPERATOR_NOTE}""")
@user_option
@scope_filter
@json_option
@click.pass_obj
def user_pause_cmd(state: State, user_id, scope, as_json):
    from ..controls import OPERATOR, pause

    done = pause(state.store(), state.settings, user_id, requested_by=OPERATOR, scope=scope, clock=state.clock)
    if as_json:
        _echo_json(_ids_as_text(done))
    elif done["already"]:
        click.echo(f"user {user_id} was already paused {_where(done['scope'])} (since {done['since']:%Y-%m-%d %H:%M} UTC)")
    else:
        click.echo(f"user {user_id} paused {_where(done['scope'])}: their new messages are not summarised")


@user.command("resume", help=f"""End USER's pause in SCOPE (default: every pause of USER): their later messages
are summarised again; those of the pause never are. {OPERATOR_NOTE}""")
@user_option
@scope_filter
@json_option
@click.pass_obj
def user_resume_cmd(state: State, user_id, scope, as_json):
    from ..controls import OPERATOR, resume

    done = resume(state.store(), state.settings, user_id, requested_by=OPERATOR, scope=scope, clock=state.clock)
    if as_json:
        _echo_json(_ids_as_text(done))
        return
    if done["resumed"]:
        click.echo(f"user {user_id} resumed {', '.join(_where(s) for s in done['resumed'])}")
    else:
        click.echo(f"user {user_id} was not paused {_where(scope)}")
    if done["still_paused"]:
        click.echo(f"still paused: {', '.join(_where(s) for s in done['still_paused'])}", err=True)


@user.command("clear", help=f"""Delete USER's memory in SCOPE (default: everywhere): their summaries and facts of
the partitions SCOPE is built from, and their profiles and contexts that read them; what they
said before now is never summarised there again, and other people's summaries of those days are
made again by the next run without it. --include-history also deletes their messages there.
Asks for confirmation unless --yes. {OPERATOR_NOTE}

\b
Example: mempipe user clear --user 1160000000000000001 --scope guild:1150000000000000001 --yes""")
@user_option
@scope_filter
@click.option("--include-history", is_flag=True, help="Also delete the user's chat messages there.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def user_clear_cmd(state: State, user_id, scope, include_history, yes, as_json):
    from ..controls import OPERATOR, clear

    if not yes:
        what = "memory and messages" if include_history else "memory"
        click.confirm(f"Delete the {what} of user {user_id} {_where(scope)}?", abort=True, err=True)
    done = clear(state.store(), state.settings, user_id, requested_by=OPERATOR, scope=scope,
                 include_history=include_history, clock=state.clock)
    if as_json:
        _echo_json(_ids_as_text(done))
    else:
        click.echo(f"cleared user {user_id} {_where(scope)}: {_rows(done['rows'])}")


@user.command("erase", help=f"""Erase USER: their messages, names, summaries, facts, profiles, contexts,
forgotten facts and pauses, everywhere; other people's summaries that quote or name them are made
again by the next run (a mention then reads as a placeholder). Leaves one audit row without
personal data ("erased:<hash>", counts). Cannot be undone: refuses without --yes. {OPERATOR_NOTE}

\b
Example: mempipe user erase --user 1160000000000000001 --yes""")
@user_option
@click.option("--yes", is_flag=True, help="Required: erasing cannot be undone.")
@json_option
@click.pass_obj
def user_erase_cmd(state: State, user_id, yes, as_json):
    from ..controls import OPERATOR, erase

    if not yes:
        raise click.UsageError(f"erasing user {user_id} cannot be undone: pass --yes to erase", click.get_current_context())
    done = erase(state.store(), state.settings, user_id, requested_by=OPERATOR, clock=state.clock)
    if as_json:
        _echo_json(done)
    else:
        click.echo(f"erased user {user_id} (audit subject {done['subject_key']}): {_rows(done['rows'])}; "
                   f"run `mempipe run` to remake the summaries that named them")


@user.command("audit", help=f"""List the controls recorded about USER, oldest first: when, what, where, who
asked, how many rows of which table. After an erase the user's rows are under "erased:<hash>" and
no longer listed here. {OPERATOR_NOTE}""")
@user_option
@json_option
@click.pass_obj
def user_audit_cmd(state: State, user_id, as_json):
    from ..controls import OPERATOR, user_audit
    from ..controls.audit import audit_line

    rows = user_audit(state.store(), state.settings, user_id, requested_by=OPERATOR)
    if as_json:
        _echo_json(_ids_as_text(rows))
        return
    if not rows:
        click.echo(f"no controls recorded about user {user_id}", err=True)
    for r in rows:
        click.echo(audit_line(r))
