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
already even only definitely seriously truly mainly remotely primarily sometimes occasionally barely
temporarily permanently happily proudly secretly daily""".split())
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
_SUBJECT = re.compile(r"^I(?:['’](?:m|ve|ll|d))?\b", re.IGNORECASE)
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

# Clauses split before a new "I" / "my" after a comma or a coordinating word ("and", "but",
# "because"); a time or concession clause ("since I was 6", "while I …") stays in its sentence
# and ends the object before it.
_CLAUSE = re.compile(r"\s*(?:[;,]|\s[-–—])\s*(?:(?:and|but|so|plus|also|because|cause|cuz)\s+)?"
                     r"(?=(?:i|i'm|i've|i'll|my)\b)|\s+(?:and|but|so|plus|because|cause|cuz|then)\s+"
                     r"(?=(?:i|i'm|i've|i'll|my)\b)", re.IGNORECASE)
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
_OWN = re.compile(r"(?:i|i'm|i've|i'll|my)\b", re.IGNORECASE)
_LEAD = re.compile(r"^(?P<d>[\w ,-]{2,30}?)\s*,?\s*(?=(?:i|i'm|i've|i'll|my)\b)", re.IGNORECASE)


# Chat drops the subject: "Started a new job at Mozilla", "Heading to Paris on Friday".
_IMPLIED_PAST = frozenset("""started moved got went adopted finished visited flew bought graduated quit joined
relocated landed turned switched""".split())
_IMPLIED_ING = frozenset("""heading flying going moving starting leaving travelling traveling visiting learning
studying working living playing""".split())


IMPLIED = _IMPLIED_PAST | _IMPLIED_ING | {"been"}


def implied_subject(clause: str) -> str:
    """The clause with its dropped "I" / "I'm" put back when it starts with a verb that chat
    says without one ("Just started at Mozilla" -> "I just started at Mozilla"); else as is."""
    words = clause.split(" ", 2)
    first = words[0].lower()
    verb = words[1].lower() if first == "just" and len(words) > 1 else first
    if verb in _IMPLIED_PAST:
        return "I " + clause[:1].lower() + clause[1:]
    if verb in _IMPLIED_ING and first != "just":
        return "I'm " + clause[:1].lower() + clause[1:]
    return "I've " + clause if first == "been" else clause


def clauses(sentence: str, is_date) -> list[tuple[str, str]]:
    """(clause, leading time phrase) pairs of a sentence, split before a new "I" / "my" ("I live in
    Lisbon and I work at Google"), leading filler ("lol", "btw") dropped; a time phrase before
    the subject is set apart: "Tomorrow I'm flying to Tokyo" -> ("I'm flying to Tokyo",
    "Tomorrow"). `is_date(text)` says whether a leading phrase is a date."""
    out = []
    for part in _CLAUSE.split(sentence):
        part, lead_text = _FILLER.sub("", part.strip()).strip(), ""
        lead = None if _OWN.match(part) else _LEAD.match(part)
        if lead and is_date(lead.group("d")):
            part, lead_text = part[lead.end():], lead.group("d")
        if part:
            out.append((implied_subject(part) if out == [] else part, lead_text))
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


# ------------------------------------------------------------------ vocabulary of chat statements

def words_re(words: str) -> str:
    """A regex group of the words (a space-separated list)."""
    return "(?:" + "|".join(words.split()) + ")"


PET = words_re("dog cat puppy kitten pup hamster rabbit bunny parrot bird budgie cockatiel goldfish betta snake "
               "lizard gecko turtle tortoise ferret rat mouse chinchilla hedgehog axolotl horse pony guinea\\s+pig "
               "bearded\\s+dragon corgi husky retriever labrador lab shepherd poodle terrier beagle pug chihuahua "
               "dachshund bulldog collie spaniel")
REL = words_re("wife husband partner girlfriend gf boyfriend bf fiance fiancé fiancee fiancée son daughter sister "
               "brother mom mum mother dad father grandma grandpa grandmother grandfather aunt uncle cousin niece "
               "nephew roommate flatmate twin stepdad stepmom stepson stepdaughter baby kid")
JOB = words_re("nurse teacher doctor developer dev engineer programmer coder designer student lawyer attorney chef "
               "cook artist illustrator writer author journalist accountant pharmacist dentist electrician plumber "
               "mechanic architect scientist researcher professor lecturer tutor librarian barista waiter waitress "
               "bartender cashier manager consultant analyst translator paramedic firefighter officer cop soldier "
               "pilot driver farmer carpenter photographer musician streamer editor animator therapist psychologist "
               "vet veterinarian surgeon midwife intern freelancer contractor sysadmin technician clerk secretary "
               "receptionist baker tailor postdoc dj producer composer marketer recruiter paralegal caregiver carer "
               "welder machinist mathematician physicist chemist biologist economist historian youtuber tester "
               "admin administrator ceo cto founder entrepreneur pharmacist mod moderator")
EVENT = words_re("concert conference festival wedding trip vacation holiday holidays convention con tournament "
                 "match interview exam exams test appointment surgery operation graduation gig meetup hackathon "
                 "camp retreat flight party recital show presentation defense defence deadline tour race marathon "
                 "date")
INSTRUMENT = words_re("guitar piano violin drums bass cello ukulele flute saxophone sax trumpet clarinet harp "
                      "keyboard banjo")
LANG = (r"(?:(?-i:[A-Z][a-z]+)|english|spanish|french|german|portuguese|italian|japanese|chinese|mandarin|"
        r"cantonese|korean|russian|arabic|hindi|dutch|polish|swedish|turkish|greek|hebrew|ukrainian|czech|finnish|"
        r"norwegian|danish|vietnamese|thai|indonesian|tagalog|bengali|urdu|persian|farsi|romanian|hungarian|"
        r"catalan|welsh|irish)")
LANGS = rf"(?:(?:fluent|native|some|basic|conversational|a little(?: bit of)?|a bit of) )?{LANG}"
TZ = (r"(?:(?:utc|gmt)\s?[+\-−]\s?\d{1,2}(?::?\d\d)?|utc|gmt|cet|cest|eet|eest|wet|west|bst|ist|jst|kst|aest|"
      r"aedt|acst|awst|nzst|nzdt|est|edt|cst|cdt|mst|mdt|pst|pdt|akst|hst|sgt|hkt|msk|brt|art|[a-z]+/[a-z_]+)")
TECH = frozenset("""vim neovim nvim emacs linux arch ubuntu debian fedora nixos windows macos mac python rust go golang
javascript js typescript ts java kotlin c c++ c# haskell elixir ruby php swift zig lua tabs spaces vscode vs jetbrains
intellij pycharm git docker kubernetes react vue svelte django flask dark qwerty dvorak colemak firefox chrome
android ios iphone zsh bash tmux helix sublime ocaml scala clojure dart flutter godot unity unreal blender postgres
sqlite""".split())
SAFE_THINGS = frozenset("""game band music food language editor song artist movie film book show anime genre album
series dish drink snack colour color ide distro os framework author singer manga sport team character""".split())
# Health, money, relationships, moderation, feelings, beliefs: never global.
SENSITIVE_WORDS = frozenset("""ill ban banned mod mods muted kicked warned sad rent broke die died dead trans gay meds
weed vote sick wife husband""".split())
SENSITIVE_PREFIXES = ("depress", "anxi", "therap", "adhd", "autis", "cancer", "diagnos", "medica", "medicine",
                      "pregnan", "hospital", "surger", "disorder", "rehab", "sober", "alcohol", "drunk", "drug",
                      "debt", "salar", "money", "loan", "divorc", "breakup", "girlfriend", "boyfriend", "marri",
                      "lesbian", "queer", "religio", "church", "muslim", "christian", "jewish", "lonel", "angry",
                      "suicid", "death", "funeral", "grie", "politic", "wives", "husbands", "abus", "disab")
SKIP_WORDS = frozenset("""if would wish wished wishes could might maybe perhaps hypothetically imagine suppose unless
pretend pretending should i'd wanna jk kidding joking dream dreamt dreamed lying roleplay rp /s""".split())
# Reported speech: a first-person word after one of these is someone else's ("she said I'm …").
REPORTING = frozenset("said says told tells claim claims claimed asked asks thinks thought".split())
NUMBER_WORDS = frozenset("two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
                          "hundred thousand million".split())
_I = re.IGNORECASE
# "I" / "I'm" / "I've" / "I'll" and the adverbs between "I" and its verb ("never" would turn a fact around).
ADV = r"(?:(?:" + "|".join(sorted(ADVERBS - {"never"})) + r"|so)\s+)*"
IM, IVE, ILL = r"i(?:'m|\s+am)", r"i(?:'ve|\s+have)", r"i(?:'ll|\s+will)"
# Opinions, feelings and chatter: "I think …", "I'm so tired", "I need …".
OPINION = re.compile(rf"^(?:i|{IM}|{IVE}) {ADV}(?:think|guess|mean|feel|felt|believe|bet|agree|disagree|doubt|"
                     r"suppose|hope|wonder|swear|know|knew|remember|forgot|heard|assume|assumed|sure|not sure|sorry|"
                     r"glad|afraid|tired|bored|done|so|very|too|about to|gonna|going to go|need|needed|want|wanted|"
                     r"can|can't|cannot|will|won't|don't|didn't|do|did|got to|have to|had to|must|kinda|lost|"
                     r"confused|lucky|never|no longer|honestly|seen|noticed|realized|realised|checked|tried|try|"
                     r"trying|asked|ask|said|told|had no|thinking|considering|wondering|debating|missed|miss)\b", _I)
NOT_THINGS = frozenset("thing things part way time moment day person one kind type bit".split())
# Objects that make no fact: "I love this", "I'm into it", "I live in fear".
BAD_OBJECT = re.compile(r"^(?:it|this|that|these|those|there|here|them|him|her|you|your|u|ur|ya|y'all|how|when|what|"
                        r"why|who|which|some|someone|something|anything|everything|nothing|bed|sleep|the way|the idea|"
                        r"the fact|being|seeing|hearing|fear|hope|denial|shambles|agony|to (?:see|hear|know|say|be|"
                        r"have|think)|the same|mine|one(?!\s+(?-i:[A-Z]))|trouble|a bit|a lot|a little|much|more|"
                        r"all|both|each|stuff|things|lots|having|doing|getting|going|waking|people|everyone|myself|"
                        r"so|too|very|well|not|"
                        r"no|with|around|along|the (?:future|past|other|team|server|channel|group|chat|internet|top|"
                        r"bottom|start|beginning|end))\b", _I)
# What a like is about that passes: "I like Sam's idea", "I prefer the first option".
EPHEMERAL_OBJECT = re.compile(r"\b(?:idea|point|take|message|post|comment|suggestion|answer|question|clip|meme|pic|"
                              r"photo|screenshot|update|patch|option|version|choice|trailer|episode|news|vibe|energy|"
                              r"reply|video|joke|thread|outfit|look|ui)s?\b|\bthe new\b", _I)
# Numbers of the moment: "2 kills", "5% battery", "page 200", "level 80", "PR 451".
EPHEMERAL_NUMBER = re.compile(r"\b(?:kills?|battery|ping|fps|page|level|lvl|option|version|v|pr|round|hp|mbps|gb|"
                              r"tabs?|bugs?|messages?|notifications?|points?)\b", _I)
# Where one goes every day: "I'm off to the gym tomorrow" is chatter.
TRIVIAL_PLACE = re.compile(r"^(?:the |a |my |their )?(?:bed|sleep|gym|work|school|class|store|shop|office|bathroom|"
                           r"toilet|kitchen|doctor|dentist|town|home|lunch|dinner|breakfast|shower|walk|nap|run|movies|"
                           r"mall|bar|pub|park|beach|supermarket|church|hospital|vet|party)s?\b", _I)
CHATTER = frozenset("lol lmao ok okay ngl tbh omg wtf btw idk imo gg brb afk asap irl fr nvm rn atm af til psa xd ty "
                    "thx pls plz yes yeah no nah hey hi hello wow".split())
# "I'm going to <verb>" is no trip.
GOING_TO_VERB = re.compile(r"^(?:be|visit|move|start|fly|travel|see|try|get|have|take|make|do|learn|buy|watch|play|"
                           r"stay|spend|attend|leave|go|work|study|meet|check|need|sleep|eat|cook|finish|head|drive|"
                           r"pick|call|run|write|read|build|join|give|tell|ask|help|quit|switch|miss)\b", _I)
# "3am", "5 more minutes", "2 hours of sleep": numbers of chatter, not of facts.
TIME_AMOUNT = re.compile(r"\d+(?:[.:]\d+)?\s*(?:more\s+)?(?:am|pm|h|hrs?|hours?|mins?|minutes?|secs?|seconds?|%|x|"
                         r"times|ms|fps)\b", _I)
# Someone else's facts: "my friend works at Google" is not about the speaker.
OTHER_PERSON = re.compile(r"my (?:[\w-]+ )?(?:friends?|boss|coworkers?|co-workers?|colleagues?|neighbou?rs?|buddy|"
                          r"buddies|classmates?|teachers?|manager|landlord|ex|doctor|therapist|roommates?|"
                          r"flatmates?)\b", _I)
# The verbs after "I" / "I'm" / "I've" / "I'll" (and adverbs) that extract's patterns start with.
TRIGGERS = frozenset("""live living based located lived moved relocated moving relocating move relocate from
originally grew was born work working worked started got landed accepted took starting start hired a an retired
unemployed self-employed between vegetarian vegan pescatarian allergic lactose celiac diabetic learning studying
practicing practising teaching study teach code program write develop use daily run play playing main been love
like prefer enjoy adore hate dislike can't don't do obsessed into speak in on turned turning married engaged
divorced more fluent can became become collect knit crochet paint draw bake brew surf skate climb garden sew dance
swim hike cycle sing skateboard snowboard ski fish doing single widowed getting graduated graduating have one two
three four five six be fly go travel head drive visit flying going travelling traveling heading driving off
visiting leaving taking coming returning spending leave went flew drove travelled traveled visited came returned
attended saw spent""".split())
_WORD = re.compile(r"[a-z0-9'+#/]+")


def sensitive(text: str) -> bool:
    """Health, money, relationships, moderation, feelings, beliefs: a fact about them is never
    global."""
    if any(c in text for c in "$€£"):
        return True
    words = _WORD.findall(text.lower())
    return not SENSITIVE_WORDS.isdisjoint(words) or any(w.startswith(SENSITIVE_PREFIXES) for w in words)


def article(phrase: str) -> str:
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase
