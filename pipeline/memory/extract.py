"""The offline fact extractor: durable facts about the speakers of one partition-day, from their
own first-person statements. No model, no I/O, deterministic; the extractive summarizer's facts.

A fact comes only from a speaker's own sentence (text.sentences) that is not a question, not a
quotation (quoted spans and "> " quote lines are masked), not reported speech, not a
conditional or a wish. A sentence is split into clauses at "and I" / ", my" …; a clause that
starts (after filler like "lol", "btw", a leading date) with I / I'm / I've / my is rephrased in
the third person without the person (phrasing.third_person), so the fact reuses the speaker's
own words and stays grounded. Specific patterns (home, job, pets, favourites, preferences,
languages, time zones, trips and plans with dates, skills, age, birthday, family) give a key and
confidence 0.9; other first-person statements with a proper noun, a number or an explicit date
give confidence 0.75; anything else gives nothing.
"""

from __future__ import annotations

import datetime as dt
import re

from pipeline.memory import dates
from pipeline.memory.model import Candidate
from pipeline.memory.phrasing import capitalise, straight, third_person
from pipeline.summarize.base import PartitionDay
from pipeline.summarize.text import content_tokens, sentences

MAX_CHARS = 200
SPECIFIC, GENERIC = 0.9, 0.75

_W = lambda words: "(?:" + "|".join(words.split()) + ")"  # noqa: E731 - a word list as a regex group
_ADV = r"(?:(?:just|really|also|still|finally|recently|actually|officially|currently|now|literally|basically|only|mostly|usually)\s+)*"
_IM, _IVE, _ILL = r"i(?:'m|\s+am)", r"i(?:'ve|\s+have)", r"i(?:'ll|\s+will)"
_PET = _W("dog cat puppy kitten pup hamster rabbit bunny parrot bird budgie cockatiel fish goldfish betta snake "
          "lizard gecko turtle tortoise ferret rat mouse chinchilla hedgehog axolotl horse pony chicken "
          "guinea\\s+pig bearded\\s+dragon")
_REL = _W("wife husband partner girlfriend boyfriend fiance fiancé fiancee fiancée son daughter sister brother "
          "mom mum mother dad father grandma grandpa grandmother grandfather aunt uncle cousin niece nephew "
          "roommate flatmate bestie twin stepdad stepmom stepson stepdaughter")
_JOB = _W("nurse teacher doctor developer dev engineer programmer coder designer student lawyer attorney chef cook "
          "artist illustrator writer author journalist accountant pharmacist dentist electrician plumber "
          "mechanic architect scientist researcher professor lecturer tutor librarian barista waiter waitress "
          "bartender cashier manager consultant analyst translator paramedic firefighter officer cop soldier "
          "pilot driver farmer carpenter photographer musician streamer editor animator therapist "
          "psychologist vet veterinarian surgeon midwife intern freelancer contractor sysadmin technician "
          "clerk secretary receptionist baker tailor postdoc phd dj producer composer marketer recruiter "
          "paralegal caregiver carer electrician welder machinist mathematician physicist chemist biologist "
          "economist historian youtuber tester admin administrator ceo cto founder entrepreneur")
_EVENT = _W("concert conference festival wedding trip vacation holiday holidays convention con tournament match game "
            "interview exam exams test appointment surgery operation graduation gig meetup hackathon camp retreat "
            "flight party recital show presentation defense defence deadline tour race marathon")
