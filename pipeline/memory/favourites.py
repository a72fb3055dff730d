"""Favourites, however chat says them: "my fav game is Hades", "Hades is my all-time fave game",
"Hades is the GOAT game", "nobody beats Hades for me game-wise", "Hades has replaced Celeste as
my favourite game" (the new value only), "changed my mind, Hades is the best game, it's my
favourite now", "if I had to pick one game forever it'd be Hades", "been playing Hades nonstop,
easily my fav game".

Every one reads "Favourite <thing> is <X>" with key "favourite <thing>" (the thing as the
speaker named it, singular: "games" -> "game", "music" stays "music"), so a newer value
supersedes the older. Not a favourite: another's ("your favourite game is …"), a past or
negated one ("X used to be / is not / is no longer my favourite"), one without a thing ("X is my
fav", "X is the GOAT"), or an object that is no value ("this", "it", "a tie"). Pure; regexes
compiled once.
"""

from __future__ import annotations

import re

from pipeline.memory.phrasing import object_end, possessive
from pipeline.memory.vocab import BAD_OBJECT, NOT_THINGS, SAFE_THINGS

_I = re.IGNORECASE
_FAV = r"(?:favou?rite|fave|fav|goat|g\.o\.a\.t\.?)"
_PRE = r"(?:(?:all[- ]time|current|new|absolute|very|number one|#1|personal) )*"
# Words that end a thing rather than name it ("favourite game now is", "fav band ever").
_NOT_THING = frozenset("""now ever of rn atm tbh lol so too yet to is are was were and but by these at in on for ngl
honestly right this that because though overall period fr hands easily has have would will i it btw lately currently
tho imo still probably definitely def forever would be has ever's""".split()) | NOT_THINGS
_THING = r"(?P<thing>[a-z][\w-]*(?: [a-z][\w-]*)?)"
_HEDGE = (r"(?:(?:probably|definitely|def|honestly|easily|still|currently|hands down|by far|literally|always|now|"
          r"also|officially|absolutely|genuinely|truly|lowkey|highkey|kinda|prob|undoubtedly|without a doubt) )*")
_AFTER = r"(?=\s*(?:$|[,.;:!)]|\s))"

# "my fav game is Hades", "fav game: Hades"
_MY_FAV = re.compile(rf"(?:\bmy |^){_PRE}{_FAV} {_THING}(?: of all time| ever| rn| atm| now| currently| these days)?"
                     rf"\s*(?P<verb>is|are|has to be|has always been|remains|=|:|is still|is now|has become|became)"
                     rf"\s+{_HEDGE}(?P<x>)", _I)
# "Hades is my fav game", "Hades is the GOAT game", "Hades is the goat of games" (not "… of basketball")
_IS_FAV = re.compile(rf"\s(?:is|are|'s|has to be|remains|has become|became|=|is still|is now)\s+{_HEDGE}"
                     rf"(?:my {_PRE}{_FAV}|the {_PRE}(?:goat|g\.o\.a\.t\.?)) (?:of (?P<of>[a-z]+s)\b|{_THING})"
                     rf"{_AFTER}", _I)
# "Hades has replaced Celeste as my favourite game"
_REPLACED = re.compile(rf"\s(?:has |have )?(?:officially |now |just |finally )?(?:replaced|overtaken|overtook|"
                       rf"dethroned|beaten|beat out|taken over from|took over from|surpassed) (?:[^,.;!]+?) as my "
                       rf"{_PRE}{_FAV} {_THING}{_AFTER}", _I)
# "changed my mind, Hades is the best game, it's my favourite now"
_BEST_THEN_FAV = re.compile(rf"\s(?:is|'s) (?:the|my) (?:best|greatest|top) {_THING}\b[^.;!]*?,?\s*(?:it's|its|that's|"
                            rf"thats|it is|that is) (?:now |officially |definitely |easily )?my (?:new )?{_FAV}"
                            r"(?:\s+(?:now|again|forever|ever))?\s*(?:$|[,.;!])", _I)
# "nobody beats Hades for me game-wise", "nothing tops Radiohead when it comes to bands"
_NOBODY = re.compile(r"\b(?:nobody|no one|noone|nothing|none) (?:beats|tops|compares to|comes close to|touches|"
                     r"can beat|can top) (?P<x>[^,.;!]+?)(?: for me)?(?:,? (?P<thing>[a-z]+)[- ]wise|,? (?:when it "
                     r"comes to|as far as|in terms of) (?P<of>[a-z]+)(?: go(?:es)?)?)\b", _I)
# "if I had to pick one game forever it'd be Hades"
_IF_ONE = re.compile(rf"^if i (?:had to|could only|could|was forced to|were forced to|must|only got to) (?:pick|choose|"
                     r"keep|play|listen to|watch|eat|have|read) (?:one|a single|only one|just one|1) "
                     rf"{_THING}(?: forever| for the rest of my life| for life| for eternity| until i die| again)?"
                     r",?\s+(?:it'?d|it would|it will|it's|its|i'?d (?:go with|pick|choose|say)|i would (?:go with|"
                     r"pick|choose|say)|that'?d|would) (?:be )?(?P<x>)", _I)
