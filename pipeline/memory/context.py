"""Facts that need more than one clause: a pet named in one clause and its kind in another ("we
adopted a kitten, her name is miso"; "had to take Miso to the vet today, my ferret ate a sock";
"Miso! she's a cat"), even in the speaker's previous message; a move told as "moving day done.
Utrecht here I come"; and a short answer to the question just before it ("where do you live?" —
"utrecht"). Pure; regexes are compiled once.

An answer is read only from the line right after a question from someone else that ends in "?"
and asks for a favourite, where one lives or is from, or what one does (a reply to anyone else
is no answer); the fact cites the answer alone, so it must be grounded in it: "Lives in Utrecht"
is (half of its words), "Favourite game is Rimworld" from "Rimworld, easy" is not and is dropped
by the extractor's grounding check, as the validator would.
"""

from __future__ import annotations

import datetime as dt
import re

from pipeline.memory import dates
from pipeline.memory.favourites import singular
from pipeline.memory.fragments import place_like
from pipeline.memory.mentions import NOT_NAME, pet_key
from pipeline.memory.phrasing import straight
from pipeline.memory.vocab import BAD_OBJECT, CHATTER, JOB, PET, SAFE_THINGS, article

_I = re.IGNORECASE
_MONTHS_DAYS = frozenset("""january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday""".split())

# "I got a kitten", "we adopted a puppy", "my new kitten", "our dog", "new puppy!"
_PET_MENTION = re.compile(rf"\b(?:(?:i|we)(?:'ve| have)? (?:just |finally )?(?:got|adopted|rescued|have|brought home|"
                          rf"picked up|bought)|my|our|new) (?:an? |our |my )?(?:new |little |baby |tiny |rescue )?"
                          rf"(?:[\w-]+ )?(?P<kind>{PET})\b", _I)
_PRONOUN_NAME = re.compile(r"\b(?:(?:her|his|its|their) name(?:'s| is)|(?:she|he|it)(?:'s| is) (?:called|named)|"
                           r"(?:named|called) (?:her|him|it)) (?P<name>[\w'-]+)", _I)
# "had to take Miso to the vet", "fed Miso": a name by what one does for a pet (not "took Sarah home")
_CARE = re.compile(r"\b(?:(?:take|took|taking|bring|brought|walk|walked|walking) "
                   r"(?P<name>(?-i:[A-Z][\w'-]+)|[a-z][\w'-]+)"
                   r"(?= (?:to the (?:vet|groomers?|dog park)|for (?:a|his|her|their) walk|out for a walk))|"
                   r"(?:feed|fed|feeding|groom|groomed|bathe|bathed|brush|brushed) (?P<fed>(?-i:[A-Z][\w'-]+))"
                   r"(?=\s*(?:$|[,.!;]|(?:twice|again|today|tonight|this morning|this evening|and|then|lol)\b)))(?!')",
                   _I)
_UNNAMED = re.compile(rf"\b(?:my|our) (?:little |baby |old |new )?(?P<kind>{PET})\b", _I)
_INTRO = re.compile(rf"^(?:(?:this is|meet|say hi to|introducing|here's) )?(?P<name>(?-i:[A-Z][\w'-]+))(?:\s*[!.,:]+|"
                    rf"\s[-–—])+\s*(?:she|he|they)(?:'s| is| are) (?P<det>my|our|a|an) (?:new |little |baby |rescue |"
                    rf"\w+ )?(?P<kind>{PET})\b(?P<end>\s*[!.]*\s*$)?", _I)
_HERE_I_COME = re.compile(r"(?:^|[.!]\s*)(?P<x>[\w'-]+(?: [\w'-]+){0,2}),? here (?:i|we) come\b", _I)
_MOVING = re.compile(r"\b(?:moving day|moved|movers|moving (?:truck|van|boxes)|new (?:place|flat|apartment|house|home)|"
                     r"unpack\w*|packed|keys to)\b", _I)