_INSTRUMENT = _W("guitar piano violin drums bass cello ukulele flute saxophone sax trumpet clarinet harp keyboard banjo")
_TECH = {"vim", "neovim", "nvim", "emacs", "linux", "arch", "ubuntu", "debian", "fedora", "nixos", "windows",
         "macos", "mac", "python", "rust", "go", "golang", "javascript", "js", "typescript", "ts", "java",
         "kotlin", "c", "c++", "c#", "haskell", "elixir", "ruby", "php", "swift", "zig", "lua", "tabs",
         "spaces", "vscode", "vs", "jetbrains", "intellij", "pycharm", "git", "docker", "kubernetes", "react",
         "vue", "svelte", "django", "flask", "dark", "light", "qwerty", "dvorak", "colemak", "firefox",
         "chrome", "android", "ios", "iphone", "zsh", "bash", "fish", "tmux", "helix", "sublime", "ocaml",
         "scala", "clojure", "dart", "flutter", "godot", "unity", "unreal", "blender", "postgres", "sqlite"}
_SAFE_FAVOURITES = {"game", "band", "music", "food", "language", "editor", "song", "artist", "movie", "film",
                    "book", "show", "anime", "genre", "album", "series", "dish", "drink", "snack", "colour",
                    "color", "programming language", "ide", "distro", "os", "framework", "video game",
                    "board game", "author", "singer", "manga", "tv show", "sport", "team", "character"}
_TZ = (r"(?:(?:utc|gmt)\s?[+\-−]\s?\d{1,2}(?::?\d\d)?|utc|gmt|cet|cest|eet|eest|wet|west|bst|ist|jst|kst|"
       r"aest|aedt|acst|awst|nzst|nzdt|est|edt|cst|cdt|mst|mdt|pst|pdt|akst|hst|sgt|hkt|msk|brt|art|"
       r"pacific time|eastern time|central time|mountain time|[a-z]+/[a-z_]+)")

_FLAGS = re.IGNORECASE
_MASK = re.compile(r"```.*?```|`[^`]*`|\"[^\"]*\"?|“[^”]*”?|«[^»]*»?|„[^“”]*[“”]?", re.DOTALL)
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)
_FIRST = re.compile(r"\b(?:i|i'm|i've|i'll|my|me|mine)\b", _FLAGS)
_SKIP = re.compile(r"\b(?:if|would|wish(?:ed|es)?|could|might|maybe|perhaps|hypothetically|imagine|suppose|unless|"
                   r"pretend(?:ing)?|should|i'd|wanna|want to|jk|kidding|joking|said|says|told|tells|claim(?:s|ed)?|"
                   r"dreamt|dreamed|dream|lying|roleplay|rp)\b|/s\b|\?", _FLAGS)
_FILLER = re.compile(r"^(?:(?:so|well|yeah|yea|yep|yes|ok|okay|lol|lmao|haha\w*|btw|anyway|anyways|honestly|"
                     r"also|and|but|oh|ah|actually|fwiw|tbh|ngl|update|fun fact|plus|hey|hi|hello|guys|fyi|"
                     r"heh|hmm+|um+|uh+|welp|ps|omg|wow|true|same|nope|nah|no|fr|fun fact)\b[\s,:!.\-–—]*)+", _FLAGS)
_CLAUSE = re.compile(r"\s*(?:[;,]|\s-|\s–|\s—)\s*(?:(?:and|but|so|plus|also)\s+)?(?=(?:i|i'm|i've|i'll|my)\b)"
                     r"|\s+(?:and|but|so|plus|because|cause|cuz|since|though|although|while)\s+(?=(?:i|i'm|i've|i'll|my)\b)",
                     _FLAGS)
_STOP = re.compile(r"\s*(?:[,;:!?()\[\]]|\.(?!\w)|\s[-–—]\s|\b(?:and|but|because|cause|cuz|so|since|when|while|though|"
                   r"although|which|who|where|with|until|lol|lmao|haha\w*|rn|atm|tbh|ngl|btw|now|anymore|too|"
                   r"as well|either|for|from|after|before|again|anyway|mostly|mainly|lately|these days|nowadays|"
                   r"right now|at the moment|in the end|at last|full[- ]time|part[- ]time|haha|xd|:\)|:d)\b)", _FLAGS)
