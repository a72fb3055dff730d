"""First person -> third person without the subject: "I just moved to Lisbon" -> "Just moved to
Lisbon", "I'm a nurse" -> "Is a nurse", "my cat knocked over my plant" -> "Cat knocked over
their plant". The words stay the speaker's (a fact must be grounded in its message); only the
person changes. Pure and deterministic; regexes are compiled once."""

from __future__ import annotations

import re

# Adverbs skipped between "I" and its verb ("I really love", "I've also been"): kept in the text,
# the verb after them agrees.
ADVERBS = frozenset("""just really also still finally recently actually usually always never often now
literally basically honestly currently officially mostly totally kinda sorta normally generally
already even only definitely seriously truly mainly""".split())
# Verbs whose "I" form is also the third person's (past tense, modals) or that are irregular.
_SAME = frozenset("""can could will would shall should may might must was did had got went came made
took saw bought left found met began became won lost ran sold built wrote told said thought felt kept
paid sent spent taught caught brought fought held broke chose drove flew forgot gave grew knew rode
sang sat slept spoke stole swam threw understood woke wore quit put set cut hit let heard stood
adopted""".split())
_IRREGULAR = {"have": "has", "am": "is", "do": "does", "go": "goes", "be": "is", "'m": "is",
              "'ve": "has", "'ll": "will", "'d": "would", "don't": "doesn't", "haven't": "hasn't",
              "dont": "doesn't", "havent": "hasn't", "ain't": "isn't", "wasn't": "wasn't"}
_SUBJECT = re.compile(r"^I(?:['’](?:m|ve|ll|d))?\b", re.IGNORECASE)
# Object/possessive forms anywhere in the clause; "I" later in it becomes "they".
_OBJECT = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}
_LATER_I = {"i": "they", "i'm": "they're", "i've": "they've", "i'll": "they'll", "i'd": "they'd"}
_THEY_VERB = {"am": "are", "was": "were"}


def straight(text: str) -> str:
    """Curly apostrophes and quotes straightened."""
    return text.replace("’", "'").replace("‘", "'")


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
            out.append(_swap(words[0], lambda w: agree(w[1:])))  # the contraction is the verb
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
