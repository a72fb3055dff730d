"""The README's discord.py `/memory` command, run as written against a stand-in for discord.py:
each subcommand calls the controls for the person who typed it, and a member asking about
someone else is refused."""

from __future__ import annotations

import asyncio
import re
import sys
import types

import pytest

from pipeline.app import App
from pipeline.clock import fixed_clock
from tests.conftest import ROOT
from tests.integration.test_controls import ANA, DEE, DM_ANA, G, NOW, load


def _snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## User controls"):readme.index("## Configuration")]
    return next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "import discord" in b)


class _Group:
    def __init__(self, name: str, description: str):
        self.commands = {}

    def command(self, name: str, description: str):
        def register(fn):
            self.commands[name] = fn
            return fn
        return register


def _fake_discord() -> types.ModuleType:
    discord = types.ModuleType("discord")
    discord.Interaction = type("Interaction", (), {})
    discord.Member = type("Member", (), {})
    discord.app_commands = types.SimpleNamespace(Group=_Group, describe=lambda **_: (lambda fn: fn))
    return discord


class _Interaction:
    def __init__(self, user: int, guild_id: int | None, channel_id: int):
        self.user = types.SimpleNamespace(id=user)
        self.guild_id, self.channel_id = guild_id, channel_id
        self.sent: list[str] = []
        self.response = types.SimpleNamespace(defer=self._nothing)
        self.followup = types.SimpleNamespace(send=self._send)

    async def _nothing(self, **_):
        pass

    async def _send(self, text: str, **_):
        self.sent.append(text)


@pytest.fixture
def memory(store, settings, monkeypatch):
    load(store, settings)
    monkeypatch.setitem(sys.modules, "discord", _fake_discord())
    monkeypatch.setattr(App, "open", classmethod(lambda cls, s, **_: cls(s, store, fixed_clock(NOW))))
    namespace: dict = {}
    exec(compile(_snippet(), "README.md", "exec"), namespace)
    return namespace["memory"].commands


def test_the_readme_bot_command_acts_for_whoever_typed_it(memory, store):
    in_guild = _Interaction(ANA, G, 1)
    asyncio.run(memory["show"](in_guild))
    assert "- Collects zqxanacoins" in in_guild.sent[-1]
    stranger = _Interaction(DEE, G, 1)
    asyncio.run(memory["show"](stranger, member=types.SimpleNamespace(id=ANA)))
    assert stranger.sent == ["Only that member or a memory admin may do that."]
    asyncio.run(memory["pause"](in_guild))
    assert [(e["scope"], e["kind"]) for e in store.exclusions([ANA])] == [(f"guild:{G}", "pause")]
    asyncio.run(memory["forget"](in_guild, what="zqxanacoins"))
    assert in_guild.sent[-1] == "Forgotten."
    asyncio.run(memory["clear"](_Interaction(ANA, None, DM_ANA)))
    assert store.contexts(user_id=ANA) == []
    assert [(a["action"], a["requested_by"]) for a in store.actions(str(ANA))][-4:] == [
        ("show", ANA), ("pause", ANA), ("forget", ANA), ("clear", ANA)]