_TAIL = re.compile(r"(?:\s+(?:on|in|at|this|next|last|by|for|the|a|an|of|to|since|around))+$", _FLAGS)
_BAD_OBJECT = re.compile(r"^(?:it|this|that|these|those|there|here|them|him|her|you|your|u|ur|ya|y'all|how|when|"
                         r"what|why|who|which|some|someone|something|anything|everything|nothing|bed|sleep|"
                         r"the way|the idea|the fact|being|seeing|hearing|fear|hope|denial|shambles|agony|"
                         r"the bathroom|the toilet|home|work|school|the gym|gym|class|the store|the shop|town|lunch|"
                         r"dinner|breakfast|the same|mine|one|trouble|a bit|a lot|a little|much|more)\b", _FLAGS)
_TRIVIAL = re.compile(r"^(?:the |a |my |their )?(?:bed|sleep|gym|work|school|class|store|shop|office|bathroom|"
                      r"toilet|kitchen|doctor|dentist|town|home|lunch|dinner|breakfast|shower|walk|nap|run)\b", _FLAGS)
_CHATTER = {"lol", "lmao", "ok", "okay", "ngl", "tbh", "omg", "wtf", "btw", "idk", "imo", "gg", "brb", "afk",
            "asap", "irl", "fr", "nvm", "rn", "atm", "af", "I", "I'm", "I've", "I'll", "I'd", "OK", "TIL", "PSA"}
_OPINION = re.compile(rf"^(?:i|{_IM}) {_ADV}(?:think|guess|mean|feel|believe|bet|agree|disagree|doubt|suppose|hope|"
                      r"wonder|swear|know|knew|remember|forgot|heard|saw that|assume|assumed|sure|not sure|kinda|"
                      r"sorry|glad|afraid|tired|bored|done|so|very|too|about to|gonna|going to go)\b", _FLAGS)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
                     r"fifty|hundred|thousand|million)\b", _FLAGS)
_PROPER = re.compile(r"(?<=\s)[A-Z][\w'’&.+-]*")
_TRAVEL_NOW = re.compile(rf"^(?:{_IM} {_ADV}(?:flying|going|travell?ing|heading|driving|off|visiting|leaving for|"
                         rf"taking a trip to|going back|coming|returning)|{_ILL} {_ADV}(?:be )?(?:fly|go|travel|head|"
                         rf"drive|visit|be in|be at|flying|going|travell?ing|heading|visiting)|i {_ADV}(?:fly|leave|"
                         r"head)(?:\s+out)?)\s+(?:(?:back\s+)?(?:to|for|in|at|out to|over to)\s+)?", _FLAGS)
_TRAVEL_PAST = re.compile(rf"^(?:i {_ADV}(?:went|flew|drove|travell?ed|visited|was|got back|came back|returned|moved|"
                          r"attended|saw|spent (?:a|the|two|three|\d+) (?:days?|weeks?|weekend|night|nights) in)"
                          rf"|{_IVE} {_ADV}(?:been|just been|visited))\s+(?:(?:back\s+)?(?:to|in|at|from|for)\s+)?",
                          _FLAGS)
_GOING_TO_VERB = re.compile(r"^(?:be|visit|move|start|fly|travel|see|try|get|have|take|make|do|learn|buy|watch|play|"
                            r"stay|spend|attend|leave|go|work|study|meet|check|need|sleep|eat|cook|finish|head|"
                            r"drive|pick|call|run|write|read|build|join|give|tell|ask|help|quit|switch|miss)\b", _FLAGS)


def _r(pattern: str) -> re.Pattern:
    return re.compile(pattern, _FLAGS)


