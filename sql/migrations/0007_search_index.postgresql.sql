-- The search index (PostgreSQL): one row per searchable memory item, kept in step with the rows
-- it copies by triggers, so every write path — a run, a replay, remember / forget, clear / erase,
-- message deletion, retention — updates it in its own transaction, and a path added later cannot
-- forget to. ARCHITECTURE.md, "search", is the contract; pipeline/search reads it.
--
-- Items: each active fact (superseded ones are history, not memory), each non-empty daily
-- summary, and the newest historical summary of each (partition, user) — older ones are
-- overlapping folds of the same days. `level` is the fact's; a summary's is its partition's.
-- `day`: a fact's last_seen, a summary's day. `confidence`: facts only. `terms`: the body's
-- lexemes ('english': stemmed, stop words dropped), GIN-indexed.
CREATE TABLE memory_items (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('fact', 'daily', 'historical')),
    user_id     bigint NOT NULL,
    partition   text NOT NULL,
    level       text NOT NULL CHECK (level IN ('dm', 'channel_restricted', 'guild_public', 'global')),
    day         date NOT NULL,
    confidence  double precision,
    fact_id     bigint,
    body        text NOT NULL,
    terms       tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, body)) STORED
);
CREATE UNIQUE INDEX memory_items_fact ON memory_items (fact_id);
CREATE INDEX memory_items_owner ON memory_items (user_id, partition, kind, day);
CREATE INDEX memory_items_terms ON memory_items USING gin (terms);

-- A summary's level is its partition's.
CREATE FUNCTION mempipe_partition_level(p text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p LIKE 'guild:%' THEN 'guild_public'
                WHEN p LIKE 'channel:%' THEN 'channel_restricted' ELSE 'dm' END
$$;

-- Facts: an active row is an item; superseding or deleting it removes the item.
CREATE FUNCTION memory_items_from_fact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM memory_items WHERE fact_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.status = 'active' THEN
        INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
        VALUES ('fact', NEW.user_id, NEW.partition, NEW.level, NEW.last_seen, NEW.confidence, NEW.id, NEW.text);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_facts_index AFTER INSERT OR UPDATE OR DELETE ON memory_facts
    FOR EACH ROW EXECUTE FUNCTION memory_items_from_fact();

-- Daily summaries: one item per non-empty row.
CREATE FUNCTION memory_items_from_daily() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM memory_items
        WHERE kind = 'daily' AND user_id = OLD.user_id AND partition = OLD.partition AND day = OLD.day;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.summary <> '' THEN
        INSERT INTO memory_items (kind, user_id, partition, level, day, body)
        VALUES ('daily', NEW.user_id, NEW.partition, mempipe_partition_level(NEW.partition), NEW.day, NEW.summary);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER daily_summaries_index AFTER INSERT OR UPDATE OR DELETE ON daily_summaries
    FOR EACH ROW EXECUTE FUNCTION memory_items_from_daily();

-- Historical summaries: the newest row of each (partition, user) is the item (none when that row
-- is empty). A write or delete of an older row changes nothing; of the newest, re-picks it.
CREATE FUNCTION memory_items_pick_historical(u bigint, p text) RETURNS void LANGUAGE sql AS $$
    DELETE FROM memory_items WHERE kind = 'historical' AND user_id = u AND partition = p;
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'historical', h.user_id, h.partition, mempipe_partition_level(h.partition), h.day, h.summary
    FROM (SELECT * FROM historical_summaries WHERE user_id = u AND partition = p ORDER BY day DESC LIMIT 1) h
    WHERE h.summary <> '';
$$;
CREATE FUNCTION memory_items_from_historical() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (TG_OP = 'DELETE' OR OLD.user_id <> NEW.user_id OR OLD.partition <> NEW.partition) AND NOT EXISTS (
        SELECT 1 FROM historical_summaries
        WHERE user_id = OLD.user_id AND partition = OLD.partition AND day > OLD.day) THEN
        PERFORM memory_items_pick_historical(OLD.user_id, OLD.partition);
    END IF;
    IF TG_OP <> 'DELETE' AND NOT EXISTS (
        SELECT 1 FROM historical_summaries
        WHERE user_id = NEW.user_id AND partition = NEW.partition AND day > NEW.day) THEN
        PERFORM memory_items_pick_historical(NEW.user_id, NEW.partition);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER historical_summaries_index AFTER INSERT OR UPDATE OR DELETE ON historical_summaries
    FOR EACH ROW EXECUTE FUNCTION memory_items_from_historical();

-- What is already stored.
INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
SELECT 'fact', user_id, partition, level, last_seen, confidence, id, text FROM memory_facts WHERE status = 'active';
INSERT INTO memory_items (kind, user_id, partition, level, day, body)
SELECT 'daily', user_id, partition, mempipe_partition_level(partition), day, summary
FROM daily_summaries WHERE summary <> '';
INSERT INTO memory_items (kind, user_id, partition, level, day, body)
SELECT 'historical', h.user_id, h.partition, mempipe_partition_level(h.partition), h.day, h.summary
FROM historical_summaries h
WHERE h.summary <> ''
  AND NOT EXISTS (SELECT 1 FROM historical_summaries n
                  WHERE n.user_id = h.user_id AND n.partition = h.partition AND n.day > h.day);
