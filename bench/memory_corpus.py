"""A deterministic community chat with planted durable facts, for the memory-quality section.
Fixed before any number was measured, without reading how facts are extracted: people talking.

World: guilds (one timezone each) with three public channels and a restricted one (~40% of the
members); every user in one guild, a third in two; half the users DM the bot one-to-one
(`is_group: false`: only the user writes). Small talk, questions, banter, links, numbers that are
not facts, games/bands/places that are nobody's fact (pools disjoint from the planted values);
a third of the users go silent for weeks. Planted, per user, in first person with varied
phrasings (lowercase, emoji, asides, a typo outside the value; some answering a question): a
move, a job, a pet's name, a favourite game and band, dated trips, and for some a favourite that
changes 20–50 days later. Each said once (a fifth restated once), mostly in public, some ONLY in
the restricted channel or ONLY in the DM (leak probes). `write` checks that every keyword occurs
only in its own plants (never in noise, names or channel names), writes the JSONL (README
"import") and `<path>.plants.json` (plants, channels, who reads what)."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

from .corpus import cached
from .env import ordinal

GENERATOR_VERSION = "memory-1"
GUILD_BASE, USER_BASE, CHANNEL_BASE = 1250000000000000000, 1260000000000000000, 1270000000000000000
MESSAGE_BASE = 1280000000000000000
ZONES = ("Europe/Lisbon", "America/New_York", "Asia/Tokyo")
GLOBAL_KINDS = ("game", "band")  # preferences: may be promoted to `global` and follow the user


@dataclass(frozen=True)
class MemSpec:
    name: str
    users: int
    days: int
    guilds: int
    plant_until: int            # durable facts are said on days 1..plant_until (0-based index)
    change_gap: tuple[int, int]  # days between a preference and its new value
    silence: tuple[int, int]    # length of a silent spell (a third of the users have one)
    checkpoints: tuple[int, ...] = (30, 90)
    supersede_after: int = 30
    first_day: dt.date = dt.date(2026, 7, 1)

    def key(self, seed: int) -> str:
        blob = json.dumps([GENERATOR_VERSION, seed, asdict(self)], default=str, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


SIZES = {
    "tiny": MemSpec("tiny", 8, 40, 2, plant_until=9, change_gap=(5, 7), silence=(8, 12), checkpoints=(30,)),
    "small": MemSpec("small", users=24, days=120, guilds=3, plant_until=59, change_gap=(20, 50), silence=(20, 35)),
    "large": MemSpec("large", users=30, days=120, guilds=3, plant_until=59, change_gap=(20, 50), silence=(20, 35)),
}


def _pool(s: str) -> list[str]:
    return [w.strip() for w in s.split("|") if w.strip()]


NAMES = _pool("""mira|jonas_k|tealeaf|Rafa|NightOwl|bex|Dmitri|kass|hollis|Ines|pavo|Sunny D|marek|lumen|Yara|ottoman|
fizz|Carmen|quill|Theo B|noor|glitchy|Anouk|vero|Kofi|sable|Priya|wren|Bastien|juno_x|Hakan|ellie""")
CITIES = _pool("""Porto|Tallinn|Ljubljana|Montevideo|Wellington|Kyoto|Sapporo|Busan|Taipei|Hanoi|Chiang Mai|Bergen|
Gothenburg|Aarhus|Utrecht|Ghent|Bologna|Seville|Valencia|Granada|Marseille|Bordeaux|Leipzig|Dresden|Salzburg|
Innsbruck|Basel|Bruges|Galway|Edinburgh|Glasgow|Cardiff|Halifax|Winnipeg|Calgary|Asheville|Boise|Tucson|Oaxaca|Cusco|
Medellin|Hobart|Queenstown|Tbilisi|Yerevan|Almaty|Marrakech|Zanzibar|Nairobi|Krakow|Bratislava|Reykjavik|Trondheim|
Tampere|Vilnius|Riga|Plovdiv|Thessaloniki|Izmir|Da Nang|Okinawa|Fukuoka|Penang|Cebu|Hoi An|Luang Prabang|Ushuaia|
Mendoza|Arequipa|Cartagena""")
COMPANIES = _pool("""Spotify|Shopify|Atlassian|Canva|Figma|Zalando|Klarna|Datadog|Cloudflare|Stripe|Twilio|Miro|
Duolingo|Etsy|Revolut|Mozilla|Ubisoft|Rovio|Supercell|GitLab|Grafana Labs|Airtable|Asana|Deliveroo|Monzo|Trivago|Wolt|
Celonis|Personio|Zendesk|Hubspot|Intercom""")
ROLES = _pool("""designer|data analyst|backend dev|QA tester|product manager|support engineer|recruiter|frontend dev|
technical writer|sound designer|community manager|SRE""")
PETS = _pool("""Miso|Mochi|Tofu|Pretzel|Waffles|Noodle|Juniper|Clementine|Ziggy|Bartholomew|Sprocket|Gizmo|Basil|
Marzipan|Dumpling|Fennel|Nacho|Chowder|Mango|Peanut|Cinder|Loki|Freya|Yuki|Wasabi|Taro|Kimchi|Churro|Falafel|Tapioca|
Paprika|Mortimer|Lentil""")
GAMES = _pool("""Hades|Celeste|Terraria|Factorio|Hollow Knight|Stardew Valley|Outer Wilds|Disco Elysium|
Slay the Spire|Subnautica|Rimworld|Dead Cells|Cuphead|Undertale|Bloodborne|Sekiro|Okami|Inscryption|Pentiment|
Cult of the Lamb|Tunic|Spiritfarer|Oxygen Not Included|Frostpunk|Dredge|Returnal|Firewatch|Transistor|Bastion|
Kentucky Route Zero|Night in the Woods|Baba Is You|Return of the Obra Dinn|Hotline Miami|Katana Zero|Nier Automata|
Persona 5|Xenoblade|Chrono Trigger|Shovel Knight|Hyper Light Drifter|Into the Breach|Darkest Dungeon|Pikmin|
Animal Well|Tetris Effect""")
BANDS = _pool("""Khruangbin|Radiohead|Tame Impala|Phoebe Bridgers|Fleetwood Mac|Gorillaz|Daft Punk|Bon Iver|
Arctic Monkeys|Mitski|Rosalia|Stromae|Bjork|Deftones|Paramore|Hozier|Alvvays|Beach House|Caribou|Big Thief|
Japanese Breakfast|Vampire Weekend|Massive Attack|Portishead|Sigur Ros|Mogwai""")
SPECIES = ("cat", "cat", "dog", "dog", "rabbit", "hamster", "parrot", "ferret", "gecko")
# Noise: games, bands and places people talk about that are nobody's planted fact.
N_GAMES = _pool("""Minecraft|Fortnite|Elden Ring|Valorant|Zelda|Balatro|Helldivers|Baldur's Gate|Overwatch|Apex|
Mario Kart|Tarkov|Palworld|Rocket League|Among Us""")
N_PLACES = _pool("""London|Paris|New York|Lisbon|Barcelona|Rome|Amsterdam|Toronto|Sydney|Chicago|Madrid|Seoul|
Dubai""")
N_BANDS = _pool("""Taylor Swift|Drake|Beyonce|BTS|Coldplay|Metallica|Dua Lipa""")
NOISE = _pool("""gm everyone|anyone around?|lol|lmao same|brb coffee ☕|ngl today was long|haha|true|agreed|no way 😂|
that's wild|good night folks 😴|yeah fair|wait what happened earlier?|ok that's actually funny|
does anyone know how to fix the audio crackling on discord?|what time is the event tonight?|
who's up for a match later?|patch notes are out btw|i need more sleep|it's like 32 degrees here today, melting|
only 14 hours till the weekend|my ping is 120ms rn, unplayable|got 3 wins in a row finally|
someone pin that message pls|+1|this channel is chaos today|can a mod check the announcements?|
ok but who ate the last slice|the new {ng} trailer looks sick|anyone played {ng}?|{ng} servers are down again 🙃|
{np} is on my list someday|my cousin is visiting {np} next month|saw a documentary about {np} yesterday|
{nb} is overrated, fight me|is {nb} touring this year?|check this out https://youtu.be/{link}|
https://example.com/post/{num} lol|read this earlier https://news.example.org/{num}|dogs are the best, no debate|
my neighbour's cat keeps visiting us 🐈|version {num}.{num2} fixed nothing|price went up to {num} bucks?? no thanks|
we need a movie night|congrats!!|oh nice|that's awesome|sounds fun|good luck!!|hope it goes well|rip|happy friday|
anyone watching the game tonight?|lunch time|back|ugh mondays|the bot is being weird again|
is it just me or is it cold|i'm so tired lol|omw|teach me your ways|lol what|how was your weekend?|
any plans for tonight?|i should really go to bed|hydrate, people 💧|that build is broken lol|ranked is pain|
who's hosting next week?|i'll be late, sorry|anyone want to duo?""")
DM_NOISE = _pool("""hey|thanks!|tell me a joke|what's 15% of 80?|how do i convert 5 miles to km|good morning|
can you summarize the rules of the server?|what's a good name for a sourdough starter|remind me to drink water lol|
never mind|ok cool|what time is it in {np} right now?|recommend me a podcast|is {ng} worth it?|thx""")
QUESTIONS = {"move": "wait where did you end up moving?", "job": "did you end up taking that job?",
             "pet": "what's the new pet called?", "game": "what's your favourite game anyway?",
             "band": "who do you listen to the most?", "trip": "any trips coming up?"}
TEMPLATES = {k: _pool(v) for k, v in {
    "move": """just moved to {v} last week, still unpacking boxes lol|