# "been playing Hades nonstop, easily my fav game"
_DOING_FAV = re.compile(r"^(?:(?:i've |i have |i'm |i am )?(?:been |currently |still )?|i keep )"
                        r"(?:listening to|playing|watching|reading|rewatching|replaying|bingeing|binging|obsessed with|"
                        rf"jamming to|blasting|streaming|eating|cooking) (?P<x>[^,;]+?),?\s+{_HEDGE}my (?:new )?{_PRE}"
                        rf"{_FAV} {_THING}"
                        r"(?:\s+(?:now|rn|atm|ever|of all time|lately|for sure|fr|lol))?\s*[.!]*$", _I)
_DOING_END = re.compile(r"\s+(?:nonstop|non-stop|on repeat|all day|all week|all month|lately|again|every day|"
                        r"constantly|24/7|for hours|a lot|so much)\b", _I)
# Where the value before "is my favourite" starts: after a boundary or a hedge.
_BEFORE = re.compile(r"(?:^|[,;:!.(]|\s(?:and|but|so|because|cuz|tbh|honestly|ngl|imo|lol|ok|okay|yeah|well|nah|"
                     r"though|mind|think|guess|say|rn|now)\s)\s*", _I)
_NOT_VALUE = re.compile(r"^(?:not|no|never|none|nothing|n't|a tie|hard|too|impossible|changing|different|whatever|"
                        r"apparently|supposedly|allegedly|reportedly|everyone says|people say|they say|"
                        r"kinda|sort of|tied|between|either|i|i'm|we|you|your|u|ur|he|she|they|his|her|their|who|"
                        r"what|which|why|how|one|any|every|still)\b|'t\b", _I)


_IE_PLURALS = frozenset("""movies cookies zombies rookies selfies hoodies goalies pies ties lies genies brownies
smoothies veggies indies bookies calories onesies techies newbies foodies freebies""".split())


def singular(word: str) -> str:
    """The singular of a thing's noun: games -> game, series -> series, dishes -> dish."""
    low = word.lower()
    if low.endswith(("ss", "us", "is", "series", "news")) or len(low) <= 3:
        return low
    if low.endswith("ies"):
        return low[:-1] if low in _IE_PLURALS else low[:-3] + "y"
    if low.endswith(("shes", "ches", "xes", "sses")):
        return low[:-2]
    return low[:-1] if low.endswith("s") else low


def _thing(m: re.Match) -> str | None:
    words = (m.groupdict().get("thing") or m.groupdict().get("of") or "").lower().split()
    while words and words[-1] in _NOT_THING:
        words.pop()
    if not words or words[0] in _NOT_THING:
        return None
    return " ".join(words[:-1] + [singular(words[-1])])


def _value_before(sentence: str, end: int) -> str:
    head = sentence[:end]
    start = 0
    for b in _BEFORE.finditer(head):
        start = b.end()
    return head[start:].strip()


def _good(x: str) -> bool:
    return bool(x) and len(x.split()) <= 6 and not BAD_OBJECT.match(x) and not _NOT_VALUE.search(x) \
        and x[:1].isalnum()


def favourites(sentence: str, hypothetical: bool = False) -> list[tuple[str, str, bool]]:
    """(text, key, global_safe) of every favourite the sentence states (usually one). Of a
    `hypothetical` sentence (a conditional, a wish) only "if I had to pick one …, it'd be X"."""
    low = sentence.lower()
    if hypothetical and not low.startswith("if"):
        return []
    if not any(w in low for w in ("fav", "goat", "g.o.a.t", "beats", "tops", "compares", "comes close", "touches",
                                  "if i")):
        return []
    found: list[tuple[str, str]] = []  # (thing, value)
    for rx in (_IF_ONE,) if hypothetical else (_IF_ONE, _MY_FAV, _DOING_FAV):
        m = rx.search(sentence)
        if m and (thing := _thing(m)):
            if rx is _DOING_FAV:
                stop = _DOING_END.search(sentence, m.start("x"), m.end("x"))
                end = object_end(sentence, m.start("x"), stop.start() if stop else m.end("x"))
            else:
                end = object_end(sentence, m.start("x"))
            found.append((thing, sentence[m.start("x"):end].strip()))
    for rx in () if hypothetical else (_REPLACED, _BEST_THEN_FAV, _IS_FAV):
        m = rx.search(sentence)
        if m and (thing := _thing(m)):
            found.append((thing, _value_before(sentence, m.start())))
    m = None if hypothetical else _NOBODY.search(sentence)
    if m and (thing := _thing(m)):
        found.append((thing, m.group("x").strip()))
    out, seen = [], set()
    for thing, x in found:
        if _good(x) and thing not in seen:
            seen.add(thing)
            out.append((f"Favourite {thing} is {possessive(x)}", f"favourite {thing}",
                        thing.split()[-1] in SAFE_THINGS))
    return out
