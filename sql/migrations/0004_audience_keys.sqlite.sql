-- Privacy hardening (SQLite): keys that keep audiences apart (ARCHITECTURE.md, "scope").

-- A message is (channel_id, message_id): ids are unique only within a channel (Telegram's are
-- per chat), and a reused id in another channel must never replace this one's text. SQLite
-- cannot change a primary key in place: the table is rebuilt, with the indexes the queries use.
CREATE TABLE chat_history_new (
    message_id  INTEGER NOT NULL,
    guild_id    INTEGER,
    channel_id  INTEGER NOT NULL,
    visibility  TEXT NOT NULL CHECK (visibility IN ('public', 'restricted', 'dm')),
    partition   TEXT NOT NULL,
    user_id     INTEGER NOT NULL,
    text        TEXT NOT NULL,
    ts          TEXT NOT NULL,
    reply_to    INTEGER,                        -- a message of the same channel
    edited_ts   TEXT,
    ingested_at TEXT NOT NULL,
    PRIMARY KEY (channel_id, message_id)
);
INSERT INTO chat_history_new (message_id, guild_id, channel_id, visibility, partition, user_id, text, ts,
                              reply_to, edited_ts, ingested_at)
SELECT message_id, guild_id, channel_id, visibility, partition, user_id, text, ts, reply_to, edited_ts, ingested_at
FROM chat_history;
DROP TABLE chat_history;
ALTER TABLE chat_history_new RENAME TO chat_history;
-- daily stage: one partition's messages in a UTC range (a local day)
CREATE INDEX chat_history_partition_ts ON chat_history (partition, ts);
-- retention and per-user lookups
CREATE INDEX chat_history_ts ON chat_history (ts);
CREATE INDEX chat_history_user_partition ON chat_history (user_id, partition);

-- A display name belongs to the partition it was seen in. A stored name was kept per guild (all
-- DMs shared one key), so where it came from is known only when the message it came from
-- (seen_at) is still there, in exactly one partition: those names move to that partition; the
-- others are dropped (a name from a restricted channel must not label the guild) and are learned
-- again from the next import of their partition.
CREATE TABLE members_new (
    partition    TEXT NOT NULL,
    user_id      INTEGER NOT NULL,
    display_name TEXT NOT NULL,
    seen_at      TEXT NOT NULL,                 -- ts of the message the name came from
    PRIMARY KEY (partition, user_id)
);
INSERT INTO members_new (partition, user_id, display_name, seen_at)
SELECT MIN(h.partition), m.user_id, m.display_name, m.seen_at
FROM members m JOIN chat_history h
  ON h.user_id = m.user_id AND h.ts = m.seen_at AND COALESCE(h.guild_id, 0) = m.guild_key
GROUP BY m.guild_key, m.user_id, m.display_name, m.seen_at
HAVING COUNT(DISTINCT h.partition) = 1;
DROP TABLE members;
ALTER TABLE members_new RENAME TO members;

-- A DM is one-to-one only when the input said so (JSONL is_group false, a DirectTextChat
-- export) and never that it is a group. Rows stored before could not tell "said one-to-one" from
-- "said nothing": they start as not one-to-one (fail closed) until an import says so again.
ALTER TABLE channels ADD COLUMN one_to_one INTEGER NOT NULL DEFAULT 0;
