"""First person -> third person without the subject: "I just moved to Lisbon" -> "Just moved to
Lisbon", "I'm a nurse" -> "Is a nurse", "my cat knocked over my plant" -> "Cat knocked over
their plant". The words stay the speaker's (a fact must be grounded in its message); only the
person changes. Pure and deterministic; regexes are compiled once."""

from __future__ import annotations

import re

from pipeline.memory.vocab import ADVERBS

# Irregular past tense forms (a verb after "I" that is one, or ends in -ed, is in the past).
PAST = frozenset("""was were did had got went came made took saw bought left found met began became won lost
ran sold built wrote told said thought felt kept paid sent spent taught caught brought fought held broke chose
drove flew forgot gave grew knew rode sang sat slept spoke stole swam threw understood woke wore heard stood
ate drank fell hung led lent meant rang sank shook shot shut slid split spun stuck stung swore swept swung tore
won""".split())
# Verbs whose "I" form is also the third person's (past tense, modals).
_SAME = PAST | frozenset("can could will would shall should may might must quit put set cut hit let used".split())
_IRREGULAR = {"have": "has", "am": "is", "do": "does", "go": "goes", "be": "is", "'m": "is",
              "'ve": "has", "'ll": "will", "'d": "would", "don't": "doesn't", "haven't": "hasn't",
              "dont": "doesn't", "havent": "hasn't", "ain't": "isn't", "wasn't": "wasn't"}
# Object/possessive forms anywhere in the clause; "I" later in it becomes "they".
_OBJECT = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}
_LATER_I = {"i": "they", "i'm": "they're", "i've": "they've", "i'll": "they'll", "i'd": "they'd"}
_THEY_VERB = {"am": "are", "was": "were"}


_CHAT_I = re.compile(r"\b([iI])(m|ve)\b")


def straight(text: str) -> str:
    """Curly apostrophes straightened; chat's "im" / "ive" read as "I'm" / "I've"."""
    return _CHAT_I.sub(lambda m: "I'" + m.group(2), text.replace("’", "'").replace("‘", "'"))


def is_past(verb: str) -> bool:
    low = verb.lower()
    return low in PAST or (low.endswith("ed") and low not in ("need", "feed", "speed", "bleed", "breed", "seed"))


def agree(verb: str) -> str:
    """The third person singular of a verb that followed "I": have -> has, am -> is, go -> goes,
    study -> studies, watch -> watches, play -> plays; past tense and modals unchanged."""
    low = straight(verb).lower()
    if low in _IRREGULAR:
        out = _IRREGULAR[low]
    elif low in _SAME or low.endswith(("ed", "n't")) or not low.isalpha():
        out = low
    elif low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        out = low[:-1] + "ies"
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    else:
        out = low + "s"
    if verb[:1].isupper() and not low[:1].isupper():
        out = out[:1].upper() + out[1:]
    return out


def capitalise(text: str) -> str:
    """First letter upper-cased unless the first word is cased like "iPhone"."""
    first = text.split(" ", 1)[0]
    if first[:1].islower() and first[1:] == first[1:].lower():
        return text[:1].upper() + text[1:]
    return text


_PARTS = re.compile(r"^([^\w']*)([\w']+)([^\w']*)$", re.UNICODE)


def _swap(token: str, fn) -> str:
    """The token with its word (not its surrounding punctuation) replaced by fn(word), or the
    token itself when it is not one word or fn gives None."""
    m = _PARTS.match(token)
    if not m:
        return token
    new = fn(m.group(2))
    return token if new is None else m.group(1) + new + m.group(3)


def _core(token: str) -> str:
    m = _PARTS.match(token)
    return m.group(2).lower() if m else token.lower()


