"""Canned, valid answers built from mempipe's own prompts, for the fake Gemini server.

They quote what the prompt contains (unescaped), so tests can follow a canary sentence from
chat_history through every request to the context rows."""

from __future__ import annotations

import html
import json
import re

_SPEAKER = re.compile(r'<speaker handle="(p\d+)">([^<]*)</speaker>')
_REDUCE_SPEAKER = re.compile(r'<speaker handle="(p\d+)" name="([^"]*)">(.*?)</speaker>', re.DOTALL)
_MESSAGE = re.compile(r'<m [^>]*\bs="(p\d+)"[^>]*>(.*?)</m>', re.DOTALL)
_PARTIAL = re.compile(r"<partial>(.*?)</partial>", re.DOTALL)
_DAILY_TAG = re.compile(r'<daily date="[^"]*">(.*?)</daily>', re.DOTALL)


def _tag(prompt: str, name: str) -> str:
    m = re.search(rf"<{name}>(.*?)</{name}>", prompt, re.DOTALL)
    return html.unescape(m.group(1)) if m else ""


def canned_answer(request) -> str:
    prompt = request.prompt_text
    if "<messages>" in prompt:  # daily (one chunk)
        said: dict[str, list[str]] = {}
        for handle, text in _MESSAGE.findall(prompt):
            said.setdefault(handle, []).append(html.unescape(text))
        out = [{"speaker": h, "summary": f"{html.unescape(name)} said: " + " / ".join(said.get(h, [])[:3])[:280]}
               for h, name in _SPEAKER.findall(prompt)]
        return json.dumps({"summaries": out})
    if "<partial>" in prompt:  # reduce
        out = []
        for handle, _name, body in _REDUCE_SPEAKER.findall(prompt):
            parts = [html.unescape(p) for p in _PARTIAL.findall(body)]
            out.append({"speaker": handle, "summary": " + ".join(parts)[:280]})
        return json.dumps({"summaries": out})
    if "<person " in prompt:  # historical
        texts = [html.unescape(t) for t in _DAILY_TAG.findall(prompt)]
        return json.dumps({"summary": "This week: " + " | ".join(texts)[:480]})
    if "<past_week>" in prompt:  # merge
        parts = [p for p in (_tag(prompt, "facts"), _tag(prompt, "today"), _tag(prompt, "past_week")) if p]
        return json.dumps({"context": "\n".join(parts)[:1200]})
    if "<new_fact>" in prompt:  # remember
        facts = [f for f in _tag(prompt, "facts").splitlines() if f.strip()] + [_tag(prompt, "new_fact")]
        return json.dumps({"facts": "\n".join(facts)})
    if "<forget>" in prompt:  # forget
        fact = _tag(prompt, "forget").lower()
        lines = [f for f in _tag(prompt, "facts").splitlines() if f.strip()]
        kept = [f for f in lines if fact not in f.lower()]
        return json.dumps({"facts": "\n".join(kept), "found": len(kept) != len(lines)})
    return json.dumps({"ok": True})
