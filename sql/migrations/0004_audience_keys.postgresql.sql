-- Privacy hardening (PostgreSQL): keys that keep audiences apart (ARCHITECTURE.md, "scope").

-- A message is (channel_id, message_id): ids are unique only within a channel (Telegram's are
-- per chat), and a reused id in another channel must never replace this one's text.
ALTER TABLE chat_history DROP CONSTRAINT chat_history_pkey;
ALTER TABLE chat_history ADD CONSTRAINT chat_history_pkey PRIMARY KEY (channel_id, message_id);

-- A display name belongs to the partition it was seen in. A stored name was kept per guild (all
-- DMs shared one key), so where it came from is known only when the message it came from
-- (seen_at) is still there, in exactly one partition: those names move to that partition; the
-- others are dropped (a name from a restricted channel must not label the guild) and are learned
-- again from the next import of their partition.
CREATE TABLE members_new (
    partition    TEXT NOT NULL,
    user_id      BIGINT NOT NULL,
    display_name TEXT NOT NULL,
    seen_at      TIMESTAMPTZ NOT NULL,          -- ts of the message the name came from
    CONSTRAINT members_new_pkey PRIMARY KEY (partition, user_id)
);
INSERT INTO members_new (partition, user_id, display_name, seen_at)
SELECT MIN(h.partition), m.user_id, m.display_name, m.seen_at
FROM members m JOIN chat_history h
  ON h.user_id = m.user_id AND h.ts = m.seen_at AND COALESCE(h.guild_id, 0) = m.guild_key
GROUP BY m.guild_key, m.user_id, m.display_name, m.seen_at
HAVING COUNT(DISTINCT h.partition) = 1;
DROP TABLE members;
ALTER TABLE members_new RENAME TO members;
ALTER TABLE members RENAME CONSTRAINT members_new_pkey TO members_pkey;

-- A DM is one-to-one only when the input said so (JSONL is_group false, a DirectTextChat
-- export) and never that it is a group. Rows stored before could not tell "said one-to-one" from
-- "said nothing": they start as not one-to-one (fail closed) until an import says so again.
ALTER TABLE channels ADD COLUMN one_to_one BOOLEAN NOT NULL DEFAULT FALSE;