def third_person(clause: str) -> str:
    """The clause restated without its first-person subject: "I" and its contraction become the
    verb's third person ("I'm" -> "Is", "I've" -> "Has", "I'll" -> "Will"), my/me/mine/myself
    become their/them/theirs/themselves, a later "I" becomes "they", and a leading "my" goes
    ("My favourite game is Celeste" -> "Favourite game is Celeste"). Capitalised."""
    words = straight(clause).split()
    if not words:
        return ""
    out: list[str] = []
    i = 0
    head = _core(words[0])
    if head in ("i", "i'm", "i've", "i'll", "i'd"):
        i = 1
        if head != "i":
            had = head == "i'd" and len(words) > 1 and is_past(_core(words[1]))  # "I'd moved" -> "Had moved"
            out.append(_swap(words[0], lambda w: "had" if had else agree(w[1:])))  # the contraction is the verb
        else:
            while i < len(words) and _core(words[i]) in ADVERBS:
                out.append(words[i])
                i += 1
            if i < len(words):
                out.append(_swap(words[i], agree))
                i += 1
    elif head == "my":
        i = 1
    after_they = False
    for w in words[i:]:
        low = _core(w)
        if low in _OBJECT:
            out.append(_swap(w, lambda _: _OBJECT[low]))
        elif low in _LATER_I:
            out.append(_swap(w, lambda _: _LATER_I[low]))
            after_they = low == "i"
            continue
        elif after_they and low in _THEY_VERB:
            out.append(_swap(w, lambda _: _THEY_VERB[low]))
        else:
            out.append(w)
        after_they = after_they and low in ADVERBS
    return capitalise(" ".join(out))


def possessive(fragment: str) -> str:
    """A fragment with its first-person words in the third person, nothing else changed:
    "my grandma's garden" -> "their grandma's garden"."""
    return " ".join(_swap(w, lambda word: _OBJECT.get(word.lower())) for w in straight(fragment).split())


# ------------------------------------------------------------------ clauses and objects

# Clauses split before a new subject of the speaker's ("I", "my", "we", "our") after a comma or
# a coordinating word ("and", "but", "because"); a time or concession clause ("since I was 6",
# "while I …") stays in its sentence and ends the object before it.
SUBJECT = r"(?:i|i'm|i've|i'll|my|we|we're|we've|we'll|our)\b"
_CLAUSE = re.compile(r"\s*(?:[;,]|\s[-–—])\s*(?:(?:and|but|so|plus|also|because|cause|cuz)\s+)?"
                     rf"(?={SUBJECT})|(?<!\bme)\s+(?:and|but|so|plus|because|cause|cuz|then)\s+(?={SUBJECT})",
                     re.IGNORECASE)  # "me and my wife are …" is one subject
_FILLER = re.compile(r"^(?:(?:so|well|yeah|yea|yep|yes|ok|okay|lol|lmao|haha\w*|btw|anyway|anyways|honestly|also|"
                     r"and|but|oh|ah|actually|fwiw|tbh|ngl|update|fun fact|plus|hey|hi|hello|guys|fyi|heh|hmm+|"
                     r"um+|uh+|welp|ps|omg|wow|true|same|nope|nah|no|fr|then|now|ofc|of course|just so (?:you|y'all) "
                     r"know|for the record|to be (?:fair|honest)|in fact|for context|funnily enough|"
                     r"(?:last|next|this|coming) (?:month|year|summer|winter|spring|fall|autumn|semester))"
                     r"\b[\s,:!.\-–—]*)+",
                     re.IGNORECASE)
