"""`mempipe import` on Telegram Desktop exports (both databases, through the CLI in-process): the
counts by reason in `--json` and in the summary line, detection by the file's keys, the
Telegram options, and located errors."""

from __future__ import annotations

import json

from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "telegram"
GROUP, PERSONAL = FIXTURES / "group-result.json", FIXTURES / "personal-chat-result.json"
CHAT, BOT = 1824466019, 8000000001
SKIPPED = {"bot's own message": 1, "forwarded": 1, "service message": 2}


def test_import_format_telegram_json_counts_by_reason(mp):
    result = mp("import", "--format", "telegram", "--bot-user-id", str(BOT), str(GROUP), str(PERSONAL), "--json")
    counts = json.loads(result.stdout)
    assert counts == {"read": 13, "new": 9, "edited": 0, "unchanged": 0, "skipped": 4, "skipped_by": SKIPPED,
                      "cut": 0, "deletions": 0, "deleted": 0, "not_found": 0}
    again = mp("import", "--bot-user-id", str(BOT), str(GROUP), str(PERSONAL)).stdout  # detected by its keys
    assert again.startswith("read 13 messages: 0 new, 0 edited, 9 unchanged (already stored); skipped 4 "
                            "(bot's own message: 1, forwarded: 1, service message: 2)")


def test_telegram_options(mp, tmp_path):
    channel = tmp_path / "channel.json"
    channel.write_text(json.dumps({"name": "News", "type": "public_channel", "id": 1700000001, "messages": [
        {"id": 1, "type": "message", "date_unixtime": "1793613600", "from": "News", "from_id": "channel1700000001",
         "text": "Doors open at ten"}]}), encoding="utf-8")
    counts = json.loads(mp("import", "--json", "--restricted-chat", str(CHAT), str(GROUP), str(channel)).stdout)
    assert (counts["new"], counts["skipped_by"]) == (7, {"channel": 1, "forwarded": 1, "service message": 2})
    counts = json.loads(mp("import", "--json", "--include-channels", str(channel)).stdout)
    assert counts["new"] == 1
    # a restricted chat that is no group of the import: refused, nothing written (a typo, a Bot API id)
    typo = mp("import", "--restricted-chat", str(CHAT + 1), str(GROUP), ok=False)
    assert typo.exit_code == 1 and f"--restricted-chat: {CHAT + 1}: matches no group or channel" in typo.output
    bot_api = mp("import", "--restricted-chat", f"-100{CHAT}", str(GROUP), ok=False)
    assert bot_api.exit_code == 2 and f"a Bot API chat id? pass the id Telegram Desktop writes: {CHAT}" in bot_api.output
    # a bot id in no chat: imported, with a warning
    warned = mp("import", "--json", "--bot-user-id", "42", str(channel))
    assert json.loads(warned.stdout)["warnings"] == ["--bot-user-id 42 is in no chat of this import"]
    bad = mp("import", "--bot-user-id", "memobot", str(PERSONAL), ok=False)
    assert bad.exit_code == 2 and "'memobot' is not a user id" in bad.output
    # the group is stored restricted: importing it as public is refused, naming the message
    refused = mp("import", str(GROUP), ok=False)
    assert refused.exit_code == 1
    assert f"Error: {GROUP}: chat {CHAT} message 2: channel {CHAT} is stored as restricted" in refused.output


def test_located_errors(mp, tmp_path):
    doc = json.loads(GROUP.read_text(encoding="utf-8"))
    doc["messages"][2]["from_id"] = "6021337410"
    bad = tmp_path / "result.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    result = mp("import", str(bad), ok=False)
    assert result.exit_code == 1
    assert f'Error: {bad}: chat {CHAT} message 3: from_id: expected "user" followed by the user id' in result.output
    forced = mp("import", "--format", "discord", str(GROUP), ok=False)
    assert "a Telegram Desktop export, not a DiscordChatExporter one: pass --format telegram" in forced.output
    # nothing of the above was written: every message of the group is new
    assert json.loads(mp("import", "--json", str(GROUP)).stdout)["new"] == 7
