"""Global promotion: when a fact said in public may follow its user into every server and DM.

A fact becomes `global` only when all hold (the caller checks the model's `global_safe` flag):
its level is `guild_public` (promotion never moves what was said in a DM or a restricted channel
to a wider audience); its confidence is at least `[memory] global_min_confidence`; its category
is identity, preference or skill/work; it is safe (`safety.refusal_reason`); it names nothing on
the DENY list and no one else (`other_names`); and it matches the ALLOW list.

Matching runs on normalised text (`safety.normalise`: NFKC, format characters and accents
dropped, casefolded, spaced-out letters joined), on WORD BOUNDARIES — a word is a run of letters
and digits, so "_" and "-" separate words — with every inflection written out (ban, bans,
banned, banning): never substrings. "java" does not match inside "javascript", "ban" not inside
"band" or "banana", "mod" not inside "model", "ill" not inside "skill", "ex" not inside "next",
"rent" not inside "current", "pay" not inside "paypal" (PayPal is a platform, not a statement
about money; "pays with PayPal" is still refused for "pays"). A multi-word entry ("time zone",
"laid off") matches across any run of spaces or hyphens.

DENY is checked on the text and on its Cyrillic/Greek look-alike folding (so "bаnned" with a
Cyrillic а is refused); ALLOW only on the text itself, so a disguised fact is never promoted.
The fact's `key` ("favourite game", "home city") counts as part of its text for both lists.
Both lists err towards refusing: a harmless fact left at `guild_public` costs little, a private
one made global cannot be taken back from every server it reached.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from pipeline.safety import normalise, refusal_reason
from pipeline.summarize.text import STOPWORDS

PROMOTABLE = frozenset({"identity", "preference", "skill/work"})


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Word boundaries for the regular-expression entries ("re:…"), which carry their own: a word is
# a run of letters and digits.
_B, _E = r"(?<![^\W_])", r"(?![^\W_])"


# ------------------------------------------------------------------ DENY: never global
# (group, entries). An entry is a word or phrase, or, written as "re:…", a regular expression.
DENY: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Health is special-category data everywhere: an illness, a treatment, a disability.
    ("health", _words(
        "sick sickness ill illness illnesses disease diseases doctor doctors hospital hospitals "
        "hospitalized hospitalised diagnosed diagnosis therapy therapist therapists medication "
        "medications medicine medicines meds pills pregnant pregnancy depression anxiety adhd "
        "autism autistic cancer surgery surgeries allergy allergies allergic disability disabilities "
        "disabled diabetes diabetic asthma injury injuries injured pain chronic psychiatrist "
        "psychologist bipolar ocd ptsd covid hiv disorder migraine migraines insomnia rehab "
        "addiction addicted sober alcoholic drugs blind deaf wheelchair dyslexia dyslexic suicide "
        "suicidal") + ("mental health", "panic attack", "panic attacks", "self harm", "eating disorder")),
    # Money: income, debt, what someone can afford. Symbols match anywhere ("US$40"). "pay" is a
    # word of its own: it does not match inside "paypal" (a platform, not a sum of money).
    ("money", _words(
        "salary salaries debt debts loan loans rent rents renting rented income money broke "
        "bankrupt bank banks banking mortgage mortgages price prices paid pay pays paying payment "
        "payments afford savings tax taxes owe owes owed dollar dollars euro euros pounds usd eur "
        "gbp wealthy poverty") + ("credit card", "credit score", "re:[$€£¥₹₽₿]")),
    # Work: an employer or a job pins a person down and is none of another server's business.
    # "manager" is not listed: "package manager" and "window manager" are tools.
    ("work", _words(
        "job jobs work works worked working workplace employer employers employed unemployed "
        "employee employees boss bosses company companies office colleague colleagues career "
        "hired fired intern interns internship shift shifts promoted promotion resigned") + (
        "laid off", "lay off")),
    # Relationships and family: other people's lives, and a person's own private life.
    ("relationships", _words(
        "girlfriend girlfriends boyfriend boyfriends wife wives husband husbands partner partners "
        "spouse fiance fiancee dating divorce divorced married marriage wedding crush ex exes "
        "mom moms mum mums mommy mother mothers dad dads daddy father fathers parent parents sister "
        "sisters brother brothers sibling siblings son sons daughter daughters kid kids child "
        "children baby babies grandma grandpa grandmother grandfather grandparents aunt uncle "
        "cousin cousins nephew niece family stepmom stepdad stepmother stepfather") + ("in law", "in laws")),
    # Location: never global, at any level (a country, a city, an address): below city level
    # (street, flat, postcode, a street number), an IANA time zone id (it names a city:
    # "Europe/Lisbon"), and every home statement: "lives in", "is from", "grew up in", "home".
    # "from" is refused wherever it stands: "is from Lisbon" and "switched from Vim" read alike
    # to a word list, and refusing the second costs only a promotion. Not listed, for the games
    # and tools they would refuse: "live" ("streams live"), "resident" (Resident Evil), "apt".
    ("location", _words(
        "street streets strasse avenue address addresses apartment apartments flat flats "
        "neighbourhood neighbourhoods neighborhood neighborhoods postcode postcodes zip from lives "
        "living lived resides residing home homes hometown homeland moved moving relocated born") + (
        "live in", "house number", "post code", "postal code", "zip code", "grew up", "based in",
        "located in",
        rf"re:{_B}\d{{1,5}}[a-z]?(?:[\s\-]+[a-z]+){{0,3}}[\s\-]+(?:street|st|road|rd|avenue|ave|lane|ln|"
        rf"drive|dr|boulevard|blvd|way|court|ct|place|pl|square|sq|terrace|close|crescent|strasse|rue|"
        rf"rua|calle|via){_E}",
        rf"re:{_B}(?:europe|america|asia|africa|australia|pacific|atlantic|indian|antarctica)/[a-z_\-]+")),
    # Moderation: a ban, a warning or a report follows no one to another server. "mod" in the
    # game sense ("favourite Minecraft mod") is refused too; "modded", "modding" are not listed.
    ("moderation", _words(
        "ban bans banned banning unban unbanned mute mutes muted muting unmuted kick kicks kicked "
        "kicking warn warns warned warning warnings timeout timeouts moderator moderators mod mods "
        "moderation moderating moderated report reports reported reporting infraction infractions "
        "punished punishment admin admins spammer spamming spammed") + ("timed out",)),
    # Other people: friends and acquaintances (names come from other_names); our placeholders
    # for unknown names ("member 2", "@someone", "this member") and any @handle.
    ("other_people", _words(
        "friend friends bestie coworker coworkers neighbour neighbours neighbor "
        "neighbors roommate roommates flatmate flatmates housemate housemates classmate classmates "
        "teammate teammates") + ("co worker", "co workers", "best friend", "this member",
                                 rf"re:{_B}member\s+\d+{_E}", r"re:@[^\W_]")),
    # Emotions and moods: a state of mind is not a fact to carry everywhere. Positive words
    # ("happy", "loves") are not listed: "loves Rust" is a preference.
    ("emotions", _words(
        "sad sadness angry anger upset lonely loneliness depressed anxious stressed stress scared "
        "afraid frustrated furious crying cry cries cried grief grieving heartbroken mood moods "
        "moody feel feels feeling feelings felt unhappy miserable worried nervous jealous "
        "ashamed embarrassed hurt panic")),
    # Religion, politics and sexuality: special-category data.
    ("beliefs", _words(
        "church churches mosque synagogue temple religion religions religious god gods allah "
        "jesus christ christian christians christianity catholic protestant muslim muslims islam "
        "islamic jewish judaism jew jews hindu hinduism buddhist buddhism sikh atheist atheism "
        "agnostic pray prays prayer faith bible quran vote votes voted voting voter election elections "
        "party parties democrat democrats republican republicans liberal conservative labour tory "
        "socialist communist fascist politics political gay lesbian queer bisexual bi trans "
        "transgender nonbinary asexual pansexual lgbt lgbtq sexuality sexual sex") + (
        "left wing", "right wing", "non binary", "coming out", "came out")),
)

# ------------------------------------------------------------------ ALLOW: what may be global
ALLOW: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Time zones: names, abbreviations, UTC/GMT offsets (not IANA ids: DENY, location).
    ("timezone", _words(
        "timezone timezones tz utc gmt cet cest eet eest bst pst pdt est edt cst cdt mst mdt "
        "jst kst aest aedt nzst hst akst msk") + (
        "time zone", "time zones", "eastern time", "pacific time", "central time", "mountain time",
        rf"re:{_B}(?:utc|gmt)\s*[+\-−±]\s*\d{{1,2}}(?::?\d{{2}})?{_E}")),
    # Languages spoken.
    ("language", _words(
        "speaks speak spoken speaking fluent bilingual trilingual multilingual polyglot language "
        "languages") + ("native language", "first language", "mother tongue", "native speaker")),
    # Favourites of anything (DENY still applies to what the favourite is).
    ("favourite", _words("favourite favourites favorite favorites fave faves fav")),
    # Games and genres.
    ("games", _words(
        "game games gamer gaming videogame videogames plays playing rpg rpgs jrpg jrpgs mmo mmos "
        "mmorpg fps rts moba roguelike roguelikes roguelite roguelites metroidvania metroidvanias "
        "platformer platformers soulslike speedrun speedruns speedrunning tabletop dnd chess "
        "minecraft steam playstation xbox ps4 ps5 genre genres") + (
        "video game", "video games", "board game", "board games", "battle royale", "visual novel",
        "visual novels", "open world", "nintendo switch", "d&d", "dungeons and dragons")),
    # Music and bands.
    ("music", _words(
        "music musician band bands song songs album albums artist artists singer singers listens "
        "playlist playlists rock metal jazz blues punk rap techno edm lofi kpop classical folk "
        "indie pop synthwave vaporwave dubstep trance ambient orchestral soundtrack soundtracks ost "
        "guitar bass drums piano violin ukulele synth sings singing") + (
        "hip hop", "lo fi", "k pop", "listening to")),
    # Technical preferences: programming languages, editors, OSes, frameworks, tools, platforms.
    ("technical", _words(
        "programming programmer coding codes python java javascript typescript rust golang kotlin "
        "swift ruby php haskell elixir erlang scala clojure lua perl dart zig nim ocaml julia sql "
        "bash zsh fortran cobol assembly webassembly wasm html css vim neovim nvim emacs vscode "
        "jetbrains intellij pycharm sublime nano helix editor editors ide ides linux windows macos "
        "ubuntu debian arch fedora nixos gentoo freebsd openbsd android ios distro distros django "
        "flask fastapi react vue angular svelte rails laravel express nodejs deno pytorch tensorflow "
        "unity godot framework frameworks library libraries git github gitlab docker kubernetes k8s "
        "terraform ansible nix tmux terminal compiler compilers debugger tabs keyboard keyboards "
        "dvorak colemak qwerty kde gnome i3 sway hyprland selfhosting homelab") + (
        "c++", "c#", "f#", "objective c", "visual studio", "vs code", "text editor", "mac os",
        "operating system", "node.js", "next.js", "vue.js", "unreal engine", "open source",
        "command line", "dark mode", "light mode", "window manager", "package manager",
        "mechanical keyboard", "raspberry pi", "self hosting")),
    # Pronouns.
    ("pronouns", ("pronoun", "pronouns", "any pronouns",
                  rf"re:{_B}(?:he|she|they|xe|ze|it|fae|any)\s*/\s*(?:him|her|them|they|she|he|xem|zir|hir|its|"
                  rf"faer|all){_E}")),
)


def _entry_pattern(entry: str) -> str:
    """A word-bounded pattern for one entry: a boundary is required on a side only where the
    entry has a letter or digit ("c++" may be followed by "17", "$" matches in "US$40")."""
    if entry.startswith("re:"):
        return f"(?:{entry[3:]})"  # carries its own boundaries
    body = r"[\s\-]+".join(re.escape(part) for part in entry.split())
    left = _B if re.match(r"[^\W_]", entry) else ""
    right = _E if re.search(r"[^\W_]$", entry) else ""
    return f"{left}(?:{body}){right}"


def _compile(groups) -> tuple[tuple[str, re.Pattern], ...]:
    return tuple((name, re.compile("|".join(_entry_pattern(e) for e in sorted(entries, key=len, reverse=True))))
                 for name, entries in groups)


_DENY = _compile(DENY)
_ALLOW = _compile(ALLOW)


def _name_patterns(other_names: Iterable[str]) -> list[re.Pattern]:
    """Other people's names as whole words: the full name, and each of its words that is not a
    stopword (a name made only of stopwords, "The Who", counts by all of its words)."""
    out = []
    for name in other_names:
        if not name or not name.strip():
            continue
        words = re.findall(r"[^\W_]+", normalise(name)[0])
        if not words:
            continue
        significant = [w for w in words if w not in STOPWORDS] or [" ".join(words)]
        for w in significant:
            out.append(re.compile(_entry_pattern(w)))
    return out


def denied(text: str, other_names: Iterable[str] = ()) -> str | None:
    """The first DENY group the text falls in ("health", "other_people", …), or None."""
    forms = normalise(text)
    for name, pattern in _DENY:
        if any(pattern.search(f) for f in forms):
            return name
    if any(p.search(f) for p in _name_patterns(other_names) for f in forms):
        return "other_people"
    return None


def allowed(text: str) -> list[str]:
    """The ALLOW entries the text matches, as matched ("javascript", "time zone"), in order."""
    form = normalise(text)[0]
    hits = []
    for _name, pattern in _ALLOW:
        hits.extend(m.group(0) for m in pattern.finditer(form))
    return hits


def global_refusal(text: str, *, category: str, confidence: float, level: str, key: str | None,
                   other_names: Iterable[str], settings) -> str | None:
    """None when a fact may become global, else why not: "level", "confidence", "category",
    "unsafe", "deny:<group>" or "not_allowed". Never a word of the text (other people's names
    must not reach a log)."""
    if level != "guild_public":  # never from a DM or a restricted channel to a wider audience
        return "level"
    try:
        value = float(confidence)
    except (TypeError, ValueError):
        return "confidence"
    if not math.isfinite(value) or not value >= settings.global_min_confidence:
        return "confidence"
    if category not in PROMOTABLE:
        return "category"
    whole = f"{text or ''}\n{key or ''}"
    if refusal_reason(whole) is not None:
        return "unsafe"
    group = denied(whole, other_names)
    if group:
        return f"deny:{group}"
    if not allowed(whole):
        return "not_allowed"
    return None
