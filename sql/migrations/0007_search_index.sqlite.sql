-- The search index (SQLite): one row per searchable memory item, kept in step with the rows it
-- copies by triggers, so every write path — a run, a replay, remember / forget, clear / erase,
-- message deletion, retention — updates it in its own transaction, and a path added later cannot
-- forget to. ARCHITECTURE.md, "search", is the contract; pipeline/search reads it.
--
-- Items: each active fact (superseded ones are history, not memory), each non-empty daily
-- summary, and the newest historical summary of each (partition, user) — older ones are
-- overlapping folds of the same days. `level` is the fact's; a summary's is its partition's.
-- `day`: a fact's last_seen, a summary's day. `confidence`: facts only.
CREATE TABLE memory_items (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('fact', 'daily', 'historical')),
    user_id     INTEGER NOT NULL,
    partition   TEXT NOT NULL,
    level       TEXT NOT NULL CHECK (level IN ('dm', 'channel_restricted', 'guild_public', 'global')),
    day         TEXT NOT NULL,
    confidence  REAL,
    fact_id     INTEGER,
    body        TEXT NOT NULL
);
CREATE UNIQUE INDEX memory_items_fact ON memory_items (fact_id);
CREATE INDEX memory_items_owner ON memory_items (user_id, partition, kind, day);