# Where an object ends: punctuation, a conjunction, a time phrase, chat noise.
_STOP = re.compile(r"[,;:!?()\[\]]|\.(?!\w)|\s[-–—]\s|\s:[)d]\b|\s(?:and|but|because|cause|cuz|so|since|when|while|"
                   r"though|although|which|who|where|with|until|lol|lmao|haha\w*|rn|atm|tbh|ngl|btw|now|anymore|too|"
                   r"as well|either|for|from|after|before|again|anyway|mostly|mainly|lately|these days|nowadays|"
                   r"right now|at the moment|in the end|at last|full[- ]time|part[- ]time|xd|soon|someday|fight me|if|"
                   r"one day|eventually|recently|later|(?:last|next|this|coming) (?:week(?:end)?|night|month|year|"
                   r"summer|winter|"
                   r"spring|fall|autumn|semester|term)|in (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*|"
                   r"(?:a (?:few |couple )?|\w+ )(?:days?|weeks?|months?|years?) ago|ages ago|all (?:day|night|"
                   r"week|weekend|morning|evening|year)|every (?:day|week|weekend|morning|night)|daily|"
                   r"tonight|today|tomorrow|yesterday|on (?:mon|tue|wed|thu|fri|sat|sun)[a-z]*)\b",
                   re.IGNORECASE)
_TAIL = re.compile(r"(?:\s+(?:on|in|at|this|next|last|by|for|the|a|an|of|to|since|around|very|so|really|until|"
                   r"till|from|before|after|every))+$", re.IGNORECASE)
_OWN = re.compile(SUBJECT, re.IGNORECASE)
_LEAD = re.compile(rf"^(?P<d>[\w ,-]{{2,30}}?)\s*,?\s*(?={SUBJECT})", re.IGNORECASE)


# Chat drops the subject: "Started a new job at Mozilla", "Heading to Paris on Friday".
_IMPLIED_PAST = frozenset("""started moved got went adopted finished visited flew bought graduated quit joined
relocated landed turned switched booked settled rescued""".split())
_IMPLIED_ING = frozenset("""heading flying going moving starting leaving travelling traveling visiting learning
studying working living playing relocating""".split())


IMPLIED = _IMPLIED_PAST | _IMPLIED_ING | {"been"}
_LEADING_ADVERBS = frozenset("just finally officially now recently also then all".split())


def implied_subject(clause: str) -> str:
    """The clause with its dropped "I" / "I'm" put back when it starts with a verb that chat
    says without one ("Just started at Mozilla" -> "I just started at Mozilla", "finally settled
    in Utrecht" -> "I finally settled in Utrecht"); else as is."""
    words = clause.split(" ", 3)
    first, at = words[0].lower(), 0
    while at < 2 and at + 1 < len(words) and words[at].lower() in _LEADING_ADVERBS:
        at += 1
    verb = words[at].lower()
    if verb in _IMPLIED_PAST:
        return ("I'm " if "all" in (w.lower() for w in words[:at]) else "I ") + clause[:1].lower() + clause[1:]
    if verb in _IMPLIED_ING and first != "just":
        return "I'm " + clause[:1].lower() + clause[1:]
    return "I've " + clause if first == "been" else clause


# A dropped subject carried over a coordination: "packed everything and moved to Utrecht" is
# "I packed everything" and "I moved to Utrecht"; only after a part whose subject is the
# speaker ("I …", "we …", or a past verb without one), never after "my sister got married and".
_CARRIED = re.compile(r"(?:\s*[,;]\s*(?:and\s+|then\s+|so\s+)?|\s+(?:and|then|&)\s+(?:then\s+)?)"
                      r"(?=(?:(?:just|finally|then|now) )?(?:" + "|".join(sorted(IMPLIED - {"been"})) + r")\b)",
                      re.IGNORECASE)
_SPEAKER_FIRST = re.compile(r"(?:i|i'm|i've|we|we're|we've)\b", re.IGNORECASE)
_PASSIVE = re.compile(r"^\S+ (?:by|in|on|at|as|with|from|for)\b", re.IGNORECASE)


def _carried(part: str) -> list[str]:
    """The part, or its pieces when it coordinates verbs of one dropped or stated subject."""
    first = part.split(" ", 1)[0].lower()
    own = _SPEAKER_FIRST.match(part) is not None
    if not own and not (is_past(first) and not _PASSIVE.match(part)) or not _CARRIED.search(part):
        return [part]
    we = first in ("we", "we're", "we've")
    out = []
    for i, piece in enumerate(_CARRIED.split(part)):
        piece = piece.strip()
        if i and piece:
            piece = implied_subject(piece)
            if we:
                piece = re.sub(r"^I'm ", "we're ", re.sub(r"^I ", "we ", piece))
        if piece:
            out.append(piece)
    return out