def _name_ok(name: str) -> bool:
    low = name.lower()
    return low not in NOT_NAME and low not in _MONTHS_DAYS and len(low) > 1


def pet_facts(statements: str, earlier: list[tuple[int, str]]) -> list[tuple[str, str, float, tuple[int, ...]]]:
    """(text, key, confidence, earlier positions it also rests on) of pets named across clauses.
    `statements`: the line's own statements; `earlier`: (position, text) of the same speaker's
    previous lines, newest first."""
    out = []
    for m in _PRONOUN_NAME.finditer(statements):
        if not _name_ok(m.group("name")):
            continue
        kinds = list(_PET_MENTION.finditer(statements, 0, m.start()))
        if kinds:  # "we got a puppy": the household's, as sure as any "we" fact
            we = kinds[-1].group(0).lower().startswith(("we", "our"))
            out.append((m.group("name"), kinds[-1].group("kind"), 0.8 if we else 0.9, ()))
            continue
        for position, text in earlier:
            kinds = list(_PET_MENTION.finditer(straight(text)))
            if kinds:
                out.append((m.group("name"), kinds[-1].group("kind"), 0.8, (position,)))
                break
    unnamed = {k.group("kind").lower() for k in _UNNAMED.finditer(statements)}
    if len(unnamed) == 1:
        for m in _CARE.finditer(statements):
            name = m.group("name") or m.group("fed")
            if _name_ok(name) and name.lower() not in unnamed:
                out.append((name, unnamed.pop(), 0.8, ()))
                break
    m = _INTRO.match(statements)
    mine = m is not None and m.group("det").lower() in ("my", "our")
    if m and _name_ok(m.group("name")) and (mine or m.group("end") is not None):  # not "Luna! she's a cat from …"
        out.append((m.group("name"), m.group("kind"), 0.9 if mine else 0.8, ()))
    return [(f"Has {article(kind.lower())} named {name}", pet_key(name), confidence, cited)
            for name, kind, confidence, cited in out]


def moved_here(statements: str) -> str | None:
    """"moving day done. Utrecht here I come" -> "Moved to Utrecht"; None without a move."""
    m = _HERE_I_COME.search(statements)
    if m and place_like(m.group("x")) and _MOVING.search(statements):
        return f"Moved to {m.group('x')}"
    return None


# "booked it!! Lisbon on September 13!": a place and a date alone, after a trip of the speaker's
_PLACE_ON = re.compile(r"^(?P<x>(?-i:[A-Z][\w'-]+(?: [A-Z][\w'-]+){0,2})) (?P<rest>(?:on|from) .+?)[\s!.]*$")
_TRIP_CUE = re.compile(r"^(?:(?:so|finally|just|ok|okay|yay|lol|omg|we|i)\W+)*(?:i'm |we're |i've |we've )?"
                       r"(?:(?:just|finally|officially) )?(?:booked|going|flying|heading|travell?ing|(?:my |our |the )?"
                       r"(?:trip|flights?|tickets?|holiday|vacation|vacay)(?:'s)?\b)", _I)
_CALLED_OFF = re.compile(r"\b(?:not|n't|cancel\w*|postponed|called off|never|no longer|maybe|might)\b|n't\b", _I)


def dated_place(statements: list[str], today: dt.date) -> tuple[str, str, dt.date] | None:
    """(text, category, day) of "<Place> on <date>" said beside a trip of one's own in the same
    message ("finally booked it. Lisbon on September 13!"); else None."""
    for i, said in enumerate(statements):
        m = _PLACE_ON.match(said)
        if m is None or not place_like(m.group("x")):
            continue
        rest = m.group("rest")
        when = dates.find_date(rest, today, False)
        if when is None or rest[:when.start].strip().lower() not in ("", "on", "from") or rest[when.end:].strip(" !."):
            continue
        if any(_TRIP_CUE.match(o) and not _CALLED_OFF.search(o) for o in statements[:i] + statements[i + 1:]):
            return f"Going to {m.group('x')}", "plan" if when.day > today else "event", when.day
    return None


