"""The search section's corpus: what nights of summarizing leave behind, as rows of memory_facts,
daily_summaries and historical_summaries (the search index is built from them by the database's
own triggers), for many users across several guilds. Fixed before any search result was seen.

World: guilds (Zipf-sized) with one public partition (`guild:G`) and one restricted channel
(`channel:C`, ~40% of a guild's users); every user in one guild, 30% in a second; half have a
one-to-one DM with the bot (`dm:D`). Activity is log-normal: most users leave tens of items, a
few leave over a thousand. Each user: about half of the fact kinds of bench/search_texts.py
(said in their guild mostly, some only in the restricted channel or the DM), 3–9 background
facts (many sharing words with those kinds), favourites promoted to `global` for a third, older
values of a job / home / pet kept as `superseded` (not searchable); a daily summary (1–3
sentences of small talk, 4% empty) for every day active in each partition over six months; four
weekly historical summaries per partition (only the newest is searchable).

Questions: facts picked at random (half in a guild, a quarter each restricted / DM), asked by
their user in the scope they were said in; alternately a same-words and a different-words
question of the fact's template. Each also has probe asks that must not see it: another guild,
the user's other guild, the guild scope for a restricted or DM fact, and the same question asked
by another user of that scope. A latency sample asks random questions of random users in their
scopes."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from dataclasses import asdict, dataclass, field

from .search_texts import BACKGROUND, DAILY, GLOBAL, HISTORY_OPEN, KINDS, SLOTS

GENERATOR_VERSION = "search-1"
GUILD_BASE, USER_BASE, CHANNEL_BASE, DM_BASE = 1350000000000000000, 1360000000000000000, 1370000000000000000, \
    1380000000000000000
CREATED = "2026-09-01T03:00:00.000000Z"
_SLOT = re.compile(r"\{(\w+?)(\d?)\}")


@dataclass(frozen=True)
class SearchSpec:
    name: str
    users: int
    guilds: int
    questions: int          # facts asked about (quality and leaks)
    lookups: int            # the latency sample
    activity: float = 3.4   # log-normal mu of a user's active days in their main guild (sigma 1.0)
    days: int = 180
    first_day: dt.date = dt.date(2026, 3, 1)


SIZES = {
    "tiny": SearchSpec("tiny", users=140, guilds=3, questions=80, lookups=600),
    "small": SearchSpec("small", users=1_400, guilds=8, questions=400, lookups=3_000),
    "large": SearchSpec("large", users=14_000, guilds=40, questions=800, lookups=10_000),
}


def fill(template: str, rng: random.Random, values: dict | None = None) -> str:
    """Fill {slot} (and {slot2}: another value of the same pool) from SLOTS; values wins."""
    def one(m: re.Match) -> str:
        key = m.group(1) + m.group(2)
        if values is not None and key in values:
            return values[key]
        v = rng.choice(SLOTS[m.group(1)])
        return fill(v, rng) if "{" in v else v

    return _SLOT.sub(one, template)


def level_of(partition: str) -> str:
    return {"guild": "guild_public", "channel": "channel_restricted", "dm": "dm"}[partition.split(":")[0]]


@dataclass
class User:
    index: int
    id: int
    guilds: list[int]                      # guild ids, main first
    channel: str | None                    # restricted channel partition (main guild) if a member
    dm: str | None
    active: dict[str, int] = field(default_factory=dict)   # partition -> active days

    @property
    def partitions(self) -> list[str]:
        return list(self.active)


class SearchCorpus:
    def __init__(self, spec: SearchSpec, seed: int):
        self.spec, self.seed = spec, seed
        rng = random.Random(f"{seed}:{spec.name}:search-world")
        self.guilds = [GUILD_BASE + g for g in range(spec.guilds)]
        self.restricted = {g: f"channel:{CHANNEL_BASE + i * 10 + 1}" for i, g in enumerate(self.guilds)}
        self.guild_of_channel = {p: g for g, p in self.restricted.items()}
        weights = [1 / (i + 1) ** 0.8 for i in range(spec.guilds)]
        self.users: list[User] = []
        for i in range(spec.users):
            main = rng.choices(self.guilds, weights)[0]
            gs = [main] + ([rng.choice([g for g in self.guilds if g != main])] if rng.random() < 0.3 else [])
            u = User(i, USER_BASE + i, gs, self.restricted[main] if rng.random() < 0.4 else None,
                     f"dm:{DM_BASE + i}" if rng.random() < 0.5 else None)
            a = rng.lognormvariate(spec.activity, 1.0)
            for p, share in ((f"guild:{main}", 1.0), (f"guild:{gs[-1]}" if len(gs) > 1 else None, 0.4),
                             (u.channel, 0.25), (u.dm, 0.2)):
                if p:
                    u.active[p] = max(1, min(spec.days, round(a * share)))
            self.users.append(u)
        self.facts: list[dict] = []
        for u in self.users:
            self._facts(u)
        self.fact_owner = {f["id"]: f["user_id"] for f in self.facts}
        self.questions = self._questions()
        self.lookups = self._lookups()

    # ------------------------------------------------------------------ facts

    def _day(self, rng: random.Random, lo: int = 0) -> dt.date:
        return self.spec.first_day + dt.timedelta(days=rng.randrange(lo, self.spec.days))

    def _place(self, rng: random.Random, u: User) -> str:
        ps = u.partitions
        w = [{"guild": 6 if p == f"guild:{u.guilds[0]}" else 1, "channel": 1.5, "dm": 1.5}[p.split(":")[0]] for p in ps]
        return rng.choices(ps, w)[0]

    def _fact(self, u: User, partition: str, text: str, category: str, key: str | None, rng: random.Random, *,
              level: str | None = None, status: str = "active", day: dt.date | None = None,
              superseded_on: dt.date | None = None, **extra) -> dict:
        first = day or self._day(rng)
        last = min(first + dt.timedelta(days=rng.choice((0, 0, 0, 3, 12, 40))), self.spec.first_day
                   + dt.timedelta(days=self.spec.days - 1))
        f = {"id": len(self.facts) + 1, "user_id": u.id, "partition": partition, "level": level or level_of(partition),
             "category": category, "text": text, "fact_key": key, "confidence": round(rng.uniform(0.6, 0.98), 2),
             "first_seen": first.isoformat(), "last_seen": last.isoformat(), "status": status,
             "superseded_on": superseded_on.isoformat() if superseded_on else None, **extra}
        self.facts.append(f)
        return f

    def _facts(self, u: User) -> None:
        rng = random.Random(f"{self.seed}:{u.id}:facts")
        for kind, (category, key, templates) in KINDS.items():
            if rng.random() >= 0.5:
                continue
            t = rng.randrange(len(templates))
            partition = self._place(rng, u)
            day = self._day(rng, 20)
            if key in ("job", "home city", "pet") and rng.random() < 0.3:  # an older value, now history
                self._fact(u, partition, fill(templates[t][0], rng), category, key, rng, status="superseded",
                           day=day - dt.timedelta(days=rng.randint(5, 20)), superseded_on=day)
            values = {}
            text = _SLOT.sub(lambda m: values.setdefault(m.group(1), fill("{" + m.group(1) + "}", rng)),
                             templates[t][0])
            self._fact(u, partition, text, category, key, rng, day=day, kind=kind, template=t, values=values)
        for text in rng.sample(BACKGROUND, rng.randint(3, 9)):
            self._fact(u, self._place(rng, u), fill(text, rng), "other", None, rng)
        for text in GLOBAL:
            if rng.random() < 0.35:
                self._fact(u, f"guild:{u.guilds[0]}", fill(text, rng), "preference", text.split(" is")[0].lower(),
                           rng, level="global")

    # ------------------------------------------------------------------ questions

    def readable(self, scope: str, user_id: int) -> set[str]:
        """The partitions a context of (scope, user) is built from (README, Scopes)."""
        kind, ident = scope.split(":")
        if kind == "guild":
            return {scope}
        if kind == "channel":
            return {scope, f"guild:{self.guild_of_channel[scope]}"}
        owner = self.users[int(ident) - DM_BASE]
        return {scope} | (set(owner.partitions) if owner.id == user_id else set())

    def _questions(self) -> list[dict]:
        rng = random.Random(f"{self.seed}:{self.spec.name}:search-questions")
        pools: dict[str, list[dict]] = {"guild": [], "channel": [], "dm": []}
        for f in self.facts:
            if "kind" in f and f["status"] == "active":
                pools[f["partition"].split(":")[0]].append(f)
        for pool in pools.values():
            rng.shuffle(pool)
        out = []
        for i in range(self.spec.questions):
            where = rng.choices(("guild", "channel", "dm"), (2, 1, 1))[0]
            if not pools[where]:
                where = "guild"
            f = pools[where].pop()
            cls = ("same", "different")[i % 2]
            _fact, same, different = KINDS[f["kind"]][2][f["template"]]
            text = fill(rng.choice(same if cls == "same" else different), rng, f["values"])
            out.append({"id": i, "user_id": f["user_id"], "scope": f["partition"], "fact_id": f["id"],
                        "fact": f["text"], "kind": f["kind"], "class": cls, "where": where, "question": text,
                        "probes": self._probes(f, rng)})
        return out

    def _probes(self, f: dict, rng: random.Random) -> list[dict]:
        """Asks that must not see fact f: (scope, asker, what)."""
        u = self.users[f["user_id"] - USER_BASE]
        p, kind = f["partition"], f["partition"].split(":")[0]
        out = []
        others = [g for g in self.guilds if g not in u.guilds]
        if others:
            out.append({"scope": f"guild:{rng.choice(others)}", "user_id": u.id, "what": "cross_guild"})
        for g in u.guilds:
            if f"guild:{g}" != p and (kind != "channel" or g != self.guild_of_channel[p]):
                out.append({"scope": f"guild:{g}", "user_id": u.id, "what": "other_guild_of_user"})
        if kind == "channel":
            out.append({"scope": f"guild:{self.guild_of_channel[p]}", "user_id": u.id, "what": "private_to_guild"})
        if kind == "dm" and u.channel:
            out.append({"scope": u.channel, "user_id": u.id, "what": "private_to_guild"})
        if kind == "dm" and f"guild:{u.guilds[0]}" not in [o["scope"] for o in out]:
            out.append({"scope": f"guild:{u.guilds[0]}", "user_id": u.id, "what": "private_to_guild"})
        mates = [v for v in self.users if v.id != u.id and (kind == "dm" or p in v.active)]
        if mates:
            out.append({"scope": p, "user_id": rng.choice(mates).id, "what": "other_user"})
        return out

    def _lookups(self) -> list[tuple[str, int, str]]:
        rng = random.Random(f"{self.seed}:{self.spec.name}:search-lookups")
        asks = [q for _c, _k, ts in KINDS.values() for _f, same, diff in ts for q in same + diff]
        out = []
        for _ in range(self.spec.lookups):
            u = rng.choice(self.users)
            out.append((rng.choice(u.partitions), u.id, fill(rng.choice(asks), rng)))
        return out

    # ------------------------------------------------------------------ rows

    def users_slice(self, part: str, split: int) -> list[User]:
        return self.users[:split] if part == "head" else self.users[split:]

    def fact_rows(self, users: list[User]):
        ids = {u.id for u in users}
        for f in self.facts:
            if f["user_id"] in ids:
                src = json.dumps([f"{f['partition'].split(':')[1]}:{f['id']}"])
                yield (f["id"], f["user_id"], f["partition"], f["level"], f["category"], f["text"], f["fact_key"],
                       f["confidence"], None, f["first_seen"], f["last_seen"], src, "extracted", f["status"],
                       f["superseded_on"], f"h{f['id']}", CREATED, CREATED)

    def daily_rows(self, users: list[User]):
        for u in users:
            rng = random.Random(f"{self.seed}:{u.id}:daily")
            for p, n in u.active.items():
                for d in sorted(rng.sample(range(self.spec.days), n)):
                    text = "" if rng.random() < 0.04 else " ".join(
                        fill(rng.choice(DAILY), rng) for _ in range(rng.choice((1, 1, 2, 2, 3))))
                    yield (p, (self.spec.first_day + dt.timedelta(days=d)).isoformat(), u.id, text, f"d{d}", False,
                           CREATED)

    def historical_rows(self, users: list[User]):
        last = self.spec.first_day + dt.timedelta(days=self.spec.days - 1)
        for u in users:
            rng = random.Random(f"{self.seed}:{u.id}:historical")
            for p, n in u.active.items():
                if n < 5:
                    continue
                end = last - dt.timedelta(days=rng.randrange(0, 60))
                for k in (3, 2, 1, 0):  # in day order, as weekly runs write them
                    text = "" if rng.random() < 0.03 else " ".join(
                        [rng.choice(HISTORY_OPEN)] + [fill(rng.choice(DAILY), rng) for _ in range(rng.randint(3, 6))])
                    yield (p, u.id, (end - dt.timedelta(days=7 * k)).isoformat(), text, f"w{k}", 6, False, CREATED,
                           1, None)

    def channel_rows(self):
        for i, g in enumerate(self.guilds):
            yield (CHANNEL_BASE + i * 10, g, "public", f"guild:{g}", False, f"general-{i}", False)
            yield (CHANNEL_BASE + i * 10 + 1, g, "restricted", self.restricted[g], False, f"staff-{i}", False)
        for u in self.users:
            if u.dm:
                yield (int(u.dm.split(":")[1]), None, "dm", u.dm, False, None, True)

    def history_rows(self):
        """One message per (user, partition): who wrote where (a one-to-one DM's owner reads their
        own rows from every partition they wrote in)."""
        n = 0
        for u in self.users:
            for p in u.partitions:
                kind, ident = p.split(":")
                g = int(ident) if kind == "guild" else self.guild_of_channel.get(p)
                cid = int(ident) if kind != "guild" else CHANNEL_BASE + self.guilds.index(g) * 10
                n += 1
                yield (n, g, cid, {"guild": "public", "channel": "restricted", "dm": "dm"}[kind], p, u.id, "hi",
                       "2026-03-01T12:00:00.000000Z", None, None, CREATED)

    def meta(self) -> dict:
        return {"spec": asdict(self.spec) | {"first_day": self.spec.first_day.isoformat()},
                "users": len(self.users), "guilds": len(self.guilds), "facts": len(self.facts),
                "active_facts": sum(f["status"] == "active" for f in self.facts),
                "restricted_members": sum(u.channel is not None for u in self.users),
                "dms": sum(u.dm is not None for u in self.users),
                "daily_rows": sum(sum(u.active.values()) for u in self.users)}