def unfilled(text: str) -> str:
    """The text without leading filler ("lol", "btw", "honestly")."""
    return _FILLER.sub("", text.strip()).strip()


def clauses(sentence: str, is_date) -> list[tuple[str, str]]:
    """(clause, leading time phrase) pairs of a sentence, split before a new "I" / "my" / "we" /
    "our" ("I live in Lisbon and I work at Google") and between verbs of one subject ("packed
    everything and moved to Utrecht": "I moved to Utrecht" too), leading filler ("lol", "btw")
    dropped; a time phrase before the subject is set apart: "Tomorrow I'm flying to Tokyo" -> ("I'm flying to Tokyo",
    "Tomorrow"). `is_date(text)` says whether a leading phrase is a date."""
    out: list[tuple[str, str]] = []
    for part in _CLAUSE.split(sentence):
        part, lead_text = _FILLER.sub("", part.strip()).strip(), ""
        lead = None if _OWN.match(part) else _LEAD.match(part)
        if lead and is_date(lead.group("d")):
            part, lead_text = part[lead.end():], lead.group("d")
        if part:
            for piece in _carried(implied_subject(part) if out == [] else part):
                out.append((piece, lead_text))
    return out


def object_end(clause: str, start: int, stop_at: int | None = None, max_words: int = 8) -> int:
    """Where the object starting at `start` ends: at the next boundary (punctuation, a
    conjunction, a time phrase, or `stop_at`), trailing prepositions dropped, at most
    `max_words` words. Equal to `start` when nothing is left."""
    rest = clause[start:stop_at] if stop_at is not None and stop_at > start else clause[start:start + 160]
    stop = _STOP.search(rest)
    obj = _TAIL.sub("", rest[:stop.start() if stop else len(rest)].rstrip(" .")).rstrip()
    words = obj.split()
    if len(words) > max_words:
        obj = " ".join(words[:max_words])
    return start + len(obj)


_RELATIVE_TIME = re.compile(r"\b(?:(?:all )?(?:last|next|this|coming) (?:week(?:end)?|month|year|summer|winter|"
                            r"spring|fall|autumn|night|morning|semester)|(?:a (?:few |couple (?:of )?)?|\w+ )(?:days?|"
                            r"weeks?|months?|years?) ago|ages ago|a while ago|today|tonight|tomorrow|yesterday|rn|"
                            r"atm|right now|recently|lately|lol|lmao|btw|tbh|ngl|haha\w*|xd)\b(?!')", re.IGNORECASE)
_LOOSE_PUNCT, _SPACES = re.compile(r"\s+([,.;:!?])"), re.compile(r"\s{2,}")


def tidy(text: str) -> str:
    """Time words that go stale ("last year", "3 days ago", "tomorrow") and chat noise ("lol",
    "btw") removed, and a preposition they leave at the end: a fact is kept for months, and its
    date, when known, goes with it."""
    text = _LOOSE_PUNCT.sub(r"\1", _SPACES.sub(" ", _RELATIVE_TIME.sub("", text))).strip()
    return _TAIL.sub("", text.rstrip(" ,;:!.")) or text


def cut(text: str, limit: int = 200) -> str:
    """At most `limit` characters, cut at a clause boundary (else a word) after 40 characters."""
    text = text.strip().rstrip(" ,;:-–—.!")
    if len(text) <= limit:
        return text
    head = text[:limit]
    for sep in (", ", "; ", " and ", " but ", " "):
        at = head.rfind(sep)
        if at >= 40:
            return head[:at].rstrip(" ,;:")
    return head
