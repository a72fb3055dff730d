"""Writes samples/community.jsonl: a small, deterministic community used by `make demo` and the
tests. Two guilds (public channels and a role-gated channel), two DMs, four days, mentions,
replies, an edit, and canary sentences that must never leave their partition.

Run: python samples/make_sample.py
"""

import datetime as dt
import json
import random
from pathlib import Path

G1, G2 = 1150000000000000001, 1150000000000000002
GENERAL, BUILDS, MODS, BOOKS = 1170000000000000010, 1170000000000000011, 1170000000000000020, 1170000000000000030
DM_ANA, DM_BO = 1170000000000000500, 1170000000000000501
USERS = {1160000000000000001: "Ana", 1160000000000000002: "Bo", 1160000000000000003: "Cy",
         1160000000000000004: "Dex", 1160000000000000005: "Eli"}
ANA, BO, CY, DEX, ELI = USERS

CANARY_RESTRICTED = "The mod vote about CANARYRESTRICTED is sealed until Friday."
CANARY_DM = "My secret CANARYDM is that I am failing statistics."

PUBLIC_LINES = {
    ANA: ["I finally finished the storage system for our base, 54 double chests sorted by item.",
          "I'm in CET so it's late here, heading off soon.",
          "The creeper farm rates doubled after I fixed the light leak.",
          "I want to build a trading hall with 20 villagers next week.",
          "Does anyone have spare shulker shells? I need 12 more."],
    BO: ["Did you use the hopper lock design from last week?",
         "I'm streaming the nether highway build tonight at 8.",
         "My iron farm broke again after the update, so annoying.",
         "I started learning redstone timing circuits from a video series.",
         "Can someone help me gather 3 stacks of obsidian tomorrow?"],
    CY: ["I just joined, I play mostly on weekends from Brazil.",
         "I love building medieval castles with deepslate.",
         "My laptop overheats when render distance goes above 12.",
         "I finished reading the redstone wiki page about comparators."],
    DEX: ["I'm organising the community build contest next month.",
          "The server restart moved to 20:00 UTC because of backups.",
          "I adopted a kitten named Pixel this weekend."],
}
BOOK_LINES = {
    ANA: ["I'm halfway through Piranesi and the house imagery is stunning.",
          "I prefer paper books, the e-reader hurts my eyes."],
    ELI: ["I picked The Left Hand of Darkness for December.",
          "I run the club's reading schedule spreadsheet.",
          "I read mostly science fiction from the seventies."],
}
MODS_LINES = {
    DEX: [CANARY_RESTRICTED, "I think we need a second moderator for the weekend shift."],
    BO: ["I can cover Saturday moderation if needed.", "The spam wave came from three new accounts."],
}
DM_LINES = {
    ANA: ["Can I tell you something? I'm really stressed about my exams this week.", CANARY_DM,
          "My in-game name is AnaKraft if you ever want to visit."],
    BO: ["I'm thinking about quitting my job at the bakery.", "Please remind me to water my tomato plants."],
}


def main() -> None:
    rng = random.Random(20261101)
    rows = []
    msg_id = 1190000000000010000
    start = dt.datetime(2026, 11, 1, 7, 0, tzinfo=dt.timezone.utc)

    def add(day: int, minute: int, guild, channel, visibility, user, text, reply_to=None, edited=None):
        nonlocal msg_id
        msg_id += 1
        ts = start + dt.timedelta(days=day, minutes=minute)
        # Local offsets as exporters and bots write them: the importer must convert to UTC.
        offset = dt.timezone(dt.timedelta(hours=1)) if user == ANA else dt.timezone.utc
        row = {"message_id": str(msg_id), "guild_id": str(guild) if guild else None, "channel_id": str(channel),
               "visibility": visibility, "user_id": str(user), "user_name": USERS[user], "text": text,
               "ts": ts.astimezone(offset).isoformat()}
        if reply_to:
            row["reply_to"] = str(reply_to)
        if edited:
            row["edited_ts"] = (ts + dt.timedelta(minutes=edited)).astimezone(offset).isoformat()
        if visibility == "dm":
            row["is_group"] = False  # both DMs are one-to-one, and say so (an unstated DM reads only itself)
        rows.append(row)
        return msg_id

    for day in range(4):
        minute = 0
        for user, lines in PUBLIC_LINES.items():
            for line in rng.sample(lines, k=min(len(lines), 2 + day % 2)):
                minute += rng.randint(3, 40)
                channel = GENERAL if rng.random() < 0.7 else BUILDS
                add(day, minute, G1, channel, "public", user, line)
        first = add(day, minute + 5, G1, GENERAL, "public", BO, f"<@{ANA}> how is the trading hall going?")
        add(day, minute + 9, G1, GENERAL, "public", ANA, "Slowly, the villagers keep escaping.", reply_to=first)
        add(day, minute + 15, G1, GENERAL, "public", CY, "lol", edited=2 if day == 1 else None)
        for user, lines in BOOK_LINES.items():
            for line in lines:
                minute += rng.randint(5, 30)
                add(day, minute, G2, BOOKS, "public", user, line)
        if day in (1, 3):
            for user, lines in MODS_LINES.items():
                for line in lines:
                    minute += rng.randint(2, 10)
                    add(day, minute, G1, MODS, "restricted", user, line)
        if day in (2, 3):
            for user, channel in ((ANA, DM_ANA), (BO, DM_BO)):
                for line in DM_LINES[user]:
                    minute += rng.randint(1, 5)
                    add(day, minute, None, channel, "dm", user, line)

    out = Path(__file__).with_name("community.jsonl")
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} messages to {out}")


if __name__ == "__main__":
    main()