# (regex on a clause, category, key, global_safe). The regex's end is where the fact text stops
# unless it has a group "x" (an object, cut at the next boundary); the fact is the clause up to
# there, in the third person. global_safe "tech": only for a technical object (else no match);
# True on a preference: safe when the object is technical.
_STARTS: list[tuple[re.Pattern, str, str | None, bool | str]] = [(_r(p), c, k, g) for p, c, k, g in (
    (rf"^(?:i {_ADV}live|{_IM} {_ADV}(?:living|based|located)|{_IVE} {_ADV}(?:been living|lived)) in (?P<x>)",
     "identity", "home city", False),
    (rf"^(?:i|{_IVE}) {_ADV}(?:moved|relocated)(?: back| over)? to (?P<x>)", "identity", "home city", False),
    (rf"^(?:{_IM} {_ADV}(?:moving|relocating)|{_ILL} {_ADV}(?:be )?(?:moving|move|relocate)|{_IM} going to move) "
     r"(?:back )?to (?P<x>)", "plan", None, False),
    (rf"^(?:{_IM} {_ADV}(?:originally )?from|i {_ADV}grew up in|i was born(?: and raised)? in) (?P<x>)",
     "identity", "hometown", False),
    (rf"^(?:i {_ADV}work|{_IM} {_ADV}working|{_IVE} {_ADV}(?:been working|worked))(?: as an? [\w -]+?)? "
     r"(?:at|for) (?P<x>)", "skill/work", "job", False),
    (rf"^(?:i {_ADV}work|{_IM} {_ADV}working) as (?P<x>)", "skill/work", "job", False),
    (rf"^(?:i {_ADV}(?:started|start|got|landed|accepted|took)|{_IM} {_ADV}starting|{_IVE} {_ADV}(?:got|started|"
     rf"landed|accepted)|{_ILL} {_ADV}(?:be )?start(?:ing)?)(?: a| my| the)?(?: new| full-time| part-time)?"
     r"(?: job| position| role| internship| gig| contract)?(?: as an? [\w -]+?)? (?:at|with|for) (?P<x>)",
     "skill/work", "job", False),
    (rf"^i {_ADV}got hired (?:at|by) (?P<x>)", "skill/work", "job", False),
    (rf"^{_IM} {_ADV}an? (?:[\w-]+ ){{0,3}}{_JOB}s?(?: (?:at|for|in) (?P<x>))?(?=$|[\s,.;!])", "skill/work", "job",
     False),
    (rf"^{_IM} {_ADV}(?:retired|unemployed|self-employed|between jobs)\b", "skill/work", "job", False),
    (rf"^(?:{_IM} {_ADV}(?:learning|studying|practi[cs]ing|teaching myself)|{_IVE} {_ADV}been (?:learning|"
     rf"studying|practi[cs]ing|coding in|programming in|working on|building)|i {_ADV}(?:study|teach)) (?P<x>)",
     "skill/work", None, False),
    (rf"^i {_ADV}(?:code|program|write code|develop|write) (?:mostly |mainly )?in (?P<x>)", "preference", None, "tech"),
    (rf"^i {_ADV}(?:use|daily drive|run) (?P<x>)", "preference", None, "tech"),
    (rf"^(?:i {_ADV}play|{_IVE} {_ADV}been playing|{_IM} {_ADV}playing) (?:the )?{_INSTRUMENT}\b", "skill/work",
     None, False),
    (rf"^(?:i {_ADV}play|{_IVE} {_ADV}been (?:playing|watching|reading|listening to)) (?P<x>)", "preference", None,
     False),
    (rf"^(?:i {_ADV}(?:love|like|prefer|enjoy|adore|hate|dislike|can't stand)|i {_ADV}(?:don't|do not) "
     rf"(?:like|enjoy)|{_IM} {_ADV}(?:a (?:big |huge )?fan of|obsessed with|(?:really |super )?into)) (?P<x>)",
     "preference", None, True),
    (rf"^i {_ADV}speak (?P<x>)", "identity", "language", True),
    (rf"^{_IM} {_ADV}a native (?:[\w-]+ )speaker\b", "identity", "language", True),
    (rf"^{_IM} {_ADV}(?:in|on) {_TZ}(?=$|[\s,.;!])", "identity", "timezone", True),
    (rf"^{_IM} {_ADV}(?:1[3-9]|[2-9]\d)(?: years? old| yo| y/o| yrs? old)?(?=\s*(?:$|[,.;!]|and\b|but\b|now\b|btw\b|lol\b))",
     "identity", "age", False),
    (rf"^i {_ADV}turned (?:1[3-9]|[2-9]\d)\b", "identity", "age", False),
    (rf"^(?:{_IM} {_ADV}(?:married|engaged|divorced|single|widowed)|i {_ADV}got (?:married|engaged|divorced))\b",
     "relationship", "relationship status", False),
    (rf"^{_IM} {_ADV}an? (?:new )?(?:dad|mom|mum|father|mother|parent|grandma|grandpa|grandparent)\b",
     "relationship", None, False),
    (rf"^(?:{_IVE}(?: got)?|i {_ADV}have) (?:a|an|one|two|three|four|five|six|\d) (?:[\w-]+ )?"
     r"(?:kids?|children|sons?|daughters?|sisters?|brothers?|siblings?|grandkids?|grandchildren)\b",
     "relationship", None, False),
)]
_PET_NAMED = _r(rf"\bmy (?:little |new |old |two |\w+ )?(?P<kind>{_PET})(?P<pl>s)?(?:'s name is| is (?:called|named)| "
                r"(?:called|named)|,)? (?P<name>[A-Z][\w'-]*(?:(?:,| and| &) [A-Z][\w'-]*)*)")
