"""Canned, valid answers built from mempipe's own prompts, for the fake Gemini server.

They quote what the prompt contains (unescaped), so tests can follow a canary sentence from
chat_history through every request to the context rows. Daily and fold answers carry facts the
way a model would state them (written here on their own, not with pipeline/memory/extract.py:
the fake stands for a model)."""

from __future__ import annotations

import html
import json
import re

MAX_FACTS = 5  # per speaker and request: a model lists what matters, not every sentence
# The one-line-per-item lists of prompts/daily.xml.j2, fold.xml.j2 and reduce.xml.j2
_SPEAKER = re.compile(r"^(p\d+): (.*)$")
_MESSAGE = re.compile(r'^(\d+) (p\d+)(?:>(p\d+|"[^"]*"))?: (.*)$')
_PARTIAL = re.compile(r"^- (.*)$")
_DAILY_TAG = re.compile(r'<daily date="[^"]*">(.*?)</daily>', re.DOTALL)
_FACT = re.compile(r'<fact n="(\d+)">(.*?)</fact>', re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_FIRST_PERSON = re.compile(r"^(i|i'm|i am|i've|i have|i'll|i will|i was|my)\b", re.IGNORECASE)
_FAVOURITE = re.compile(r"\bfavou?rite\b", re.IGNORECASE)
_LEADING = [(re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"^(i'm|i am)\b", "Is"), (r"^(i've|i have)\b", "Has"), (r"^(i'll|i will)\b", "Will"),
    (r"^i was\b", "Was"), (r"^i\b", ""))]


def _tag(prompt: str, name: str) -> str:
    m = re.search(rf"^<{name}>(.*?)</{name}>", prompt, re.DOTALL | re.MULTILINE)  # a data element opens a line
    return html.unescape(m.group(1)) if m else ""


def _value(text: str) -> str:
    """A value of a list line as it was before prompts.py escaped it."""
    return html.unescape(text.replace("\\n", "\n"))


def _lines(prompt: str, name: str) -> list[str]:
    m = re.search(rf"^<{name}>\n(.*?)^</{name}>", prompt, re.DOTALL | re.MULTILINE)
    return m.group(1).splitlines() if m else []


def speakers(prompt: str) -> list[tuple[str, str]]:
    """(handle, name) of every speaker of a daily or fold prompt."""
    return [(m.group(1), _value(m.group(2))) for m in map(_SPEAKER.match, _lines(prompt, "speakers")) if m]


def summary_lines(prompt: str) -> list[tuple[str, str]]:
    """(handle, running summary) of every line of a fold prompt's <summaries>."""
    return [(m.group(1), _value(m.group(2))) for m in map(_SPEAKER.match, _lines(prompt, "summaries")) if m]


def _folded(previous: str | None, new: str, limit: int = 280) -> str:
    """What a model's fold keeps: the new messages' gist, and as much of the running summary
    before it as the length target leaves (a fold adds to the day; it does not restart it)."""
    new = new[:limit // 2] if previous else new[:limit]
    if not previous:
        return new
    room = limit - len(new) - 3
    return (previous[:room] + " / " + new) if room > 0 else new


def message_lines(prompt: str) -> list[tuple[str, str, str | None, str]]:
    """(number, speaker handle, reply: a handle or a quoted name or None, text) of every message of
    a daily or fold prompt, in order."""
    return [(m.group(1), m.group(2), m.group(3), _value(m.group(4)))
            for m in map(_MESSAGE.match, _lines(prompt, "messages")) if m]


def partials(prompt: str) -> list[tuple[str, str, list[str]]]:
    """(handle, name, partial summaries) of every speaker of a reduce prompt."""
    out: list[tuple[str, str, list[str]]] = []
    for line in _lines(prompt, "partials"):
        if (p := _PARTIAL.match(line)) and out:
            out[-1][2].append(_value(p.group(1)))
        elif s := _SPEAKER.match(line):
            out.append((s.group(1), _value(s.group(2)), []))
    return out


def _fact_worthy(sentence: str) -> bool:
    """A first-person statement with a capitalised word (besides "I"), a number or a favourite."""
    if not _FIRST_PERSON.match(sentence):
        return False
    words = sentence.split()[1:]
    capitalised = any(w[:1].isupper() and re.sub(r"\W", "", w) not in ("I", "Im", "Ive", "Ill") for w in words)
    return capitalised or bool(re.search(r"\d", sentence)) or bool(_FAVOURITE.search(sentence))


def _third_person(sentence: str) -> str:
    """Crudely: a leading "I" dropped ("I'm" -> "Is", "I've" -> "Has"), "my" -> "their"; every
    other word kept, so the fact stays grounded in its message."""
    text = sentence.strip().rstrip(".!?")
    for pattern, repl in _LEADING:
        if pattern.match(text):
            text = pattern.sub(repl, text, count=1).strip()
            break
    text = re.sub(r"\bmy\b", "their", text, flags=re.IGNORECASE)
    return text[:1].upper() + text[1:]


def _facts(said: list[tuple[str, str]]) -> list[dict]:
    """The facts of one speaker's messages, (message number, text)."""
    out = []
    for handle, text in said:
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if not sentence or not _fact_worthy(sentence):
                continue
            favourite = bool(_FAVOURITE.search(sentence))
            key = re.search(r"\bmy favou?rite (\w+) is\b", sentence, re.IGNORECASE)
            out.append({
                "text": _third_person(sentence),
                "category": "preference" if favourite or re.search(r"\blove", sentence, re.IGNORECASE) else "other",
                "confidence": 0.95 if favourite else 0.8,
                "global_safe": favourite,
                "sources": [handle],
                "date": None,
                "key": f"favourite {key.group(1).lower()}" if key else None,
            })
    return [f for f in out if f["text"]][:MAX_FACTS]


def canned_answer(request) -> str:
    prompt = request.prompt_text
    if "<messages>" in prompt:  # daily (one chunk) or fold
        said: dict[str, list[tuple[str, str]]] = {}
        for number, speaker, _reply, text in message_lines(prompt):
            said.setdefault(speaker, []).append((number, text))  # a model cites the numbers it was shown
        running = dict(summary_lines(prompt))  # a fold's summaries so far
        out = [{"speaker": h, "summary": _folded(running.get(h), f"{name} said: " + " / ".join(t for _m, t in said.get(h, [])[:3])),
                "facts": _facts(said.get(h, []))}
               for h, name in speakers(prompt)]
        return json.dumps({"summaries": out})
    if "<partials>" in prompt:  # reduce
        out = [{"speaker": handle, "summary": " + ".join(parts)[:280]} for handle, _name, parts in partials(prompt)]
        return json.dumps({"summaries": out})
    if "<person " in prompt:  # historical
        texts = [html.unescape(t) for t in _DAILY_TAG.findall(prompt)]
        return json.dumps({"summary": "This week: " + " | ".join(texts)[:480]})
    if "<past_week>" in prompt:  # merge
        parts = [p for p in (_tag(prompt, "today"), _tag(prompt, "past_week")) if p]
        return json.dumps({"context": "\n".join(parts)[:1200]})
    if "<forget>" in prompt:  # forget
        fact = _tag(prompt, "forget").lower()
        return json.dumps({"forget": [int(n) for n, text in _FACT.findall(prompt)
                                      if fact and fact in html.unescape(text).lower()]})
    return json.dumps({"ok": True})
