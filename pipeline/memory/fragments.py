"""What chat says without a plain "I …" statement: a statement before a question in one sentence
("going to Porto next Thursday, any tips?"), statements about "we" / "our" that include the
speaker ("we finally relocated to Utrecht", "our new place in Ghent"), and fragments without a
subject or a verb ("qa tester at spotify", "new job at Shopify!", "first week as a designer at
Figma done", "trip to Oslo on Aug 23"). Pure; regexes are compiled once.

Conservative on purpose: a question's head is kept only before a question to others (not "…,
right?", "…, or should I?", "…, if that works?"); a "we" clause only gives facts of where one
lives or goes, pets and family (never preferences, work or anything generic: "we" is often the
server, the team or the guild), and only to a place that looks like one; a fragment is the
whole sentence.
"""

from __future__ import annotations

import re

from pipeline.memory.phrasing import capitalise
from pipeline.memory.vocab import CHATTER, JOB, TECH, article

# ------------------------------------------------------------------ a statement before a question

# A question after a statement that leaves the statement standing: to others ("any tips?", "who
# else is going?"), not a tag that asks for it to be confirmed ("right?", "or should I?").
_BOUNDARY = re.compile(r"\s*(?:[,;:]|\s[-–—]|[-–—]\s)\s*")
_TAG = re.compile(r"^(?:right|ok|okay|yeah|yea|yes|no|nah|or|eh|huh|innit|correct|true|really|remember|lol|lmao|"
                  r"haha\w*|wait|hmm+|amirite|yk|you know|u know|ya know|lmk|isn't it|aren't i|don't i|didn't i|"
                  r"am i|do i|did i|should i|shall i|can i|could i|would i|will i|or not|no\?)\b", re.IGNORECASE)
_TAIL_SKIP = frozenset("""if unless maybe perhaps might wish jk kidding joking /s lying hypothetically imagine suppose
pretend dream""".split())
_WORDS = re.compile(r"[\w'/]+")


def statement_part(sentence: str) -> str | None:
    """The sentence itself when it asks nothing; its statement before a question to others
    ("going to Porto next Thursday, any tips?" -> "going to Porto next Thursday"); else None."""
    at = sentence.find("?")
    if at < 0:
        return sentence
    if sentence[at:].strip("?!. )(:") or at == 0:
        return None  # more after the question mark
    bounds = list(_BOUNDARY.finditer(sentence, 0, at))
    if not bounds:
        return None
    head, tail = sentence[:bounds[-1].start()].strip(), sentence[bounds[-1].end():at].strip()
    words = [w.lower() for w in _WORDS.findall(tail)]
    if not head or not words or _TAG.match(tail) or not _TAIL_SKIP.isdisjoint(words) or (
            len(words) <= 2 and "i" in words):
        return None  # "…, right?", "…, or should I?", "…, if that's ok?", "…, me?"
    return head


# ------------------------------------------------------------------ we / our

_WE = re.compile(r"^(?:me and (?:my |the )?[\w-]+|we|we're|we've|we'll|we'd|our)\b", re.IGNORECASE)
_AS_I = {"we": "I", "we're": "I'm", "we've": "I've", "we'll": "I'll", "we'd": "I'd", "our": "my", "us": "me",
         "ours": "mine", "ourselves": "myself"}
_WE_WORD = re.compile(r"\b(?:we're|we've|we'll|we'd|we|our|ours|us|ourselves)\b", re.IGNORECASE)
_WE_VERB = re.compile(r"^(I|I'm|I've|I'll) (?:(\w+) )?(are|were)\b")
_ME_AND = re.compile(r"^me and (?:my |the )?[\w-]+", re.IGNORECASE)


def is_we(clause: str) -> bool:
    return _WE.match(clause) is not None


def as_i(clause: str) -> str:
    """A "we" / "our" clause in the first person singular: "we're heading to Porto" -> "I'm
    heading to Porto", "our new place in Ghent" -> "my new place in Ghent", "me and my wife are
    moving to Oslo" -> "I am moving to Oslo"."""
    clause = _ME_AND.sub("we", clause, count=1)
    out = _WE_WORD.sub(lambda m: _AS_I[m.group(0).lower()], clause)
    # "we are" -> "I am", "we were" -> "I was"
    return _WE_VERB.sub(lambda m: f"{m.group(1)} {m.group(2) + ' ' if m.group(2) else ''}"
                        f"{'am' if m.group(3) == 'are' else 'was'}", out, count=1)


# What is no place to live or go to, when written in lower case (a capitalised name always is).
NOT_PLACE = frozenset("""the a an my our your his her their this that these those some any which what where there here
it them him you u me us work school home bed town city country countryside suburbs village flat apartment house place
line queue hell heaven space discord server servers base nether end spawn overworld chat vc voice game lobby new next
other same bathroom kitchen office gym class store shop mall college uni university church hospital vet doctor
dentist party beach park pool sleep dinner lunch breakfast weekend summer winter spring fall autumn holidays vacation
retirement freedom victory glory valhalla mars moon jail prison war battle raid dungeon level world map region team
channel thread dm dms twitch youtube reddit twitter slack telegram matrix mastodon github gitlab aws azure gcp
hetzner steam epic""".split()) | TECH | CHATTER


