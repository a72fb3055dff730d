"""A deterministic corpus of community chat, from a seed.

Shape (all heavy-tailed, as real communities are):
- guild sizes follow Zipf (rank^-1.05): a few busy guilds, a long tail of quiet ones;
- users have a Pareto(1.16) popularity (the 80/20 rule): it decides how many guilds they join,
  how much they write there and whether they DM the bot;
- messages are split public / restricted / DM by count (80 / 10 / 10 by default);
- text lengths are log-normal (median ~40 characters, a tail to a few hundred, capped at 1,800);
- 6% of messages mention someone (`<@id>`), 15% reply to one of the channel's recent messages,
  1% carry an edit time;
- each guild has an IANA timezone; messages fall on local days with a diurnal curve (quiet at
  night, peaking in the evening), so a UTC day cuts most guilds' local days in two.

`generate(spec, seed)` yields JSONL-shaped dicts (the import format of the README) in channel-day
order; `write(spec, seed, path)` writes them and a `.meta.json` with the timezones and counts.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator
from zoneinfo import ZoneInfo

GENERATOR_VERSION = "corpus-1"
GUILD_BASE, USER_BASE, CHANNEL_BASE = 1150000000000000000, 1160000000000000000, 1170000000000000000
DISCORD_EPOCH_MS = 1420070400000

# (zone, weight): where guilds live. Sydney is +11 and Los Angeles -8 in November.
ZONES = (("UTC", 3), ("Europe/London", 4), ("Europe/Berlin", 6), ("Europe/Moscow", 2),
         ("America/New_York", 6), ("America/Chicago", 3), ("America/Los_Angeles", 4),
         ("America/Sao_Paulo", 3), ("Asia/Kolkata", 2), ("Asia/Tokyo", 2), ("Australia/Sydney", 2))
# Relative activity per local hour 0..23.
DIURNAL = (3, 2, 1.4, 1, 0.7, 0.6, 0.8, 1.5, 2.5, 3.4, 4, 4.5, 5, 5, 5, 5.5, 6, 7, 8, 9, 9.5, 9, 7, 5)
PUBLIC_NAMES = ("general", "off-topic", "help", "memes", "media", "events", "builds", "music", "gaming")
SYLLABLES = ("ka", "ri", "to", "mo", "ne", "sa", "lu", "vi", "den", "tor", "mi", "ra", "zo", "el", "an",
             "bo", "qui", "sha", "ty", "lex", "ar", "io", "fen", "gra", "pi", "ul", "ver", "ny")


@dataclass(frozen=True)
class Spec:
    name: str
    messages: int          # target count (the result is within a few per cent)
    guilds: int
    users: int             # the user pool; the active users are those who end up writing
    days: int = 7
    first_day: dt.date = dt.date(2026, 11, 1)
    public_share: float = 0.80
    restricted_share: float = 0.10  # DMs get the rest
    dm_user_share: float = 0.05     # DM conversations per user of the pool
    group_dm_share: float = 0.10    # of the DM conversations

    @property
    def last_day(self) -> dt.date:
        return self.first_day + dt.timedelta(days=self.days - 1)

    def key(self, seed: int) -> str:
        blob = json.dumps([GENERATOR_VERSION, seed, asdict(self)], default=str, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


SIZES = {
    "tiny": Spec("tiny", messages=2_500, guilds=5, users=250),
    "small": Spec("small", messages=25_000, guilds=20, users=1_500),
    "large": Spec("large", messages=1_050_000, guilds=520, users=60_000),
}


@dataclass
class Channel:
    channel_id: int
    guild_id: int | None
    visibility: str
    name: str | None
    tz: str
    expected: float              # expected messages over the whole corpus
    members: list[int]           # user indexes
    cum_weights: list[float]     # activity of those members, cumulative
    is_group: bool = False


class _Names:
    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set()

    def make(self) -> str:
        for _ in range(50):
            name = "".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.choice((2, 2, 3)))).capitalize()
            if self.rng.random() < 0.3:
                name += str(self.rng.randint(1, 99))
            if name not in self.used:
                self.used.add(name)
                return name
        return f"{name}{len(self.used)}"


def _round(rng: random.Random, x: float) -> int:
    """Stochastic rounding: keeps totals right without giving every tiny channel a message."""
    base = math.floor(x)
    return base + (1 if rng.random() < x - base else 0)


def _cum(weights: list[float]) -> list[float]:
    return list(itertools.accumulate(weights))


class World:
    """Guilds, channels, users and DM conversations; the messages are drawn from it."""

    def __init__(self, spec: Spec, seed: int):
        self.spec, self.rng = spec, random.Random(f"{seed}:{spec.name}:world")
        rng = self.rng
        names = _Names(rng)
        self.user_names = [names.make() for _ in range(spec.users)]
        self.popularity = [min(rng.paretovariate(1.16), 60.0) for _ in range(spec.users)]
        pop_cum = _cum(self.popularity)
        zones, zone_w = zip(*ZONES)
        self.guild_tz: dict[int, str] = {}
        self.channels: list[Channel] = []
        next_channel = itertools.count(CHANNEL_BASE + 1)

        guild_w = [(r + 1) ** -1.05 for r in range(spec.guilds)]
        size_w = [w ** 0.75 for w in guild_w]
        memberships = 1.6 * spec.users
        public_msgs = spec.messages * spec.public_share
        restricted_msgs = spec.messages * spec.restricted_share
        restricted: list[tuple[Channel, float]] = []
        for g in range(spec.guilds):
            guild_id = GUILD_BASE + g + 1
            tz = rng.choices(zones, zone_w)[0]
            self.guild_tz[guild_id] = tz
            n_members = min(spec.users, max(4, round(memberships * size_w[g] / sum(size_w))))
            members = self._draw_members(n_members, pop_cum)
            activity = [self.popularity[u] * min(rng.paretovariate(2.0), 10.0) for u in members]
            n_public = 1 + min(len(PUBLIC_NAMES) - 1, int(math.log2(1 + n_members / 15)))
            chan_w = [(i + 1) ** -1.2 for i in range(n_public)]
            g_public = public_msgs * guild_w[g] / sum(guild_w)
            for i in range(n_public):
                self.channels.append(Channel(next(next_channel), guild_id, "public", PUBLIC_NAMES[i], tz,
                                             g_public * chan_w[i] / sum(chan_w), members, _cum(activity)))
            n_restricted = 0 if (n_members < 40 and rng.random() < 0.4) else 1 + int(math.log2(1 + n_members / 200))
            for i in range(n_restricted):
                k = max(2, len(members) // 8)
                picked = sorted(set(rng.choices(range(len(members)), weights=activity, k=k * 2)))[:k]
                chan = Channel(next(next_channel), guild_id, "restricted", f"staff-{i + 1}", tz, 0.0,
                               [members[j] for j in picked], _cum([activity[j] for j in picked]))
                self.channels.append(chan)
                restricted.append((chan, guild_w[g] * (i + 1) ** -1.0))
        total_rw = sum(w for _, w in restricted) or 1.0
        for chan, w in restricted:
            chan.expected = restricted_msgs * w / total_rw

        # DMs with the bot: one-to-one (only the user writes; the bot's own messages are not
        # chat history) or a group DM of 2-4 users. They have no guild: UTC days.
        dm_msgs = spec.messages - public_msgs - restricted_msgs
        n_conv = max(2, round(spec.users * spec.dm_user_share))
        dm_users = list(dict.fromkeys(rng.choices(range(spec.users), cum_weights=pop_cum, k=n_conv * 2)))
        convs: list[Channel] = []
        for i in range(n_conv):
            group = rng.random() < spec.group_dm_share
            users = rng.sample(dm_users, rng.randint(2, 4)) if group else [dm_users[i % len(dm_users)]]
            convs.append(Channel(next(next_channel), None, "dm", None, "UTC", rng.paretovariate(1.2), users,
                                 _cum([self.popularity[u] for u in users]), is_group=group))
        conv_w = sum(c.expected for c in convs)
        for c in convs:
            c.expected = dm_msgs * c.expected / conv_w
        self.channels.extend(convs)

    def _draw_members(self, n: int, pop_cum: list[float]) -> list[int]:
        """n distinct users, popular ones more likely (with replacement, then topped up)."""
        picked = list(dict.fromkeys(self.rng.choices(range(self.spec.users), cum_weights=pop_cum, k=n)))
        seen = set(picked)
        while len(picked) < n:
            u = self.rng.randrange(self.spec.users)
            if u not in seen:
                seen.add(u)
                picked.append(u)
        return picked[:n]


class _Text:
    """Chat-like text: Zipf-distributed pseudo-words, log-normal lengths."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        vocab = {"".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 1, 2, 2, 3)))) for _ in range(4000)}
        self.words = sorted(vocab)
        rng.shuffle(self.words)
        self.cum = _cum([(i + 1) ** -1.0 for i in range(len(self.words))])

    def make(self) -> str:
        rng = self.rng
        n = min(1800, max(2, round(math.exp(rng.gauss(math.log(40), 0.9)))))
        words = rng.choices(self.words, cum_weights=self.cum, k=n // 4 + 2)
        text = " ".join(words)[:n].rstrip()
        return text[0].upper() + text[1:] + rng.choice(("", "", "", ".", "!", "?", " :)", " lol"))


def generate(spec: Spec, seed: int) -> Iterator[dict]:
    world = World(spec, seed)
    rng = random.Random(f"{seed}:{spec.name}:messages")
    text = _Text(rng)
    counter = itertools.count()
    hours = list(range(24))
    hour_cum = _cum(list(DIURNAL))
    days = [spec.first_day + dt.timedelta(days=i) for i in range(spec.days)]
    for chan in world.channels:
        n = _round(rng, chan.expected)
        if n == 0:
            continue
        tz = ZoneInfo(chan.tz)
        day_w = [(1.15 if d.weekday() >= 5 else 1.0) * rng.uniform(0.4, 1.6) for d in days]
        per_day = [0] * len(days)
        for i in rng.choices(range(len(days)), weights=day_w, k=n):
            per_day[i] += 1
        for day, count in zip(days, per_day):
            if not count:
                continue
            times = sorted(
                dt.datetime(day.year, day.month, day.day, h, rng.randrange(60), rng.randrange(60),
                            rng.randrange(1000) * 1000, tzinfo=tz)
                for h in rng.choices(hours, cum_weights=hour_cum, k=count))
            speakers = rng.choices(chan.members, cum_weights=chan.cum_weights, k=count)
            recent: list[int] = []
            for ts, user in zip(times, speakers):
                seq = next(counter)
                ms = int(ts.timestamp() * 1000)
                message_id = ((ms - DISCORD_EPOCH_MS) << 22) | (seq & 0x3FFFFF)
                body = text.make()
                if len(chan.members) > 1 and rng.random() < 0.06:
                    other = rng.choice(chan.members)
                    if other != user:
                        body = f"<@{USER_BASE + other + 1}> {body}"
                row = {
                    "message_id": str(message_id),
                    "guild_id": str(chan.guild_id) if chan.guild_id else None,
                    "channel_id": str(chan.channel_id),
                    "visibility": chan.visibility,
                    "user_id": str(USER_BASE + user + 1),
                    "user_name": world.user_names[user],
                    "text": body,
                    "ts": ts.isoformat(timespec="milliseconds"),
                }
                if chan.name:
                    row["channel_name"] = chan.name
                if chan.visibility == "dm":  # a bot knows, and says, which DMs are one-to-one
                    row["is_group"] = chan.is_group
                if recent and rng.random() < 0.15:
                    row["reply_to"] = str(rng.choice(recent[-10:]))
                if rng.random() < 0.01:
                    row["edited_ts"] = (ts + dt.timedelta(minutes=rng.uniform(1, 30))).isoformat(timespec="milliseconds")
                recent.append(message_id)
                yield row
    if next(counter) >= 1 << 22:
        raise ValueError("more than 4M messages: message ids would repeat")


def timezones(spec: Spec, seed: int) -> dict[int, str]:
    """guild id -> IANA zone (for settings.timezones.guilds)."""
    return dict(World(spec, seed).guild_tz)


def cached(path: Path, meta_path: Path, key: str) -> dict | None:
    """The metadata of a corpus already written from the same spec, seed and generator version."""
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("key") == key:
            return meta
    return None


def write(spec: Spec, seed: int, path: Path) -> dict:
    """Write the corpus as JSONL and its metadata beside it (`<path>.meta.json`); returns the
    metadata. Reuses an existing file made from the same spec, seed and generator version."""
    meta_path = path.with_suffix(".meta.json")
    key = spec.key(seed)
    if (meta := cached(path, meta_path, key)) is not None:
        return meta
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = {"messages": 0, "public": 0, "restricted": 0, "dm": 0, "chars": 0, "mentions": 0, "replies": 0}
    users, guilds, partitions = set(), set(), set()
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in generate(spec, seed):
            fh.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")
            counts["messages"] += 1
            counts[row["visibility"]] += 1
            counts["chars"] += len(row["text"])
            counts["mentions"] += "<@" in row["text"]
            counts["replies"] += "reply_to" in row
            users.add(row["user_id"])
            if row["guild_id"]:
                guilds.add(row["guild_id"])
            partitions.add((row["visibility"], row["guild_id"] if row["visibility"] == "public" else row["channel_id"]))
    tmp.replace(path)
    meta = {"key": key, "seed": seed, "spec": asdict(spec) | {"first_day": spec.first_day.isoformat()},
            "counts": counts | {"users": len(users), "guilds": len(guilds), "partitions": len(partitions)},
            "timezones": {str(g): tz for g, tz in timezones(spec, seed).items()}}
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def read(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)
