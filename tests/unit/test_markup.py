"""pipeline.summarize.markup: Discord markup rendered as readable text before any message reaches
a summarizer, so no raw id does. No database."""

from __future__ import annotations

import re

import pytest

from pipeline.summarize.markup import mentioned_ids, render

NAMES = {123: "Ana", 456: "Bo"}
READABLE = {777000222000333444: "general", 777000222000333555: None}  # a readable channel may have no name
SNOWFLAKE = "1170000000000000010"
LINK_TAIL = "1150000000000000001/1170000000000000010/1190000000000010001"

CASES = [
    # user mentions
    ("hey <@123>, see you", "hey @Ana, see you"),
    ("hey <@!456>!", "hey @Bo!"),
    ("<@123> and <@!456> and <@123>", "@Ana and @Bo and @Ana"),
    ("ping <@987654321098765432>", "ping @someone"),
    # roles and channels
    ("<@&555000111000222333> go", "@role go"),
    ("go to <#777000222000333444> now", "go to #general now"),
    ("go to <#777000222000333555> now", "go to #channel now"),  # readable, no name
    ("go to <#999000222000333444> now", "go to #channel now"),  # not readable here: no name
    # custom emoji, static and animated
    ("nice <:blobcat:1234567890123456789>", "nice :blobcat:"),
    ("<a:party_parrot:1234567890123456789><a:x:1>", ":party_parrot::x:"),
    # slash-command mentions, with subcommands and groups
    ("use </ping:1234567890123456789>", "use /ping"),
    ("use </config set:1234567890123456789> first", "use /config set first"),
    ("</admin user ban:1234567890123456789>", "/admin user ban"),
    # message links, every host, suppressed embeds, DM links
    (f"look https://discord.com/channels/{LINK_TAIL} here", "look [link] here"),
    (f"https://ptb.discord.com/channels/{LINK_TAIL}", "[link]"),
    (f"https://canary.discord.com/channels/{LINK_TAIL}", "[link]"),
    (f"https://discordapp.com/channels/{LINK_TAIL}", "[link]"),
    (f"https://www.discord.com/channels/{LINK_TAIL}", "[link]"),
    (f"http://discord.com/channels/{LINK_TAIL}.", "[link]."),
    (f"<https://discord.com/channels/{LINK_TAIL}>", "[link]"),
    ("https://discord.com/channels/@me/1170000000000000500/1190000000000010099", "[link]"),
    ("https://discord.com/channels/1150000000000000001/1170000000000000010", "[link]"),  # a channel link
    # attachment URLs carry channel and attachment ids
    (f"https://cdn.discordapp.com/attachments/{SNOWFLAKE}/1200000000000000001/cat.png?ex=1", "[attachment]"),
    (f"https://media.discordapp.net/attachments/{SNOWFLAKE}/1200000000000000001/cat.png", "[attachment]"),
    # any other id-sized number
    (f"my id is {SNOWFLAKE}", "my id is [number]"),
    # not markup: unchanged
    ("email me at a@b.c, 5 < 6 > 4, <@abc> is not a mention", "email me at a@b.c, 5 < 6 > 4, <@abc> is not a mention"),
    ("I <3 this :smile: at 12:30, call 555-0100 or 12345678901234", "I <3 this :smile: at 12:30, call 555-0100 or 12345678901234"),
    ("see https://example.com/channels/1/2/3 and <t:1700000000:R>", "see https://example.com/channels/1/2/3 and <t:1700000000:R>"),
]


@pytest.mark.parametrize("raw,expected", CASES)
def test_markup_is_rendered(raw, expected):
    assert render(raw, NAMES, READABLE) == expected


@pytest.mark.parametrize("raw,_expected", CASES)
def test_no_id_sized_number_survives(raw, _expected):
    assert not re.search(r"\d{15,}", render(raw, NAMES, READABLE))


def test_channels_default_to_none_readable():
    assert render("<#777000222000333444>", NAMES) == "#channel"


def test_mentioned_ids_collects_user_mentions_only():
    assert mentioned_ids("<@1> <@!2> <@&3> <#4> <@1> </x:5> <:e:6>") == {1, 2}


def _every_pattern(text: str, names, channels) -> str:
    """render() without its shortcut for text with neither "<" nor "://": every substitution."""
    from pipeline.summarize import markup as m
    channels = channels or {}
    for pattern, repl in ((m._LINK, "[link]"), (m._ATTACHMENT, "[attachment]"), (m._ROLE, "@role")):
        text = pattern.sub(repl, text)
    text = m._CHANNEL.sub(lambda x: "#" + (channels.get(int(x.group(1))) or "channel"), text)
    text = m._COMMAND.sub(r"/\1", m._EMOJI.sub(r":\1:", text))
    text = m._USER.sub(lambda x: "@" + names.get(int(x.group(1)), "someone"), text)
    return m._NUMBER.sub("[number]", text)


@pytest.mark.parametrize("raw", [raw for raw, _e in CASES] + [
    "plain chat, no markup", "order 1234567890123456789 shipped", "a @ b # c : d", "x <3 y", "see discord.com/channels/1/2/3",
    "http://discord.com/channels/1150000000000000001/1170000000000000010", "1 < 2 and 3 > 2", ""])
def test_the_shortcut_for_text_without_markup_renders_as_every_pattern_would(raw):
    assert render(raw, NAMES, READABLE) == _every_pattern(raw, NAMES, READABLE)
    assert mentioned_ids(raw) == {int(x) for x in re.findall(r"<@!?(\d+)>", raw)}