we finally relocated to {v}!! new apartment is tiny but cute|update: i live in {v} now 🙂|
moving day done. {v} here i come|so yeah, packed everything and moved to {v} on the weekend|
small life update — I moved to {v}. still figuring out where the good coffee is|
finally settled in {v}, the commute is way better""",
    "job": """started at {v} as a {role} on monday 🎉|new job at {v}! {role} role, nervous but excited|
got the offer from {v}, i'm gonna be a {role} there|first week as a {role} at {v} done, brain is fried|
so i work at {v} now ({role} team), ask me anything lol|quit my old gig, joined {v} as {role}""",
    "pet": """my cat {v} just knocked my coffee over 🙄|adopted a dog last weekend, named him {v}|
{v} (my {species}) has been zooming around all morning|we got a {species}!! her name is {v}|
my {species} {v} says hi 🐾|had to take {v} to the vet today, my {species} ate a sock. she's fine""",
    "game": """my favourite game is {v}, no contest|{v} is my all-time fav game tbh|
nothing beats {v} for me, best game ever made|if i had to pick one game forever it'd be {v}|
hot take but {v} is the GOAT, my fave game""",
    "band": """my favourite band is {v}|been listening to {v} nonstop, easily my fav band|
{v} is my favourite band, saw them live twice|nobody beats {v} for me music-wise""",
    "change": """honestly {v} is my favourite {what} now|ok new favourite {what}: {v}. sorry {old}|
{v} has replaced {old} as my favourite {what}|i think {v} is my fav {what} these days tbh|
changed my mind, {v} is the best {what}, it's my favourite now""",
    "trip": """flying to {v} on {month} {day}!!|booked tickets to {v} for the {nth} of {month} ✈️|
we're heading to {v} on {day} {month} for a week|trip to {v} on {mon} {day}, can't wait""",
    "trip_relative": """going to {v} next {weekday}, any tips?|in {n} days i'll be in {v} lol""",
}.items()}
ANSWERS = {"move": "{v}! last week 😅", "job": "yep! {v}, {role} team", "pet": "{v}! she's a {species}",
           "game": "{v}, easy", "band": "{v} probably", "trip": "{v} on {month} {day}!"}