-- FTS5 over the items (external content: the text is stored once, in memory_items). user_id is
-- indexed as a token so a query is restricted to one user inside the full-text engine (its
-- bm25 weight is 0); porter stems English, remove_diacritics folds "café" to "cafe".
CREATE VIRTUAL TABLE memory_items_fts USING fts5(
    user_id, body, content='memory_items', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memory_items_fts_insert AFTER INSERT ON memory_items BEGIN
    INSERT INTO memory_items_fts (rowid, user_id, body) VALUES (new.id, new.user_id, new.body);
END;
CREATE TRIGGER memory_items_fts_delete AFTER DELETE ON memory_items BEGIN
    INSERT INTO memory_items_fts (memory_items_fts, rowid, user_id, body) VALUES ('delete', old.id, old.user_id, old.body);
END;
CREATE TRIGGER memory_items_fts_update AFTER UPDATE ON memory_items BEGIN
    INSERT INTO memory_items_fts (memory_items_fts, rowid, user_id, body) VALUES ('delete', old.id, old.user_id, old.body);
    INSERT INTO memory_items_fts (rowid, user_id, body) VALUES (new.id, new.user_id, new.body);
END;

-- Facts: an active row is an item; superseding or deleting it removes the item.
CREATE TRIGGER memory_facts_index_insert AFTER INSERT ON memory_facts WHEN new.status = 'active' BEGIN
    INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
    VALUES ('fact', new.user_id, new.partition, new.level, new.last_seen, new.confidence, new.id, new.text);
END;
CREATE TRIGGER memory_facts_index_update AFTER UPDATE ON memory_facts BEGIN
    DELETE FROM memory_items WHERE fact_id = old.id;
    INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
    SELECT 'fact', new.user_id, new.partition, new.level, new.last_seen, new.confidence, new.id, new.text
    WHERE new.status = 'active';
END;
CREATE TRIGGER memory_facts_index_delete AFTER DELETE ON memory_facts BEGIN
    DELETE FROM memory_items WHERE fact_id = old.id;
END;

-- Daily summaries: one item per non-empty row.
CREATE TRIGGER daily_summaries_index_insert AFTER INSERT ON daily_summaries WHEN new.summary <> '' BEGIN
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    VALUES ('daily', new.user_id, new.partition,
            CASE WHEN new.partition LIKE 'guild:%' THEN 'guild_public'
                 WHEN new.partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
            new.day, new.summary);
END;
CREATE TRIGGER daily_summaries_index_update AFTER UPDATE ON daily_summaries BEGIN
    DELETE FROM memory_items
    WHERE kind = 'daily' AND user_id = old.user_id AND partition = old.partition AND day = old.day;
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'daily', new.user_id, new.partition,
           CASE WHEN new.partition LIKE 'guild:%' THEN 'guild_public'
                WHEN new.partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
           new.day, new.summary
    WHERE new.summary <> '';
END;
CREATE TRIGGER daily_summaries_index_delete AFTER DELETE ON daily_summaries BEGIN
    DELETE FROM memory_items
    WHERE kind = 'daily' AND user_id = old.user_id AND partition = old.partition AND day = old.day;
END;

-- Historical summaries: the newest row of each (partition, user) is the item (none when that row
-- is empty). A write or delete of an older row changes nothing; of the newest, re-picks it.
CREATE TRIGGER historical_summaries_index_insert AFTER INSERT ON historical_summaries
WHEN NOT EXISTS (SELECT 1 FROM historical_summaries h
                 WHERE h.user_id = new.user_id AND h.partition = new.partition AND h.day > new.day) BEGIN
    DELETE FROM memory_items WHERE kind = 'historical' AND user_id = new.user_id AND partition = new.partition;
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'historical', new.user_id, new.partition,
           CASE WHEN new.partition LIKE 'guild:%' THEN 'guild_public'
                WHEN new.partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
           new.day, new.summary
    WHERE new.summary <> '';
END;
CREATE TRIGGER historical_summaries_index_update AFTER UPDATE ON historical_summaries BEGIN
    DELETE FROM memory_items WHERE kind = 'historical' AND user_id IN (old.user_id, new.user_id)
                                   AND partition IN (old.partition, new.partition);
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'historical', h.user_id, h.partition,
           CASE WHEN h.partition LIKE 'guild:%' THEN 'guild_public'
                WHEN h.partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
           h.day, h.summary
    FROM historical_summaries h
    WHERE h.user_id IN (old.user_id, new.user_id) AND h.partition IN (old.partition, new.partition)
      AND h.summary <> ''
      AND NOT EXISTS (SELECT 1 FROM historical_summaries n
                      WHERE n.user_id = h.user_id AND n.partition = h.partition AND n.day > h.day);
END;
CREATE TRIGGER historical_summaries_index_delete AFTER DELETE ON historical_summaries
WHEN NOT EXISTS (SELECT 1 FROM historical_summaries h
                 WHERE h.user_id = old.user_id AND h.partition = old.partition AND h.day > old.day) BEGIN
    DELETE FROM memory_items WHERE kind = 'historical' AND user_id = old.user_id AND partition = old.partition;
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'historical', h.user_id, h.partition,
           CASE WHEN h.partition LIKE 'guild:%' THEN 'guild_public'
                WHEN h.partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
           h.day, h.summary
    FROM historical_summaries h
    WHERE h.user_id = old.user_id AND h.partition = old.partition AND h.summary <> ''
      AND NOT EXISTS (SELECT 1 FROM historical_summaries n
                      WHERE n.user_id = h.user_id AND n.partition = h.partition AND n.day > h.day);
END;

-- What is already stored.
INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
SELECT 'fact', user_id, partition, level, last_seen, confidence, id, text FROM memory_facts WHERE status = 'active';
INSERT INTO memory_items (kind, user_id, partition, level, day, body)
SELECT 'daily', user_id, partition,
       CASE WHEN partition LIKE 'guild:%' THEN 'guild_public'
            WHEN partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
       day, summary
FROM daily_summaries WHERE summary <> '';
INSERT INTO memory_items (kind, user_id, partition, level, day, body)
SELECT 'historical', h.user_id, h.partition,
       CASE WHEN h.partition LIKE 'guild:%' THEN 'guild_public'
            WHEN h.partition LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END,
       h.day, h.summary
FROM historical_summaries h
WHERE h.summary <> ''
  AND NOT EXISTS (SELECT 1 FROM historical_summaries n
                  WHERE n.user_id = h.user_id AND n.partition = h.partition AND n.day > h.day);