_PET_HAVE = _r(rf"\b(?:a|an|two|three|\d) (?:new |little |[\w-]+ )?(?P<kind>{_PET})(?P<pl>s)? (?:named|called) "
               r"(?P<name>[\w'-]+(?:(?:,| and| &) [\w'-]+)*)")
_REL_NAMED = _r(rf"\bmy (?:little |big |older |younger |baby |twin |best friend |)(?P<rel>{_REL}) (?P<name>[A-Z][a-z][\w'-]*)\b")
_FAV = _r(r"\bmy (?:all[- ]time |current |new )?(?P<fav>favou?rite|fave|fav) (?P<thing>[\w-]+(?: [\w-]+)?) "
          r"(?:is|are|has to be|has always been|=) (?P<x>)")
_FAV_REV = _r(r"^(?P<x>[^,;]{1,60}?) (?:is|are|has to be|'s) (?:definitely |probably |still |easily |now |also )?"
              r"my (?:all[- ]time |current |new )?(?P<fav>favou?rite|fave|fav) (?P<thing>[\w-]+(?: [\w-]+)?)\s*(?:$|[,.;!])")
_TZ_MY = _r(rf"\bmy (?:time ?zone|tz) is (?P<x>{_TZ})")
_BIRTHDAY = _r(r"\b(?:my (?:birthday|bday|b-day) (?:is|was)|it's my (?:birthday|bday|b-day))\b(?P<rest>.*)$")
_EVENT_HAVE = _r(rf"^(?:{_IVE}(?: got)?|i {_ADV}(?:have|got)) (?P<x>(?:an?|my) (?:[\w-]+ ){{0,3}}{_EVENT}s?)\b")
_EVENT_MY = _r(rf"\bmy (?P<x>(?:[\w-]+ ){{0,2}}{_EVENT}s?) (?:is|was) ")
_LEAD_DATE = _r(r"^(?P<d>[\w ,-]{2,30}?)\s*,?\s*(?=(?:i|i'm|i've|i'll|my)\b)")
_NEAR = _r(r"today|tonight|now|tomorrow|tmrw?|yesterday|the day")
_PAST = _r(r"\b(?:was|were|went|flew|drove|visited|had|did|got back|came back|returned|attended|saw|ago|last|"
           r"yesterday|\w+ed)\b")