# ------------------------------------------------------------------ answers

_Q_FAV = re.compile(r"\b(?:your|ur|y'?all'?s?|you guys'?|everyone'?s|people'?s)\s+(?:all[- ]time |current |top )?"
                    r"(?:favou?rite|fave?|fav) (?P<thing>[a-z][\w-]*(?: [a-z][\w-]*)?)\s*\?+\s*$", _I)
_Q_LIVE = re.compile(r"\bwhere (?:do|are|r) (?:you|u|y'?all|you guys|everyone|ppl|people)(?: all)? "
                     r"(?P<what>live|living|based|located|from)\b[^?]*\?+\s*$", _I)
_Q_JOB = re.compile(r"\b(?:what (?:do|does) (?:you|u|y'?all|everyone|you guys) do(?: for (?:work|a living))?|"
                    r"what(?:'s| is) (?:your|ur) (?:job|work|day job))\s*\?+\s*$", _I)
_VALUE = re.compile(r"^(?:(?:probably|prob|def|definitely|easily|obviously|hmm+|oh|well|honestly|tough one|"
                    r"hard to say|gotta be|has to be|it's|its|prolly)\b[\s,:!.]*)*(?P<x>[^,.!;:()]+)", _I)
_VALUE_END = re.compile(r"\s+(?:lol|lmao|tbh|easily|probably|obviously|for sure|hands down|ngl|haha\w*|no contest|"
                        r"by far|of course|obv|fr|rn|atm|now|currently)\b.*$", _I)
_JOB_VALUE = re.compile(rf"^(?:an? )?(?P<role>(?:[\w+#-]+ ){{0,3}}?{JOB})(?: (?:at|for|@) (?P<at>[\w&.' -]+))?$", _I)
_NO_ANSWER = frozenset("""idk dunno none nothing same you u yes no yeah nah nope lol too many depends all everything
everywhere nowhere earth here there home a secret""".split()) | CHATTER
_ASKED_BACK = re.compile(r"[\s,.!]*(?:and |what about |how about )?(?:you|u|wbu|hbu|yourself|urself|y'?all)\s*\?+$", _I)
_OWN_WORDS = re.compile(r"\b(?:i|i'm|i've|my|me|we|we're|our)\b", _I)


def answer(question, reply) -> tuple[str, str, str, bool] | None:
    """(text, category, key, global_safe) the reply answers to the question line just before it,
    or None: a short answer without a question or a statement of its own."""
    q, a = question.text.strip(), _ASKED_BACK.sub("", straight(reply.text).strip())
    if not q.endswith("?") or "?" in a or _OWN_WORDS.search(a) or len(a.split()) > 8 or "\n" in a:
        return None
    if reply.reply_to_user is not None and reply.reply_to_user != question.user_id:
        return None
    m = _VALUE.match(a)
    x = _VALUE_END.sub("", m.group("x")).strip() if m else ""
    if not x or x.lower() in _NO_ANSWER or BAD_OBJECT.match(x) or len(x.split()) > 4:
        return None
    if qm := _Q_FAV.search(q):
        words = qm.group("thing").lower().split()
        thing = " ".join(words[:-1] + [singular(words[-1])])
        return f"Favourite {thing} is {x}", "preference", f"favourite {thing}", words[-1] in SAFE_THINGS
    if (qm := _Q_LIVE.search(q)) and place_like(x):
        if qm.group("what").lower() == "from":
            return f"Is from {x}", "identity", "hometown", False
        return f"Lives in {x}", "identity", "home city", False
    if _Q_JOB.search(q) and (jm := _JOB_VALUE.match(x)):
        role = jm.group("role")
        return (f"Is {article(role)} at {jm.group('at')}" if jm.group("at") else f"Is {article(role)}"), \
            "skill/work", "job", False
    return None
