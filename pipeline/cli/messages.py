"""`mempipe messages delete`: message deletion (pipeline/ingest/deletion.py) from the shell."""

from __future__ import annotations

import click

from ..errors import IdError
from ..ingest.deletion import parse_message_refs
from .main import State, _echo_json, cli, json_option


class _MessageRef(click.ParamType):
    """MESSAGE or CHANNEL:MESSAGE, each a 64-bit id by the one rule of pipeline/ids.py."""

    name = "id"

    def convert(self, value, param, ctx):
        try:
            pairs, bare = parse_message_refs([value])
        except IdError as exc:
            self.fail(f"{value!r}: {exc} (use MESSAGE or CHANNEL:MESSAGE)", param, ctx)
        return pairs[0] if pairs else bare[0]


@cli.group()
def messages():
    """Stored chat messages."""


@messages.command("delete")
@click.argument("ids", nargs=-1, required=True, type=_MessageRef(), metavar="ID...")
@json_option
@click.pass_obj
def messages_delete(state: State, ids, as_json):
    """Delete messages, and everything made only from them, as the operator.

    ID is CHANNEL:MESSAGE, or MESSAGE alone to delete every stored message with that id (Discord
    ids are unique). In one transaction the messages leave chat_history, facts lose them from
    their sources (a fact resting only on them is deleted), their partition-days are queued, and
    an audit row is recorded per user (counts, no text); the next `mempipe run` recomputes those
    partition-days, however old, and what was made from them. An id that matches nothing is
    counted, not an error.

    Example: mempipe messages delete 1170000000000000010:1190000000000010002 1190000000000010003
    """
    from ..ingest import delete_messages

    counts = delete_messages(state.store(), list(ids), state.settings, clock=state.clock)
    if as_json:
        _echo_json(counts)
        return
    click.echo(f"deleted {counts['deleted']} of {counts['requested']} message(s) ({counts['unknown']} not found); "
               f"{counts['partition_days_queued']} partition-day(s) queued for the next `mempipe run`; facts: "
               f"{counts['facts_deleted']} deleted, {counts['facts_updated']} lost a source")