_FUTURE = _r(r"\b(?:will|'ll|going to|gonna|next|tomorrow|tmrw|in \w+ (?:days?|weeks?)|coming|\w+ing)\b")
_WILL = _r(r"\b(?:will|'ll|going to|gonna)\b")
_ABSOLUTE = _r(r"\d|[a-z]{3}")
_RELATIVE = _r(r"today|tonight|tomorrow|tmr|yesterday|next|this|last|coming|on |in |\w+day")
_MY_TO_A = _r(r"^my ")
_ING = re.compile(r"^(?:Is|Will be|Will) (?=\w+ing\b)")
_TECH_WORD = re.compile(r"[\w+#]+")
_EVENT_WORD = _r(rf"\b{_EVENT}s?\b")
_ADDRESSED = _r(r"\b(?:you|your|u|ur|y'all|we|us|our)\b")
_OWN_START = _r(r"(?:i|i'm|i've|i'll|my)\b")
_ON_LEFT = _r(r"\s+on\s*$|\s+on(?=\s*[,.;!])")
_MY_REL = _r(rf"my (?:[\w-]+ )?{_REL}s?\b")
_I_WORD = _r(r"i\b")
_GOING_TO = _r(r"going\s+to\s+$")
_HAVE_START = _r(rf"(?:i {_ADV}(?:have|adopted|got|rescued|own|bought)|{_IVE}(?: got| adopted| rescued)?)\b")


def _object(clause: str, start: int) -> int | None:
    """The end of the object that starts at `start`: the next boundary (punctuation, a
    conjunction, a date), trailing prepositions dropped; None when there is no usable object."""
    rest = clause[start:]
    stop = _STOP.search(rest)
    end = stop.start() if stop else len(rest)
    found = dates.find_date(rest[:end], dt.date(2000, 1, 1))
    if found:
        end = found.start
    obj = _TAIL.sub("", rest[:end].rstrip(" .")).rstrip()
    words = obj.split()
    if not words or _BAD_OBJECT.match(obj):
        return None
    if len(words) > 8:
        obj = " ".join(words[:8])
    return start + len(obj)


def _cut(text: str) -> str:
    text = text.strip().rstrip(" ,;:-–—.")
    if len(text) <= MAX_CHARS:
        return text
    head = text[:MAX_CHARS]
    for sep in (", ", "; ", " and ", " but ", " "):
        at = head.rfind(sep)
        if at >= 40:
            return head[:at].rstrip(" ,;:")
    return head