def place_like(x: str) -> bool:
    """A place one lives in or travels to, as far as words tell: a capitalised name ("Utrecht",
    "New York"), or one to three lower-case words none of which is a common word of chat
    ("utrecht", "new zealand" yes; "the nether", "work", "discord" no)."""
    words = x.split()
    if not words or len(words) > 3 or not words[0][:1].isalpha():
        return False
    if words[0].lower() == "new" and len(words) > 1:  # "new zealand", "New York"
        words = words[1:]
    if words[0][:1].isupper() and words[0].lower() not in NOT_PLACE:
        return True
    return all(w.lower() not in NOT_PLACE for w in words)


# ------------------------------------------------------------------ fragments

_END = r"\s*(?:(?:now|lol|lmao|btw|tbh|ngl|rn|too|haha\w*|yay|finally|officially|:\)|:D|xd)\b\s*)*[!.\s]*$"
_ROLE = rf"(?P<role>(?:[\w+#-]+ ){{0,3}}?{JOB})"
_ORG = (r"(?P<x>(?!(?:the|a|an|my|our|this|that|home|work|heart|best|worst|night|times|first|last|once|all|hire|fun|"
        r"now|life|free|money|real|sure|example|instance)\b)[\w&.'+-]+(?: (?!(?:for|my|your|his|her|their|our|to|"
        r"with|and|but|is|was|as|because|since|so)\b)[\w&.'+-]+){0,3}?)")
_FRAGMENTS = [(re.compile(p, re.IGNORECASE), kind) for p, kind in (
    # "qa tester at spotify", "senior dev @ Shopify now"
    (rf"^(?:(?:now|currently|still) )?(?:an? )?{_ROLE} (?P<at>at|@|for|with) {_ORG}{_END}", "role at"),
    # "nurse here", "fellow backend dev here, …"
    (rf"^(?:(?:fellow|also|another|a|an) )?{_ROLE} here\b", "role here"),
    # "new job at Shopify!", "new role with Arup"
    (rf"^(?:(?:a|my|our) )?new (?:job|position|role|gig) (?P<at>at|with|for|@) {_ORG}{_END}", "new job"),
    # "first week as a designer at Figma done", "first day at Canonical: done"
    (rf"^(?:my )?(?:first|1st|second|2nd) (?:day|week|month|shift)(?: as an? {_ROLE})? (?:at|with|@) {_ORG}"
     r"(?:\s*[:,-]\s*|\s+)(?:is |are )?(?:done|over|complete|completed|finished|survived|down|in the books|✅)\b",
     "first week"),
)]


def fragment(sentence: str) -> tuple[str, str, str] | None:
    """(fact text, category, key) of a fragment that is the whole sentence, or None."""
    for rx, kind in _FRAGMENTS:
        m = rx.match(sentence)
        if m is None:
            continue
        role = (m.group("role") or "").strip() if "role" in rx.groupindex else ""
        if kind in ("role here", "role at") and role.split()[0].lower() in NOT_PLACE - {"new"}:
            return None  # "the nurse at …", "your dev here"
        x = m.group("x").strip() if "x" in rx.groupindex else ""
        if kind == "role at":
            return f"Is {article(role)} {m.group('at').replace('@', 'at')} {x}", "skill/work", "job"
        if kind == "role here":
            return f"Is {article(role)}", "skill/work", "job"
        if kind == "new job":
            what = m.group(0).lower().split("new ", 1)[1].split()[0]
            return capitalise(f"Has a new {what} {m.group('at').replace('@', 'at')} {x}"), "skill/work", "job"
        return (f"Is {article(role)} at {x}" if role else f"Works at {x}"), "skill/work", "job"
    return None


# "trip to Oslo on Aug 23", "flight to Lisbon tomorrow", "first day at Canonical on Monday": need
# a date, and nothing after it (extract checks).
FIRST_DAY = re.compile(rf"^(?:my )?(?P<what>first day|1st day|first shift|first week)(?: as an? {_ROLE})? "
                       r"(?:at|with|@) (?P<x>(?!(?:the|a|an|my|our|this|that|home|work)\b)[\w&.'+-]+"
                       r"(?: [\w&.'+-]+){0,2}?)"
                       r"(?=\s*(?:$|[,!.]|on\b|in\b|next\b|this\b|tomorrow\b|tmrw?\b|\d))", re.IGNORECASE)
TRIP = re.compile(r"^(?:(?:my|our|a|the|big|family|work|road|solo|weekend|short|long) ){0,2}"
                  r"(?P<what>trip|flight|holiday|vacation|vacay|getaway) (?P<to>to|in) "
                  r"(?P<x>(?!(?:the|a|my|our)\b)[\w'-]+(?: [\w'-]+){0,2}?)(?=\s*(?:$|[,!.]|on\b|in\b|next\b|this\b|"
                  r"tomorrow\b|tmrw?\b|tonight\b|for\b|from\b|at\b|\d))", re.IGNORECASE)
