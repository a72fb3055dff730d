-- A fact said again (issue 14: nightly at 1M) moves its search item in place. Re-extraction
-- updates last_seen, confidence and sources of every fact a day restates (152,440 such updates in
-- one day of 15 guilds at 1M messages); 0007's trigger deleted and re-inserted the item for each,
-- and every item write rewrote its full-text entry. Now an update that leaves the fact's text,
-- owner, partition, level and active status alone only moves the item's day and confidence, and
-- the full-text entry changes only when an indexed column (user_id, body) does.
DROP TRIGGER memory_facts_index_update;
CREATE TRIGGER memory_facts_index_update AFTER UPDATE ON memory_facts
WHEN NOT (new.status = 'active' AND old.status = 'active' AND new.text = old.text AND new.user_id = old.user_id
          AND new.partition IS old.partition AND new.level = old.level) BEGIN
    DELETE FROM memory_items WHERE fact_id = old.id;
    INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
    SELECT 'fact', new.user_id, new.partition, new.level, new.last_seen, new.confidence, new.id, new.text
    WHERE new.status = 'active';
END;
CREATE TRIGGER memory_facts_index_touch AFTER UPDATE OF last_seen, confidence ON memory_facts
WHEN new.status = 'active' AND old.status = 'active' AND new.text = old.text AND new.user_id = old.user_id
     AND new.partition IS old.partition AND new.level = old.level BEGIN
    UPDATE memory_items SET day = new.last_seen, confidence = new.confidence WHERE fact_id = new.id;
END;
DROP TRIGGER memory_items_fts_update;
CREATE TRIGGER memory_items_fts_update AFTER UPDATE OF user_id, body ON memory_items BEGIN
    INSERT INTO memory_items_fts (memory_items_fts, rowid, user_id, body) VALUES ('delete', old.id, old.user_id, old.body);
    INSERT INTO memory_items_fts (rowid, user_id, body) VALUES (new.id, new.user_id, new.body);
END;
