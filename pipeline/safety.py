"""Text safety, in one place: what may become a fact a bot reads, and what must never reach an
error, a log line or a stored reason.

- `refusal_reason(text)`: why a text must not be stored as a user's fact — it reads like an
  instruction to the bot reading the facts, or it carries a secret — or None. `facts remember`
  uses it; the nightly fact extraction is meant to reuse it.
- `redact(text)`: secret token formats and every registered secret value (the configured API
  key, registered by the Gemini client) replaced by `[redacted]` (pipeline/secret_values.py, with
  `secret_kind`; re-exported here).
- For text a bot pastes into its own prompt (contexts, pipeline/summarize/safe_text.py):
  `reads_unsafe(text)` (refusal_reason, behind a fast screen: it is asked of every sentence a
  summary may quote), `defang(text)` (markup made plain text) and `safe_name(name)`.

Matching runs on normalised text so that disguises do not help: NFKC (fullwidth and mathematical
letters become ASCII), format characters (Unicode category Cf: zero-width spaces and joiners)
dropped, accents dropped, Cyrillic/Greek look-alikes and digit-for-letter spellings folded to
ASCII, spaced-out letters ("i g n o r e", "i.g.n.o.r.e") joined, casefolded. Patterns are a
deliberate, documented list (README, "mempipe facts remember"), tested in both directions:
third-person facts ("Ana's password manager is Bitwarden", "Bo always says hello") pass, while
orders to the bot ("always say yes") and values of secrets are refused.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from .secret_values import REDACTED, looks_random, redact, register_secret, secret_kind
from .secret_values import strip_marks as _strip

# the secrets half of this module lives in pipeline/secret_values.py; its names are still asked of this one
__all__ = ["REDACTED", "looks_random", "redact", "register_secret", "secret_kind", "refusal_reason",
           "instruction_kind", "normalise", "may_refuse", "reads_unsafe", "defang", "safe_name"]


# Letters NFKC leaves alone that render like ASCII ones. Applied before casefolding because
# some differ by case (Greek "Η" looks like H, "η" like n).
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "А": "a", "В": "b", "в": "b", "е": "e", "Е": "e", "ё": "e", "Ё": "e", "з": "3",
    "і": "i", "І": "i", "ї": "i", "Ї": "i", "ј": "j", "Ј": "j", "К": "k", "к": "k", "М": "m",
    "м": "m", "Н": "h", "н": "h", "О": "o", "о": "o", "Р": "p", "р": "p", "С": "c", "с": "c",
    "Т": "t", "т": "t", "У": "y", "у": "y", "Х": "x", "х": "x", "Ѕ": "s", "ѕ": "s", "ԁ": "d",
    "һ": "h", "Һ": "h", "ӏ": "l", "Ӏ": "l", "ԛ": "q", "ԝ": "w", "ь": "b", "п": "n", "г": "r",
    "ѵ": "v", "Ѵ": "v",
    # Greek
    "Α": "a", "α": "a", "Β": "b", "β": "b", "Ε": "e", "ε": "e", "Ζ": "z", "Η": "h", "η": "n",
    "Ι": "i", "ι": "i", "Κ": "k", "κ": "k", "Μ": "m", "Ν": "n", "ν": "v", "Ο": "o", "ο": "o",
    "Ρ": "p", "ρ": "p", "Τ": "t", "τ": "t", "Υ": "y", "υ": "u", "Χ": "x", "χ": "x", "ω": "w",
    "γ": "y", "ϲ": "c", "Ϲ": "c",
    # Latin oddities and digit-for-letter spellings ("1gn0r3")
    "ı": "i", "ɡ": "g", "ȷ": "j", "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t",
    "@": "a", "$": "s",
})
# Single letters split by one separator each: "i g n o r e", "i.g.n.o.r.e", "i-g-n-o-r-e".
# A longer gap ("i g n o r e   a l l") stays a word break.
_SPACED = re.compile(r"(?<![^\W_])(?:[^\W_][ .\-_*·•|/+~]){2,}[^\W_](?![^\W_])")


def _join_spaced(text: str) -> tuple[str, bool]:
    joined = _SPACED.sub(lambda m: re.sub(r"[\W_]", "", m.group(0)), text)
    return joined, joined != text


def normalise(text: str) -> list[str]:
    """The forms patterns are matched against: without look-alike folding (so Russian stays
    Russian) and with it (so Cyrillic letters in English words become Latin), both casefolded
    with spaced-out letters joined."""
    base = _strip(text)
    return [_join_spaced(base.casefold())[0], _join_spaced(base.translate(_CONFUSABLES).casefold())[0]]


# ------------------------------------------------------------------ instructions to the bot

_W = r"[\W_]+"  # a word gap
_VERB = (r"(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|overrid(?:e|ing)|bypass(?:ing)?|"
         r"discard|abandon|set aside|(?:do not|don'?t|stop) (?:follow(?:ing)?|obey(?:ing)?))")
_QUANT = r"(?:all|any|every|each|the|your|my|these|those|of|everything|anything)"
_PRIOR = r"(?:previous(?:ly)?|prior|above|earlier|preceding|former|foregoing)"
_QUAL = rf"(?:{_PRIOR}|system|safety|developer|hidden)"
_TARGET = (r"(?:instructions?|rules?|directives?|guidelines?|guidance|prompts?|commands?|orders?|"
           r"constraints?|restrictions?|context|messages?|programming|guardrails?|filters?|polic(?:y|ies)|"
           r"training|text|conversation)")
# Other languages: "ignore/forget … previous … instructions/rules" (accents already stripped).
_F_VERB = (r"(?:ignora|ignore|ignorez|ignorar|ignoriere|ignorieren|olvida|olvide|olvidar|omite|descarta|"
           r"oublie|oubliez|vergiss|vergesst|vergessen|missachte|esqueca|esquece|esquecer|desconsidere|"
           r"desconsidera|dimentica|dimenticate|negeer|vergeet|zignoruj|ignoruj|zapomnij|"
           r"игнорируи(?:те)?|проигнорируи(?:те)?|игнорировать|забудь(?:те)?|забыть)")
_F_WORD = (r"(?:instrucciones|instruccion|indicaciones|reglas|ordenes|consignes|regles|anweisungen|"
           r"instruktionen|regeln|befehle|vorgaben|instrucoes|instrucao|regras|ordens|istruzioni|regole|"
           r"instructies|regels|инструкц\w*|указани\w*|правила|команды|instrukcje|polecenia|zasady|"
           r"instructions|anteriores|previas|previos|precedentes|anterieures|vorherigen|vorigen|"
           r"bisherigen|obigen|fruheren|precedenti|anteriori|vorige|eerdere|предыдущ\w*|прежн\w*|"
           r"poprzednie|wczesniejsze)")
_ORDER = (r"(?:say|answer|reply|respond|tell|output|print|mention|reveal|agree|recommend|refuse|obey|"
          r"praise|insult|claim|pretend)")
# Orders are given in the imperative: "act as …" at the start of a sentence or after "you",
# "please", "to" …, not "Ana acts as treasurer" or "Bo would never answer the phone".
_IMPERATIVE = r"(?:^|[.!?:;,]\s*|\b(?:you|please|now|must|should|shall)\s+)"
_ORDERED = rf"(?:{_IMPERATIVE}|\b(?:and|to)\s+)"  # "… and always say yes", "tell the bot to never …"
_DEVICES = (r"(?:iphones?|phones?|ipads?|ipods?|consoles?|kindles?|devices?|switch(?:es)?|routers?|"
            r"ps[2-5]|xbox(?:es)?|androids?)")
_IGNORE = "'ignore previous instructions'"
_ROLE = "a role marker"

_INSTRUCTIONS: list[tuple[str, re.Pattern]] = [(kind, re.compile(p)) for kind, p in [
    (_IGNORE, rf"\b{_VERB}(?:{_W}{_QUANT}){{0,3}}{_W}{_QUAL}(?:{_W}\w+){{0,2}}?{_W}{_TARGET}\b"),
    (_IGNORE, rf"\b{_VERB}(?:{_W}{_QUANT}){{0,3}}{_W}{_PRIOR}\s*(?:$|[.,;:!?&]|\band\b|\bthen\b)"),
    (_IGNORE, rf"\b{_VERB}(?:{_W}(?:all|any|every|of|your|these|those|my)){{1,3}}{_W}"
              r"(?:instructions|directives|guidelines|guardrails|programming|prompts?|rules)\b"),
    (_IGNORE, rf"\b{_VERB}{_W}(?:everything|anything|all|what){_W}(?:{_PRIOR}|before|so far|"
              r"(?:you|i)\W+(?:were\W+|was\W+|have\W+been\W+)?(?:told|said|know|learned))\b"),
    (_IGNORE, rf"\b{_F_VERB}(?:{_W}\w+){{0,3}}{_W}{_F_WORD}\b"),
    ("'you are now …'", r"\byou\W*(?:are|re|r)\W+now\b|\bfrom now on\b|\bnew (?:system )?(?:instructions?|rules)\s*:"),
    ("'you are now …'", r"\byour new (?:role|task|instructions?|rules?|persona|identity|purpose|goal)\b"),
    ("'act as …'", rf"{_IMPERATIVE}(?:act|behave|roleplay|role-play|pose) as\b"),
    ("'act as …'", rf"{_IMPERATIVE}pretend (?:to be|you\W*(?:are|re))\b"),
    ("'system prompt'", r"\bsystem\W*(?:prompt|message|instructions?)\b"),
    ("'developer mode'", r"\b(?:developer|god|dan|jailbreak|unrestricted|unfiltered)\W*mode\b"),
    ("'developer mode'", r"\bdeveloper\W*(?:message|instructions?)\b"),
    ("'jailbreak'", rf"\bjailbr(?:eak|oke|oken|eaking)\w*\b(?!(?:{_W}\w+){{0,2}}{_W}{_DEVICES}\b)"),
    ("'reveal your instructions'", r"\b(?:reveal|print|show|repeat|output|leak|display|tell me)\W+(?:me\W+)?"
                                   r"(?:your|the)\W+(?:\w+\W+)?(?:instructions|prompt|guidelines|rules)\b"),
    ("'always/never say …'", rf"{_ORDERED}(?:always|never)\W+(?:\w+\W+)?{_ORDER}\b|\b(?:reply|respond|answer)\W+only\b"),
    ("'always/never say …'", r"\byou\W+(?:must|should|shall|will|have to|need to)\W+(?:always|never|only)\b"),
    (_ROLE, r"<\s*/?\s*(?:system|assistant|user|developer|messages?|instructions?|prompt|context|facts|tool|"
            r"inst|sys|s)\b[^<>]{0,40}>"),
    (_ROLE, r"<\|[a-z_]+\|>|\[/?(?:inst|system|sys|assistant|user)\]|<<\s*/?sys\s*>>"),
    (_ROLE, r"(?:^|\s)#{1,6}\s*(?:instructions?|system|assistant|user|response|prompt|new rules?)\b"),
    (_ROLE, r"(?:^|[.!?]\s*)(?:system|assistant|developer|user)\s*:"),
]]
# Matched only when spaced-out letters were joined, on the text without any gaps at all:
# "i g n o r e p r e v i o u s" has no word gaps left to match above.
_SQUASHED = re.compile(r"(?:ignore|disregard|forget|override|bypass)(?:all|any|every|the|your|my)*"
                       r"(?:previous|prior|above|earlier|preceding)"
                       r"(?:instructions?|rules|prompts?|directives|guidelines)|systemprompt|developermode")

def instruction_kind(text: str) -> str | None:
    """Which kind of instruction to the bot `text` reads like, or None."""
    base = _strip(text)
    folded_raw = base.translate(_CONFUSABLES).casefold()
    forms = normalise(text)
    for kind, pattern in _INSTRUCTIONS:
        if any(pattern.search(form) for form in forms):
            return kind
    if _join_spaced(folded_raw)[1] and _SQUASHED.search(re.sub(r"[\W_]", "", folded_raw)):
        return _IGNORE
    return None


def refusal_reason(text: str) -> str | None:
    """Why `text` must not be stored as a fact a bot reads, or None when it may be.
    Names the kind of problem, never the secret itself."""
    kind = secret_kind(text)
    if kind:
        return (f"it looks like a secret ({kind}); facts are shown to a chat bot, so keys, tokens "
                f"and passwords are never stored")
    kind = instruction_kind(text)
    if kind:
        return f"it reads like an instruction to the bot ({kind}), not a fact about the user"
    return None


# ------------------------------------------------------------------ text pasted into a prompt

# A fast screen in front of refusal_reason, for text checked in bulk (every sentence a summary may
# quote, every line of every context): refusal_reason costs ~0.3 ms a sentence, the screen ~20 µs.
# It answers "maybe" unless the text is plain (ASCII, plus characters normalisation leaves alone
# and that are no letter or digit: emoji, “ ” … · –; format characters and combining marks are
# removed, as `_strip` does) and holds none of the literals every pattern above needs. Those are
# looked for in its lower-case letters alone with digits read as letters ("1gn0r3"), so spacing,
# punctuation and spaced-out letters do not hide them. tests/unit/test_safe_text.py checks the
# screen against refusal_reason on tests/unit/test_safety.py's texts and more.
_STEMS = """ignor disregard forget overrid bypass discard abandon setaside follow obey olvid omite descarta oubli
vergiss vergesst vergessen missachte esquec desconsider dimentic negeer vergeet zapomnij youarenow yourenow yournow
fromnowon newinstruction newrule newsysteminstruction newsystemrule yournew actas behaveas roleplayas poseas pretend
systemprompt systemmessage systeminstruction developermode godmode danmode jailbreakmode unrestrictedmode
unfilteredmode developermessage developerinstruction jailbr instructions prompt guidelines rules
replyonly respondonly answeronly youmustonly youshouldonly youshallonly youwillonly youhavetoonly youneedtoonly"""


def _trie(words: list[str]) -> str:
    """One regex for many literals, branching letter by letter (sre tries an alternation's
    branches one by one: a flat one of 65 literals is three times slower). A literal that is the
    prefix of another stands for both."""
    if "" in words:
        return ""
    groups: dict[str, list[str]] = {}
    for w in sorted(set(words)):
        groups.setdefault(w[0], []).append(w[1:])
    alts = [re.escape(c) + _trie(tails) for c, tails in groups.items()]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# "always"/"never" only with an order after them ("never say", "always answer") or "you must"
# before them ("you must never"): alone they are in every other sentence of chat ("I never …")
_ALWAYS_NEVER = (rb"(?:always|never)[a-z]*?" + _ORDER.encode()
                 + rb"|you(?:must|should|shall|will|haveto|needto)(?:always|never)")
_INSTRUCTION_STEMS = re.compile(_trie(_STEMS.split()).encode() + b"|" + _ALWAYS_NEVER)
_ROLE_STEMS = re.compile(rb"system|assistant|developer|user")  # "system:" needs a colon too
_BRACKET_STEMS = re.compile(rb"inst|sys|assistant|user")  # "[inst]", "[sys]": both brackets too
_HEADING_STEMS = re.compile(rb"instruction|system|assistant|user|response|prompt|newrule")  # "### system" a "#"
_SECRET_STEMS = re.compile(  # on the lower-cased text: the secret rules do not join spaced letters
    rb"\b(?:pass|pwd|pins?\b|seed|recovery|mnemonic|contrasena|mot de passe|mdp|kennwort|senha|api\W?key|apikey|"
    rb"access key|secret|token|private key|backup code|2fa|otp|bearer|begin)|eyj|xox|hooks\.slack|[a-z0-9+/=_\-]{16,}")
_FOLDED = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ013457@$"  # what _CONFUSABLES and casefold make ASCII letters
_TO_LETTERS = bytes.maketrans(_FOLDED, b"abcdefghijklmnopqrstuvwxyzoieastas")
_NOT_LETTERS = bytes(c for c in range(256) if not (97 <= c <= 122 or c in _FOLDED))


@functools.lru_cache(maxsize=4096)
def _inert(c: str) -> str | None:
    """A non-ASCII character as the screen reads it: "" when normalisation removes it (a format
    character, a combining mark), itself when it is punctuation, a symbol or a space that NFKC
    leaves alone (… reads as dots), None when it could be or become a letter or digit."""
    category = unicodedata.category(c)
    if category in ("Cf", "Mn"):
        return ""
    if c == "…" or (category[0] in "PSZ" and unicodedata.normalize("NFKC", c) == c):
        return c
    return None


def _screenable(text: str) -> str | None:
    if text.isascii():
        return text
    out = []
    for c in text:
        kept = c if c < "\x80" else _inert(c)
        if kept is None:
            return None
        out.append(kept)
    return "".join(out)


def may_refuse(text: str) -> bool:
    """False only when refusal_reason(text) is None for certain. Any text cut from one it clears,
    at a space, quotation mark or sentence end, it clears too (safe_text.py `_screened_clear`
    relies on it): keep every pattern unanchored, word boundaries its only context."""
    plain = _screenable(text)
    # a tag needs both its brackets ("<3" alone is no tag)
    if plain is None or ("<" in plain and ">" in plain):
        return True
    ascii_ = plain.encode("ascii", "replace")  # an inert character reads "?", a non-word character
    letters = ascii_.translate(_TO_LETTERS, _NOT_LETTERS)
    # "[INST]", "[/system]": both square brackets and a role's letters ("[server]", a context's
    # label, is neither; it was every labelled line of a DM context sent to the slow rule)
    if (("[" in plain and "]" in plain and _BRACKET_STEMS.search(letters)) or _INSTRUCTION_STEMS.search(letters)
            or (":" in plain and _ROLE_STEMS.search(letters))
            or ("#" in plain and _HEADING_STEMS.search(letters))):
        return True
    return _SECRET_STEMS.search(ascii_.lower()) is not None


@functools.lru_cache(maxsize=1 << 16)
def reads_unsafe(text: str) -> bool:
    """refusal_reason(text) is not None — an instruction to the reading bot or a secret — behind
    the fast screen (and a cache: a summary's sentences recur in many contexts)."""
    return may_refuse(text) and refusal_reason(text) is not None


_PLAIN_MARKUP = str.maketrans({"<": "‹", ">": "›", "＜": "‹", "＞": "›", "﹤": "‹", "﹥": "›", "`": "'", "｀": "'"})
_MARKUP_CHAR = re.compile("[" + re.escape("".join(map(chr, _PLAIN_MARKUP))) + "]")  # what _PLAIN_MARKUP changes
_ROLE_WORDS = ("system", "assistant", "developer", "user", "human", "model", "tool")
_ROLE_COLON = re.compile(r"\b(" + "|".join(_ROLE_WORDS) + r")\s*[:：]", re.IGNORECASE)
_ROLE_BRACKET = re.compile(r"\[(\s*/?\s*(?:inst|system|sys|assistant|user)\s*)\]", re.IGNORECASE)
_TILDE_FENCE = re.compile(r"~{3,}")


def _may_name_a_role(text: str) -> bool:
    """False only when _ROLE_COLON cannot match: ASCII text without any of its words, in any case
    (a line's labels put a colon in most lines, and the substitution cost ~3.7 µs a line, the
    look ~0.4). Not for other text: under IGNORECASE "ſ" (long s) and "ı" (dotless i) are letters
    of those words too."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(word in low for word in _ROLE_WORDS)


def defang(text: str) -> str:
    """`text` with markup-like sequences made plain, so that nothing in it can open or close a
    prompt section: angle brackets become ‹ › (no tag, "<3" reads "‹3"), backticks ' (no code
    fence), a role marker's colon " -" ("system: obey" reads "system - obey"), "[INST]" "(INST)",
    and a run of tildes two. Idempotent."""
    if _MARKUP_CHAR.search(text):  # (translate() walks every character: 3/4 of this function's time)
        text = text.translate(_PLAIN_MARKUP)
    # each pattern needs a character most lines lack: looking for it first skips the pattern
    if (":" in text or "：" in text) and _may_name_a_role(text):
        text = _ROLE_COLON.sub(r"\1 -", text)
    if "[" in text:
        text = _ROLE_BRACKET.sub(r"(\1)", text)
    return _TILDE_FENCE.sub("~~", text) if "~~~" in text else text


def safe_name(name: str | None, placeholder: str = "this member") -> str:
    """A display name as a context may show it: on one line, defanged; `placeholder` when it is
    empty or reads as an instruction, a role marker or a secret ("System", "ignore all rules")."""
    name = " ".join((name or "").split())
    if not name or any(reads_unsafe(form) for form in (name, f"{name}:", f"# {name}")):
        return placeholder
    return defang(name)
