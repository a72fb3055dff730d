"""The README's discord.py bot ("Read API"), run as written against a stand-in for discord.py and
the configured database: it answers a mention with the member's context plus the search hits for
their message that the scope may read (`aget_context(..., query=...)`), and nothing else."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import sys
import types

import pytest

import pipeline.read
from pipeline.read import get_context
from tests.conftest import ROOT
from tests.helpers import replay
from tests.integration.test_controls import ANA, DEE, DM_ANA, G, GEN, load

BOT = 1160000000000000999
LATER = dt.datetime(2026, 11, 20, 12, tzinfo=dt.timezone.utc)  # the week has moved on: a context of profile only


def _snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Read API"):readme.index("## Search")]
    return next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "import discord" in b)


class _Client:
    def __init__(self, *, intents):
        self.intents = intents
        self.user = types.SimpleNamespace(id=BOT)

    def event(self, fn):
        setattr(self, fn.__name__, fn)
        return fn


def _fake_discord() -> types.ModuleType:
    discord = types.ModuleType("discord")
    discord.Intents = types.SimpleNamespace(default=lambda: types.SimpleNamespace(message_content=False))
    discord.Client = _Client
    discord.Message = type("Message", (), {})
    return discord


class _Message:
    def __init__(self, bot, author: int, channel: int, text: str, *, guild: int | None = G, mention: bool = True,
                 from_bot: bool = False):
        self.author = types.SimpleNamespace(id=author, bot=from_bot)
        self.guild = None if guild is None else types.SimpleNamespace(id=guild)
        self.channel = types.SimpleNamespace(id=channel)
        self.mentions = [bot.user] if mention else []
        self.clean_content = ("@Mempipe " if mention else "") + text
        self.replies: list[str] = []

    async def reply(self, text: str):
        self.replies.append(text)


@pytest.fixture
def bot(store, settings, db_url, monkeypatch):
    """The README's bot, on a database holding the controls' community a fortnight later."""
    load(store, settings)
    replay(store, settings, "2026-11-03", LATER.date().isoformat(), now=LATER)
    monkeypatch.setenv("MEMPIPE_DATABASE_URL", db_url)  # the bot reads the configured database
    monkeypatch.setitem(sys.modules, "discord", _fake_discord())
    pipeline.read.reset()
    namespace: dict = {}
    exec(compile(_snippet(), "README.md", "exec"), namespace)
    seen: list[tuple[str, str]] = []

    async def answer(memory: str, question: str) -> str:  # the model call the README leaves to the reader
        seen.append((memory, question))
        return f"answer {len(seen)}"

    namespace["answer"] = answer
    namespace["seen"] = seen
    yield namespace
    pipeline.read.reset()


def _say(ns, message: _Message) -> list[str]:
    asyncio.run(ns["bot"].on_message(message))
    return message.replies


def test_the_readme_bot_reads_its_memory_with_the_message_as_query(bot, store):
    assert bot["intents"].message_content is True
    asked = _Message(bot["bot"], ANA, GEN, "remind me, which zqxanatea do I drink?")
    assert _say(bot, asked) == ["answer 1"]
    memory, question = bot["seen"][-1]
    assert question == "@Mempipe remind me, which zqxanatea do I drink?"
    expected = get_context(f"guild:{G}", ANA, query=question, store=store)
    assert memory == expected.text and expected.hits
    related = memory.split("Related memories:\n", 1)[1]
    assert "zqxanatea" in related.lower()

    # the guild may not read the restricted channel; her one-to-one DM may
    _say(bot, _Message(bot["bot"], ANA, GEN, "what about the zqxanamods queue?"))
    assert "zqxanamods" not in bot["seen"][-1][0].lower()
    _say(bot, _Message(bot["bot"], ANA, DM_ANA, "what about the zqxanamods queue?", guild=None))
    dm_memory = bot["seen"][-1][0]
    assert "zqxanamods" in dm_memory.lower()
    assert dm_memory == get_context(f"dm:{DM_ANA}", ANA, query=bot["seen"][-1][1], store=store).text


def test_the_readme_bot_answers_only_mentions_from_people(bot):
    assert _say(bot, _Message(bot["bot"], ANA, GEN, "zqxanatea", mention=False)) == []
    assert _say(bot, _Message(bot["bot"], ANA, GEN, "zqxanatea", from_bot=True)) == []
    assert bot["seen"] == []
    # someone with no memory is still answered, with none
    assert _say(bot, _Message(bot["bot"], DEE, GEN, "do you know me?")) == ["answer 1"]
    assert bot["seen"] == [("", "@Mempipe do you know me?")]
