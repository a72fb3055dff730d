"""Secrets in text: which kind of secret a text carries (`secret_kind`, part of
pipeline/safety.py `refusal_reason`: a fact never stores one) and `redact` (errors, logs and stored
reasons never show one): secret token formats, a secret's value after its name, and every
registered value (the configured API key, registered by the Gemini client) become `[redacted]`.
Split from pipeline/safety.py, which re-exports these names."""

from __future__ import annotations

import math
import re
import unicodedata

REDACTED = "[redacted]"


def strip_marks(text: str) -> str:
    """NFKC, format characters (Cf) and accents (combining marks) removed."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text)
                   if unicodedata.category(c) not in ("Cf", "Mn"))
    return unicodedata.normalize("NFC", text)


# ------------------------------------------------------------------ secrets

# Token formats, case-sensitive, on NFKC text. Both refused in facts and redacted everywhere.
_TOKENS: list[tuple[str, re.Pattern]] = [(kind, re.compile(p)) for kind, p in [
    ("a private key", r"(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                      r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ("an API key", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{20,}|\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("a Google OAuth token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    ("a Slack token", r"\bxox[abposre]-[0-9A-Za-z\-]{10,}|hooks\.slack\.com/services/[A-Za-z0-9/]+"),
    ("an AWS access key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|AKPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}\b"),
    ("a JSON web token", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}"),
    ("a Discord token", r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}\b"),
    ("a Telegram bot token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"),
    ("a bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{20,}=*"),
]]
# Only redacted (in errors and logs): a secret's value after its name, keeping the name.
_NAMED_VALUES = [
    re.compile(r"(?i)(x-goog-api-key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]+"),
    re.compile(r"(?i)([?&](?:key|api_?key|access_token|token|password)=)[^&\s\"']+"),
    re.compile(r"(?i)(\b(?:api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|secret[_-]?key|password|passwd)"
               r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]{4,}"),
    re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+(?=@)"),  # a URL's password
]
# "password is hunter2" and the like: any value, except words that describe rather than give it.
_PASSWORD = re.compile(
    r"\b(?:password|passwd|pwd|passphrase|passcode|pin(?: code| number)?|seed phrase|recovery phrase|"
    r"mnemonic|contrasena|mot de passe|mdp|passwort|kennwort|senha|пароль)s?\b"
    r"(?:\s+(?:is|was|es|est|ist|e|era|это|will be)\b\s*|\s*[:=]\s*)[\"'«]?(?P<value>[^\s\"'»]+)")
_NOT_A_VALUE = frozenset(
    "in at on the a an not very too so long short strong weak secure safe stored saved kept written hidden "
    "different same changed reset expired easy hard his her their my our your its also still now never always "
    "managed unique random complicated simple something private confidential".split())
# "my API key is X", "token: X": a value that looks like a credential (has a digit, 6+ characters).
_NAMED_SECRET = re.compile(
    r"\b(?:api\W?key|apikey|access key|secret key|client secret|secret|token|access token|auth token|"
    r"private key|recovery code|backup code|2fa code|otp)s?\b(?:\s+(?:is|was)\b\s*|\s*[:=]\s*)[\"']?"
    r"(?P<value>(?=\S*\d)[^\s\"']{6,})")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")


# Letter runs that read like words (with a vowel, no four consonants in a row): names and
# identifiers are made of them ("MinecraftServer2024"), random keys hardly ever.
_WORDLIKE = re.compile(r"[A-Z][a-z]{2,}|[a-z]{4,}|[A-Z]{5,}")
_CLUSTER = re.compile(r"[^aeiouyAEIOUY]{4}")
_URL = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w-]+(?:\.[\w-]+)+/\S*")


def looks_random(token: str) -> bool:
    """A long string mixing letters and digits (or cases) that repeats few characters and is not
    made of words: random, like a key. Tuned on random base62/base64/hex strings (≥ 95% caught
    from 24 characters) against CamelCase names, usernames and URL paths."""
    if len(token) < 24:
        return False
    classes = {"d" if c.isdigit() else "u" if c.isupper() else "l" for c in token if c.isalnum()}
    if len(classes) < 2:
        return False
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in map(token.count, set(token)))
    words = sum(len(w) for w in _WORDLIKE.findall(token) if re.search("[aeiouyAEIOUY]", w) and not _CLUSTER.search(w))
    return entropy >= 3.0 and words / len(token) < 0.5


def secret_kind(text: str) -> str | None:
    """What kind of secret `text` carries, or None."""
    plain = unicodedata.normalize("NFKC", text)
    plain = "".join(c for c in plain if unicodedata.category(c) != "Cf")
    for kind, pattern in _TOKENS:
        if pattern.search(plain):
            return kind
    folded = strip_marks(plain).casefold()
    for m in _PASSWORD.finditer(folded):
        if m.group("value").strip(".,;:!?") not in _NOT_A_VALUE:
            return "a password"
    if _NAMED_SECRET.search(folded):
        return "a key or token"
    # links carry long ids (videos, playlists) that are not secrets; a key in a link's query
    # ("?key=AIza…") is still caught by the token formats above
    if any(looks_random(t) for t in _LONG_TOKEN.findall(_URL.sub(" ", plain))):
        return "a long random string, like a key"
    return None


# ------------------------------------------------------------------ redaction

_SECRET_VALUES: set[str] = set()
_MIN_SECRET = 6  # shorter values would redact ordinary words; no real key is that short


def register_secret(value: str | None) -> None:
    """Redact this exact value (e.g. the configured API key) wherever it appears from now on."""
    if value and len(value.strip()) >= _MIN_SECRET:
        _SECRET_VALUES.add(value.strip())


def redact(text: str, *values: str | None) -> str:
    """`text` with registered secret values, `values` and secret token formats replaced by
    `[redacted]`."""
    if not isinstance(text, str):
        text = str(text)
    for value in sorted(_SECRET_VALUES | {v.strip() for v in values if v and len(v.strip()) >= _MIN_SECRET},
                        key=len, reverse=True):
        text = text.replace(value, REDACTED)
    for _kind, pattern in _TOKENS:
        text = pattern.sub(REDACTED, text)
    for pattern in _NAMED_VALUES:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text