def _stem(word: str) -> str:
    for end in ("ing", "ies", "ied", "es", "ed", "s", "e"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def grounded(fact: str, message: str) -> float:
    """Share of the fact's content words found (lightly stemmed) in the message."""
    wanted = {_stem(t) for t in content_tokens(fact)}
    if not wanted:
        return 0.0
    have = {_stem(t) for t in content_tokens(straight(message))}
    return len(wanted & have) / len(wanted)


def _has_anchor(clause: str, when: dates.DateMatch | None) -> bool:
    """A proper noun (a capitalised word not at the start), a number, or an explicit date."""
    if when is not None and not _NEAR.match(when.text):
        return True  # "today", "tomorrow": "I'm off to the gym tomorrow" is chatter
    if _NUMBER.search(clause):
        return True
    return any(w.rstrip(".'’") not in _CHATTER and not _I_WORD.match(w) for w in _PROPER.findall(clause))


def _past(clause: str) -> bool | None:
    if _PAST.search(clause) and not _WILL.search(clause):
        return True
    if _FUTURE.search(clause):
        return False
    return None


def _clauses(sentence: str) -> list[tuple[str, str]]:
    """(clause, leading date) pairs: "Tomorrow I'm flying to Tokyo" -> ("I'm flying to Tokyo",
    "Tomorrow")."""
    out = []
    for part in _CLAUSE.split(sentence):
        part = _FILLER.sub("", part.strip()).strip()
        lead = _LEAD_DATE.match(part)
        if lead and dates.find_date(lead.group("d"), dt.date(2000, 1, 1)) is not None:
            part, lead_text = part[lead.end():], lead.group("d")
        else:
            lead_text = ""
        if part:
            out.append((part, lead_text))
    return out


def _episodic(clause: str, lead: str, today: dt.date):
    """(category, event_day) for a dated clause: plan when the day is after today, else event."""
    when = dates.find_date(clause, today, _past(clause)) or dates.find_date(lead, today, _past(clause))
    if when is None:
        return None, None
    return ("plan" if when.day > today else "event"), when.day


def _facts_of_clause(clause: str, lead: str, today: dt.date) -> list[tuple[str, str, str | None, bool, float, dt.date | None]]:
    """(text, category, key, global_safe, confidence, event_day) for every fact of one clause."""
    out = []

    def add(text, category, key=None, safe=False, confidence=SPECIFIC, day=None):
        text = _cut(capitalise(text.strip()))
        if text and len(content_tokens(text)) >= 1:
            out.append((text, category, key, safe, confidence, day))

    for m in _PET_NAMED.finditer(clause):
        kind, names = m.group("kind").lower(), m.group("name")
        add(f"Has {'a ' + kind if not m.group('pl') else kind + 's'} named {names}", "other", f"pet {kind} name")
    m = _PET_HAVE.search(clause) if _HAVE_START.match(clause) else None
    if m:
        kind = m.group("kind").lower()
        add(f"Has {'a ' + kind if not m.group('pl') else kind + 's'} named {m.group('name')}", "other",
            f"pet {kind} name")
    for m in _REL_NAMED.finditer(clause):
        add(f"Has a {m.group('rel').lower()} named {m.group('name')}", "relationship")
    for rx in (_FAV, _FAV_REV):
        m = rx.search(clause)
        if m is None:
            continue
        thing = m.group("thing").lower()
        if thing in ("thing", "part", "way", "time", "moment", "day", "person", "one", "kind", "type", "bit"):
            continue
        end = _object(clause, m.start("x")) if rx is _FAV else m.end("x")
        x = clause[m.start("x"):end].strip() if end else ""
        if x and not _BAD_OBJECT.match(x):
            add(f"{capitalise(m.group('fav').lower())} {thing} is {third_person('it ' + x)[3:]}", "preference",
                f"favourite {thing}", thing in _SAFE_FAVOURITES)
    m = _TZ_MY.search(clause)
    if m:
        add(f"Time zone is {m.group('x')}" if "time zone" in clause.lower() else third_person(clause[:m.end()]),
            "identity", "timezone", True)
    m = _BIRTHDAY.search(clause)
    if m:
        when = dates.find_date(m.group("rest"), today, None) or (
            dates.DateMatch(today, 0, 0, "") if clause.lower().startswith("it's my") else None)
        if when and when.text and _ABSOLUTE.match(when.text) and not _RELATIVE.match(when.text):
            add(f"Birthday is {when.text}", "identity", "birthday")
        elif when:
            add("Birthday", "plan" if when.day > today else "event", None, False, SPECIFIC, when.day)
    m = _EVENT_HAVE.match(clause) or _EVENT_MY.search(clause)
    if m:
        category, day = _episodic(clause, lead, today)
        if day is not None:
            x = m.group("x")
            x = _MY_TO_A.sub("a ", x)
            add(f"Has {x}" if m.re is _EVENT_HAVE else f"Has a {x}", category, None, False, SPECIFIC, day)

    for rx, category, key, safe in _STARTS:
        m = rx.match(clause)
        if m is None:
            continue
        end = m.end()
        if "x" in m.groupdict() and m.group("x") is not None:
            end = _object(clause, m.start("x"))
            if end is None:
                continue
        text = third_person(clause[:end])
        x = clause[m.start("x"):end].lower() if m.groupdict().get("x") is not None else ""
        if safe:
            tech = bool(x) and any(w in _TECH for w in _TECH_WORD.findall(x)[:3])
            if safe == "tech" and not tech:
                continue  # "I use a standing desk": not a preference this pattern knows
            safe = tech if category == "preference" else True
        day = None
        if category == "plan":
            category, day = _episodic(clause, lead, today)
            category = category or "plan"
            text = capitalise(_ING.sub("", text))
        add(text, category, key, safe, SPECIFIC, day)
        return out

    for rx, past in ((_TRAVEL_NOW, False), (_TRAVEL_PAST, True)):
        m = rx.match(clause)
        if m is None:
            continue
        if not past and _GOING_TO.search(m.group(0)) and _GOING_TO_VERB.match(clause[m.end():]):
            break  # "I'm going to visit Japan": a plan the generic rule states as it was said
        end = _object(clause, m.end())
        if end is None:
            break
        x = clause[m.end():end]
        when = dates.find_date(clause[end:], today, past) or dates.find_date(lead, today, past)
        proper = _has_anchor(" " + x, None) or _EVENT_WORD.search(x)
        if _TRIVIAL.match(x) or not (when or proper):
            return out  # "I'm going to bed", "I'm off to the gym tomorrow": chatter
        text = third_person(clause[:end])
        text = capitalise(_ING.sub("", text))
        if when is not None:
            add(text, "plan" if when.day > today else "event", None, False, SPECIFIC, when.day)
        elif proper:
            add(text, "event" if past else "plan", None, False, GENERIC)
        return out

    if out or _OPINION.match(clause) or _ADDRESSED.search(clause):
        return out
    if not _OWN_START.match(clause) or len(content_tokens(clause)) < 3:
        return out
    when = dates.find_date(clause, today, _past(clause)) or dates.find_date(lead, today, _past(clause))
    if not _has_anchor(clause, when):
        return out
    text = clause
    if when is not None and clause[when.start:when.end] == when.text:
        text = (clause[:when.start] + clause[when.end:]).strip()
        text = _ON_LEFT.sub("", text).strip()
    category = "relationship" if _MY_REL.match(clause) else "other"
    day = None
    if when is not None:
        category, day = ("plan" if when.day > today else "event"), when.day
    add(third_person(text), category, None, False, GENERIC, day)
    return out


def _own_text(text: str) -> str:
    """The message without what quotes someone else: quoted spans, "> " lines, code."""
    return _MASK.sub(" … ", _QUOTE_LINE.sub("", straight(text)))


def extract_facts(pd: PartitionDay) -> list[Candidate]:
    """Facts about the speakers of one partition-day, from their own first-person statements."""
    found: dict[tuple[int, str], Candidate] = {}
    for position, line in enumerate(pd.lines):
        own = _own_text(line.text or "")
        if not _FIRST.search(own):
            continue
        for sentence in sentences(own):
            if "…" in sentence or _SKIP.search(sentence) or not _FIRST.search(sentence):
                continue
            for clause, lead in _clauses(sentence):
                for text, category, key, safe, confidence, day in _facts_of_clause(clause, lead, pd.day):
                    if grounded(text, line.text) < 0.5:
                        continue
                    norm = " ".join(text.lower().split()).rstrip(".!")
                    old = found.get((line.user_id, norm))
                    if old is None:
                        found[(line.user_id, norm)] = Candidate(
                            user_id=line.user_id, text=text, category=category, confidence=confidence,
                            global_safe=safe, sources=(position,), event_day=day, key=key)
                    elif position not in old.sources:
                        found[(line.user_id, norm)] = Candidate(
                            user_id=old.user_id, text=old.text, category=old.category,
                            confidence=max(old.confidence, confidence), global_safe=old.global_safe,
                            sources=old.sources + (position,), event_day=old.event_day, key=old.key)
    return sorted(found.values(), key=lambda c: (c.sources[0], c.text, c.user_id))
