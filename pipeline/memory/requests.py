"""In-chat memory requests (README, "In-chat memory requests"): a member asking the bot, in chat,
to remember something about themselves ("remember that I'm vegetarian") or to forget something
("forget what I said about the hospital", "don't remember that …").

Found in the daily stage's one summarizer call: the Gemini answer carries `requests` per speaker
(pipeline/summarize/schemas.py), the offline path reads clear phrases in English, Portuguese,
Spanish, French and German (below). A request only ever applies to its speaker's own memory:
"remember that Ana is …", "… that she …", "… that my sister …" are refused (`other_person`), and a
"remember that …" that says nothing about the speaker ("remember that the game starts at 8", a
reminder to the group) is not a request at all. Pure and deterministic; applied by
pipeline/stages/requests.py through the controls of pipeline/controls/facts.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..summarize.base import PartitionDay
from ..summarize.text import content_tokens, names_person, sentences, tokens
from .phrasing import straight, third_person

REMEMBER, FORGET = "remember", "forget"
# why a request was refused (counted in pipeline_runs as requests_refused_<reason>)
OTHER_PERSON = "other_person"   # about someone else: a name, a third-person pronoun, "my sister …"
UNSAFE = "unsafe"               # the fact failed the rules of `facts remember` (pipeline/safety.py, raw ids)
REFUSALS = (OTHER_PERSON, UNSAFE)

_LEAD = r"^(?:(?:hey|hi|ok|okay|oi|ol[aá]|hola|salut|hallo)\b[^,]{0,30},\s*)?"
_PLEASE = r"(?:(?:please|pls|por favor|s'il te pla[iî]t|stp|bitte)\s*,?\s*)?"
_RULES: tuple[tuple[str, re.Pattern], ...] = tuple((kind, re.compile(_LEAD + _PLEASE + body, re.I)) for kind, body in (
    # English
    (FORGET, r"(?:don't|do not|dont)\s+remember\s+(?:that\s+|what\s+i\s+said\s+about\s+)(?P<x>.+)"),
    (REMEMBER, r"(?:do\s+)?remember\s+(?:that\s+|this\s*:\s*|:\s*)(?P<x>.+)"),
    (FORGET, r"forget\s+(?:what\s+i\s+(?:said|told\s+you|wrote|mentioned)\s+(?:about|regarding|on)\s+"
             r"|everything\s+(?:i\s+said\s+)?about\s+|about\s+|that\s+)(?P<x>.+)"),
    # Portuguese
    (REMEMBER, r"(?:lembra|lembre|lembre-se|lembra-te|grava)\s+(?:(?:de\s+)?que\s+)(?P<x>.+)"),
    (FORGET, r"(?:esquece|esqueça|esquece-te)\s+(?:o\s+que\s+(?:eu\s+)?(?:te\s+)?(?:disse|falei|contei)\s+"
             r"(?:sobre|de)\s+|(?:de\s+)?que\s+)(?P<x>.+)"),
    # Spanish
    (REMEMBER, r"(?:recuerda|recuerde|acuérdate\s+de)\s+que\s+(?P<x>.+)"),
    (FORGET, r"(?:olvida|olvide|olvídate\s+de)\s+(?:lo\s+que\s+(?:te\s+)?(?:dije|conté|escribí)\s+(?:sobre|de)\s+"
             r"|que\s+)(?P<x>.+)"),
    # French
    (REMEMBER, r"(?:souviens-toi|rappelle-toi|souvenez-vous|retiens)\s+(?:que\s+|qu')(?P<x>.+)"),
    (FORGET, r"(?:oublie|oubliez)\s+(?:ce\s+que\s+(?:je\s+t'ai|j'ai|je\s+vous\s+ai)\s+dit\s+(?:sur|à\s+propos\s+de)\s+"
             r"|que\s+|qu')(?P<x>.+)"),
    # German
    (REMEMBER, r"(?:merk\s+dir|merke\s+dir|merken\s+sie\s+sich)(?:\s+bitte)?\s*,?\s+dass\s+(?P<x>.+)"),
    (FORGET, r"vergiss(?:\s+bitte)?\s*,?\s+was\s+ich\s+(?:dir\s+)?über\s+(?P<x>.+?)\s+gesagt\s+habe\b.*"),
    (FORGET, r"vergiss(?:\s+bitte)?\s*,?\s+dass\s+(?P<x>.+)"),
))
# the forms of "forget" that name what the speaker said (a request whatever the topic's words)
_SAID = re.compile(r"\b(?:what\s+i\s+(?:said|told\s+you|wrote|mentioned)|everything\s+(?:i\s+said\s+)?about|"
                   r"o\s+que\s+(?:eu\s+)?(?:te\s+)?(?:disse|falei|contei)|lo\s+que\s+(?:te\s+)?(?:dije|conté|escribí)|"
                   r"ce\s+que\s+(?:je\s+t'ai|j'ai|je\s+vous\s+ai)\s+dit|was\s+ich\s+(?:dir\s+)?über)", re.I)
# where a forget's topic ends: the first clause break ("forget about it, I'm fine" -> "it")
_CLAUSE_BREAK = re.compile(r"\s*[,;:](?=\s|$)|\s+(?:but|mas|pero|mais|aber)\s", re.I)
# "remember that time I fell off my bike", "lembra que quando …": reminiscing with the others, not a
# fact to keep ("that time zone" is not a time)
_REMINISCING = re.compile(r"(?:(?:time|day|night)\b(?!\s+zones?\b)|when\b|quando\b|d?aquela\s+vez\b|cuando\b|"
                          r"aquella\s+vez\b)", re.I)
_QUESTION = re.compile(r"\?[\s!?.…)]*$")
_TRAILING = re.compile(r"(?:[\s,;:]+(?:please|pls|thanks|thank you|por favor|obrigad[oa]|gracias|merci|"
                       r"s'il te pla[iî]t|stp|bitte|danke))+\s*[.!?…]*$|[\s.!?…,;:]+$", re.I)

FIRST_PERSON = frozenset(
    "i i'm im i've i'll i'd me my mine myself "                 # English
    "eu meu minha meus minhas mim sou estou tenho moro gosto "  # Portuguese
    "yo mi mis soy estoy tengo vivo "                           # Spanish
    "je j' moi mon ma mes suis "                                # French
    "ich mich mir mein meine meinen meinem meiner bin".split())  # German
THIRD_PERSON = frozenset(
    "he she they him her his hers them their theirs he's she's they're "
    "ele ela eles elas dele dela "
    "él ella ellos ellas "
    "il elle ils elles lui "
    "er sie ihm ihn".split())
# "my sister is …": a fact about another person, refused like a name (be conservative)
PEOPLE = frozenset("""sister brother mother mom mum dad father wife husband friend boyfriend girlfriend son
daughter partner boss colleague coworker kid kids child children cousin aunt uncle grandma grandpa grandmother
grandfather roommate flatmate neighbour neighbor niece nephew fiancé fiance fiancée ex
irmã irmão mãe pai mulher marido amigo amiga namorado namorada filho filha chefe
hermana hermano madre padre esposa esposo amiga novio novia hijo hija jefe
sœur soeur frère mère père femme mari ami amie copain copine fils fille patron
schwester bruder mutter vater frau mann freund freundin sohn tochter chef""".split())
# a capitalised first word followed by a third-person verb is another person as the subject
_NAMED_SUBJECT = re.compile(r"^(?!I\b|I')([A-ZÀ-Þ][\w'’-]*)(?:'s)?\s+(?:is|was|has|had|lives|works|likes|loves|"
                            r"hates|wants|needs|will|é|está|tem|es|está|tiene|est|a|ist|hat|wohnt|mag)\b")


@dataclass(frozen=True)
class Request:
    """One request in a partition-day: its speaker, the position of its message in the lines the
    summarizer was given, remember or forget, what to remember (a fact) or forget (a topic), and
    why it is refused (None: to apply)."""

    user_id: int
    position: int
    kind: str
    text: str
    refused: str | None = None


def _words(text: str) -> list[str]:
    return [w.lower().strip(".,;:!?…\"“”()") for w in straight(text).split()]


def subject_refusal(clause: str, speaker_names: Iterable[str] = (), other_names: Iterable[str] = ()) -> str | None:
    """Why a "remember" clause is not about the speaker alone (OTHER_PERSON), else None. Refused:
    another member's name, a third-person pronoun, "my sister / friend / boss …", a capitalised
    name as the subject ("Ana is …")."""
    words = _words(clause)
    own = {t for n in speaker_names for t in tokens(n)}
    others = [n for n in other_names if n and not set(tokens(n)) <= own]
    if others and names_person(set(tokens(clause)) - own, others):
        return OTHER_PERSON
    if any(w in THIRD_PERSON for w in words):
        return OTHER_PERSON
    if any(w in ("my", "meu", "minha", "mi", "mon", "ma", "mein", "meine") and nxt.rstrip("'s") in PEOPLE
           for w, nxt in zip(words, words[1:])):
        return OTHER_PERSON
    named = _NAMED_SUBJECT.match(straight(clause).strip())
    if named and named.group(1).lower() not in own and named.group(1).lower() not in FIRST_PERSON:
        return OTHER_PERSON
    return None


def about_speaker(clause: str) -> bool:
    """Whether the clause speaks of its speaker at all (a first-person word)."""
    return any(w in FIRST_PERSON or w.startswith("j'") for w in _words(clause))


def _tidy(clause: str) -> str:
    prev = None
    clause = clause.strip()
    while prev != clause:
        prev, clause = clause, _TRAILING.sub("", clause).strip()
    return clause


def parse(sentence: str) -> tuple[str, str] | None:
    """(kind, what) when the sentence is a request phrase, else None: "what" is the remembered
    clause as said, or the forgotten topic — up to the first clause break (`,` `;` `:` "but" …):
    "forget about it, I'm fine" is about "it", no content word, so no request. A question ("…?")
    and reminiscing ("remember that time I …") are no requests."""
    text = straight(sentence).strip()
    if _QUESTION.search(text):  # "remember that I told you about …?": a question, not a request
        return None
    for kind, rule in _RULES:
        m = rule.match(text)
        if m:
            what = m.group("x")
            if kind == FORGET:  # the topic is the first clause: what follows a comma or "but" is chat
                what = _CLAUSE_BREAK.split(what, maxsplit=1)[0]
            what = _tidy(what)
            if kind == REMEMBER and _REMINISCING.match(what):
                return None
            return (kind, what) if content_tokens(what) else None
    return None


def remembered_fact(clause: str) -> str:
    """The fact a "remember" stores: the clause in the third person without the speaker (English;
    another language keeps the speaker's words), e.g. "I'm vegetarian" -> "Is vegetarian"."""
    return third_person(clause) if re.match(r"(?i)(i\b|i'|my\b)", straight(clause)) else clause[:1].upper() + clause[1:]


def request_in(text: str, speaker_names: Iterable[str] = (), other_names: Iterable[str] = ()) -> tuple[str, str, str | None] | None:
    """The first request of a message: (kind, fact or topic, refusal reason or None), or None. A
    "remember" that says nothing about the speaker is no request (a reminder to the group)."""
    for sentence in sentences(text):
        found = parse(sentence)
        if found is None:
            continue
        kind, what = found
        if kind == FORGET:  # a forget only ever reaches the speaker's own memory
            # "forget what I said about X" is one; a bare "forget that/about …" only when it speaks
            # of the speaker ("forget that I …"): "forget that, let's play Catan" or "forget about
            # the bus, I'll drive" is chat, and taking it would delete the speaker's facts
            if not _SAID.search(straight(sentence)) and not about_speaker(what):
                continue
            return kind, what, None
        reason = subject_refusal(what, speaker_names, other_names)
        if reason is None and not about_speaker(what):
            continue
        return kind, remembered_fact(what), reason
    return None


def reminds_others(text: str) -> bool:
    """Whether the message says "remember that …" (a phrase of the rules) only about something
    other than its speaker: a reminder to the group or news of someone else ("remember that
    Ana's pregnant"), never a request of the speaker's own."""
    found = [p for p in (parse(s) for s in sentences(text)) if p is not None and p[0] == REMEMBER]
    return bool(found) and not any(about_speaker(what) for _, what in found)


def find_requests(pd: PartitionDay, other_names: Iterable[str] = ()) -> list[Request]:
    """Every request said in the partition-day's lines (positions in `pd.lines`)."""
    names = list(pd.speakers.values()) + list(other_names)
    out = []
    for i, line in enumerate(pd.lines):
        own = [pd.speakers.get(line.user_id, ""), line.name]
        found = request_in(line.text, own, [n for n in names if n not in own])
        if found:
            out.append(Request(line.user_id, i, found[0], found[1], found[2]))
    return out
