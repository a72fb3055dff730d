"""The vocabulary of chat statements the extractor reads: kinds of pets, relatives, jobs, events,
languages, time zones; words that make a sentence no fact (conditionals, reported speech,
opinions, chatter, objects of the moment); what is sensitive. Regex fragments are strings (to
build patterns with); compiled patterns are compiled once."""

from __future__ import annotations

import re

# Adverbs skipped between "I" and its verb ("I really love", "I've also been"): kept in the text,
# the verb after them agrees.
ADVERBS = frozenset("""just really also still finally recently actually usually always never often now
literally basically honestly currently officially mostly totally kinda sorta normally generally
already even only definitely seriously truly mainly remotely primarily sometimes occasionally barely
temporarily permanently happily proudly secretly daily""".split())

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
attended saw spent settled adopted rescued bought brought booked all""".split())
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
