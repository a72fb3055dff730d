"""An id refused as negative that reads as a Telegram Bot API supergroup or channel id (a bot
sees the chat as -100 and ten digits) says which id to use: the one Telegram Desktop's export
gives the chat, which mempipe keys it by. Other negative ids get no such hint."""

import pytest

from pipeline.errors import IdError
from pipeline.ids import parse_id


@pytest.mark.parametrize("value", [-1001824466019, "-1001824466019"])
def test_a_bot_api_chat_id_is_refused_with_the_id_to_use(value):
    with pytest.raises(IdError) as refused:
        parse_id(value, "channel_id")
    assert "Telegram Bot API" in str(refused.value) and "1824466019)" in str(refused.value)


@pytest.mark.parametrize("value", [-1, -5, "-42", -10018244660190, "-x"])
def test_other_bad_ids_get_no_telegram_hint(value):
    with pytest.raises(IdError) as refused:
        parse_id(value, "user_id")
    assert "Telegram" not in str(refused.value)