PLANTED = {"move": ("city", {}), "job": ("company", {"role": ROLES}), "pet": ("pet", {"species": SPECIES})}
ASIDES = (" (finally)", " — long story", " btw", " lol", " 😅", " 🎉", " haha", "!!")


def _style(rng: random.Random, text: str, value: str) -> str:
    """Lowercase, an aside, an emoji or a typo, sometimes; never inside the planted value."""
    if rng.random() < 0.25:
        text = text.lower()
    if rng.random() < 0.25:
        text += rng.choice(ASIDES)
    if rng.random() < 0.15:
        words = text.split(" ")
        w = words[i := rng.randrange(len(words))]
        if len(w) > 4 and w.isalpha() and w.lower() not in value.lower():
            j = rng.randrange(len(w) - 1)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
            text = " ".join(words)
    return text


class _Gen:
    def __init__(self, spec: MemSpec, seed: int):
        self.spec, self.rng = spec, random.Random(f"{seed}:{spec.name}:memory")
        rng, n = self.rng, spec.users
        self.days = [spec.first_day + dt.timedelta(days=i) for i in range(spec.days)]
        self.names = rng.sample(NAMES, n)
        self.act = [rng.uniform(0.25, 0.7) for _ in range(n)]
        ids = itertools.count(1)
        self.channels: dict[str, dict] = {}  # channel id -> {guild, visibility, name, tz, members}
        self.guilds: dict[str, dict] = {}
        home = [u % spec.guilds for u in range(n)]
        rng.shuffle(home)
        member_of = [{h} | ({rng.randrange(spec.guilds)} if rng.random() < 0.35 else set()) for h in home]
        for g in range(spec.guilds):
            gid, tz = str(GUILD_BASE + g + 1), ZONES[g % len(ZONES)]
            members = [u for u in range(n) if g in member_of[u]]
            public = [str(CHANNEL_BASE + next(ids)) for _ in range(3)]
            for cid, name in zip(public, ("general", "gaming", "off-topic")):
                self.channels[cid] = {"guild": gid, "visibility": "public", "name": name, "tz": tz, "members": members}
            k = max(2, round(len(members) * 0.4))
            cid = str(CHANNEL_BASE + next(ids))
            self.channels[cid] = {"guild": gid, "visibility": "restricted", "name": "mods-lounge", "tz": tz,
                                  "members": sorted(rng.sample(members, min(k, len(members))))}
            self.guilds[gid] = {"tz": tz, "public": public, "restricted": cid, "members": members}
        self.dm_of: dict[int, str] = {}
        for u in sorted(rng.sample(range(n), n // 2)):
            cid = str(CHANNEL_BASE + next(ids))
            self.channels[cid] = {"guild": None, "visibility": "dm", "name": None, "tz": "UTC", "members": [u]}
            self.dm_of[u] = cid
        self.silent = [set() for _ in range(n)]
        for u in rng.sample(range(n), n // 3):
            length = rng.randint(*spec.silence)
            start = rng.randint(spec.plant_until // 2, max(spec.plant_until // 2, spec.days - length - 1))
            self.silent[u] = set(range(start, start + length))
        self.rows: list[dict] = []
        self.plants: list[dict] = []
        self.pools = {k: rng.sample(v, len(v)) for k, v in
                      (("city", CITIES), ("company", COMPANIES), ("pet", PETS), ("game", GAMES), ("band", BANDS))}

    # ------------------------------------------------------------------ messages

    def _ts(self, channel: str, day: int, hour: float | None = None) -> dt.datetime:
        d, h = self.days[day], hour if hour is not None else self.rng.uniform(8, 23.9)
        base = dt.datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(self.channels[channel]["tz"]))
        return base + dt.timedelta(hours=h, seconds=self.rng.randrange(60))

    def _say(self, channel: str, user: int, day: int, text: str, hour: float | None = None,
             reply: dict | None = None) -> dict:
        c = self.channels[channel]
        row = {"guild_id": c["guild"], "channel_id": channel, "visibility": c["visibility"],
               "user_id": str(USER_BASE + user + 1), "user_name": self.names[user], "text": text,
               "ts": self._ts(channel, day, hour)}
        row |= {"channel_name": c["name"]} if c["name"] else {"is_group": False}  # DMs: one-to-one
        row |= {"_reply": reply} if reply is not None else {}
        self.rows.append(row)
        return row

    def _noise(self, dm: bool = False) -> str:
        rng = self.rng
        return rng.choice(DM_NOISE if dm else NOISE).format(
                        ng=rng.choice(N_GAMES), np=rng.choice(N_PLACES), nb=rng.choice(N_BANDS),
                        link="".join(rng.choice("abcdefghijkmnpqrstuvwxyzABCDEFGH23456789") for _ in range(11)),
                        num=rng.randint(2, 99), num2=rng.randint(0, 9))

    def chatter(self) -> None:
        rng = self.rng
        for day in range(len(self.days)):
            weekend = 1.2 if self.days[day].weekday() >= 5 else 1.0
            for cid, c in self.channels.items():
                share = {"public": 0.45, "restricted": 0.35, "dm": 0.2}[c["visibility"]]
                recent: list[dict] = []
                for u in c["members"]:
                    if day in self.silent[u] or rng.random() > self.act[u] * share * weekend:
                        continue
                    for _ in range(1 + min(5, int(rng.expovariate(0.7)))):
                        reply = rng.choice(recent[-6:]) if recent and rng.random() < 0.2 else None
                        recent.append(self._say(cid, u, day, self._noise(c["visibility"] == "dm"), reply=reply))

    # ------------------------------------------------------------------ plants

    def _free_day(self, user: int, lo: int, hi: int) -> int | None:
        days = [d for d in range(max(1, lo), min(hi, len(self.days) - 1) + 1) if d not in self.silent[user]]
        return self.rng.choice(days) if days else None

    def _where(self, user: int) -> str:
        """The partition a fact is said in: mostly a public channel of one of the user's guilds,
        sometimes only the restricted channel (if a member) or only the DM (if any)."""
        rng = self.rng
        gid = rng.choice(sorted(g for g, v in self.guilds.items() if user in v["members"]))
        r, restricted = rng.random(), self.guilds[gid]["restricted"]
        if r < 0.2 and user in self.channels[restricted]["members"]:
            return restricted
        if r > 0.8 and user in self.dm_of:
            return self.dm_of[user]
        return rng.choice(self.guilds[gid]["public"])

    def _plant(self, user: int, kind: str, value: str, day: int, channel: str, extra: dict,
               templates: str | None = None, **fact) -> dict:
        rng, c = self.rng, self.channels[channel]
        partition = {"public": f"guild:{c['guild']}", "restricted": f"channel:{channel}"}.get(c["visibility"],
                                                                                             f"dm:{channel}")
        level = {"public": "guild_public", "restricted": "channel_restricted", "dm": "dm"}[c["visibility"]]
        f = {"id": f"u{user + 1}-{kind}-{len(self.plants)}", "user_id": USER_BASE + user + 1,
             "user_name": self.names[user], "kind": kind, "partition": partition, "level": level,
             "guild_id": c["guild"], "day": self.days[day].isoformat(), "keywords": [value], "value": value,
             "global_ok": kind in GLOBAL_KINDS and level == "guild_public", "said": [], "message_ids": []} | fact
        says = [day]
        if "old" not in fact and templates is None and rng.random() < 0.2:  # a fifth restated once, days later
            says += [d for d in [self._free_day(user, day + 3, day + 15)] if d is not None]
        used: set[str] = set()
        for d in says:
            hour = rng.uniform(9, 22)
            others = [m for m in c["members"] if m != user and d not in self.silent[m]]
            if templates is None and others and rng.random() < 0.2 and kind in ANSWERS and not used:
                q = self._say(channel, rng.choice(others), d, QUESTIONS[kind], hour=hour)
                row = self._say(channel, user, d, ANSWERS[kind].format(v=value, **extra), hour=hour + 0.05, reply=q)
            else:
                pool = TEMPLATES[templates or kind]
                choices = [t for t in pool if t not in used] or pool
                used.add(t := rng.choice(choices))
                row = self._say(channel, user, d, _style(rng, t.format(v=value, **extra), value), hour=hour)
            row["_plant"] = f["id"]
            f["said"].append(self.days[d].isoformat())
        self.plants.append(f)
        return f

    def plant(self) -> None:
        rng, spec = self.rng, self.spec
        for u in range(spec.users):
            until = spec.plant_until
            for kind, share in (("move", 0.6), ("job", 0.6), ("pet", 0.65)):
                day = self._free_day(u, 1, until)
                if rng.random() > share or day is None:
                    continue
                pool, extra = PLANTED[kind]
                self._plant(u, kind, self.pools[pool].pop(), day, self._where(u),
                            {k: rng.choice(v) for k, v in extra.items()})
            for _ in range(rng.choice((1, 1, 2))):
                if (day := self._free_day(u, 1, until + 10)) is None:
                    continue
                said = self.days[day]
                relative = rng.random() < 0.25  # "next Friday" (the coming week's), "in 12 days"
                ahead = 7 - said.weekday() + rng.randrange(7) if relative else rng.randint(3, 40)
                when = said + dt.timedelta(days=ahead)
                t = {"month": when.strftime("%B"), "mon": when.strftime("%b"), "day": when.day,
                     "nth": ordinal(when.day), "n": (when - said).days, "weekday": when.strftime("%A")}
                self._plant(u, "trip", self.pools["city"].pop(), day, self._where(u), t,
                            templates="trip_relative" if relative else None, event_day=when.isoformat())
            self._preferences(u)

    def _preferences(self, u: int) -> None:
        rng, spec = self.rng, self.spec
        for kind, share, change in (("game", 1.0, 0.4), ("band", 0.45, 0.3)):
            if rng.random() > share:
                continue
            changes = rng.random() < change
            last = len(self.days) - 1 - spec.supersede_after - spec.change_gap[0] if changes else spec.plant_until
            if (day := self._free_day(u, 1, min(spec.plant_until, last))) is None:
                continue
            first = self._plant(u, kind, self.pools[kind].pop(), day, where := self._where(u), {})
            if not changes:
                continue
            lo, hi = day + spec.change_gap[0], min(day + spec.change_gap[1], len(self.days) - 1 - spec.supersede_after)
            if (new_day := self._free_day(u, lo, hi)) is None:
                continue
            f = self._plant(u, "change", self.pools[kind].pop(), new_day, where, {"old": first["value"], "what": kind},
                            "change", old=first["value"], replaces=first["id"], pref=kind, global_ok=first["global_ok"])
            first["superseded_on"] = f["day"]


def generate(spec: MemSpec, seed: int) -> tuple[list[dict], list[dict], dict]:
    g = _Gen(spec, seed)
    g.plant()
    g.chatter()
    rows = sorted(g.rows, key=lambda r: r["ts"].astimezone(dt.timezone.utc))
    by_plant: dict[str, list[str]] = {}
    for i, row in enumerate(rows):
        row["message_id"] = str(MESSAGE_BASE + i + 1)  # in time order, like snowflakes
    for row in rows:
        reply = row.pop("_reply", None)
        if reply is not None and reply["channel_id"] == row["channel_id"]:
            row["reply_to"] = reply["message_id"]
        if plant := row.pop("_plant", None):
            by_plant.setdefault(plant, []).append(row["message_id"])
        row["ts"] = row["ts"].isoformat()
    for f in g.plants:
        f["message_ids"] = by_plant[f["id"]]
    world = {"channels": g.channels, "guilds": g.guilds, "dms": {c: u for u, c in g.dm_of.items()},
             "timezones": {gid: v["tz"] for gid, v in g.guilds.items()}, "user_base": USER_BASE + 1}
    _check_unique(rows, g.plants, g.names, g.channels)
    return rows, g.plants, world


def keyword_re(keyword: str) -> re.Pattern:
    """Case-insensitive, on word boundaries ("Miso's" matches Miso; "Portobello" is not Porto)."""
    return re.compile(r"(?<!\w)" + re.escape(keyword) + r"(?!\w)", re.IGNORECASE)


def _check_unique(rows: list[dict], plants: list[dict], names: list[str], channels: dict) -> None:
    """Every keyword occurs only in its own plant messages (and, for a changed preference's old
    value, in the message that changes it): noise cannot make a false hit."""
    own = {mid: f for f in plants for mid in f["message_ids"]}
    labels = " ".join(names) + " " + " ".join(c["name"] or "" for c in channels.values())
    for f in plants:
        for kw in f["keywords"]:
            pat = keyword_re(kw)
            if pat.search(labels):
                raise AssertionError(f"keyword {kw!r} is also a display or channel name")
            for row in (r for r in rows if pat.search(r["text"])):
                other = own.get(row["message_id"])
                if other is None or (other["id"] != f["id"] and other.get("old") != kw):
                    raise AssertionError(f"keyword {kw!r} of {f['id']} also in message {row['message_id']}")


def write(spec: MemSpec, seed: int, path: Path) -> dict:
    """The JSONL corpus and `<path>.plants.json` ({key, plants, world, counts}); reused when the
    spec, seed and generator version are the same."""
    meta_path = path.with_suffix(".plants.json")
    key = spec.key(seed)
    if (meta := cached(path, meta_path, key)) is not None:
        return meta
    rows, plants, world = generate(spec, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    counts = {"messages": len(rows), "users": len({r["user_id"] for r in rows}), "guilds": len(world["guilds"]),
              "dms": len(world["dms"]), "days": spec.days, "plants": len(plants),
              "plant_messages": sum(len(f["message_ids"]) for f in plants)}
    meta = {"key": key, "seed": seed, "spec": asdict(spec) | {"first_day": spec.first_day.isoformat()},
            "plants": plants, "world": world, "counts": counts}
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    return meta
