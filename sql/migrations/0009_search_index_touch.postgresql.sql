-- A fact said again (issue 14: nightly at 1M) moves its search item in place. Re-extraction
-- updates last_seen, confidence and sources of every fact a day restates; 0007's trigger deleted
-- and re-inserted the item (and its GIN entries) for each. Now an update that leaves the fact's
-- text, owner, partition, level and active status alone only moves the item's day and confidence.
CREATE OR REPLACE FUNCTION memory_items_from_fact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.status = 'active' AND OLD.status = 'active' AND NEW.text = OLD.text
            AND NEW.user_id = OLD.user_id AND NEW.partition IS NOT DISTINCT FROM OLD.partition
            AND NEW.level = OLD.level THEN
        IF NEW.last_seen IS DISTINCT FROM OLD.last_seen OR NEW.confidence IS DISTINCT FROM OLD.confidence THEN
            UPDATE memory_items SET day = NEW.last_seen, confidence = NEW.confidence WHERE fact_id = NEW.id;
        END IF;
        RETURN NULL;
    END IF;
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
