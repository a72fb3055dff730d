-- New facts, daily summaries and historical summaries reach the search index (memory_items) one
-- statement per INSERT or COPY instead of one per row (issue 14: nightly at 1M on PostgreSQL). 0007's row triggers ran
-- their INSERT INTO memory_items once per stored row: a nightly run's COPY of facts and of daily
-- summaries each paid a PL/pgSQL call and an executor start per row. An AFTER INSERT trigger FOR
-- EACH STATEMENT reads the statement's new rows from its transition table and indexes them in one
-- INSERT … SELECT: 92,000 fact rows copied in batches of 2,500 took 1.78-1.82 s instead of
-- 2.17-2.52 s. Updates and deletes keep the row triggers (their functions are unchanged: for them
-- TG_OP is never INSERT now). Transition tables allow one event per trigger, hence the split.
-- Facts' and dailies' items are made in the order the rows were written (ids as the row triggers
-- gave them). New historical rows: each (partition, user) they touch has its item picked again —
-- its newest row's, as memory_items_pick_historical picks it — in one DELETE and one INSERT for the
-- statement (an upsert's updated rows go through the row trigger as before). SQLite's triggers are
-- inline SQL, already cheap per row: nothing changes there.

CREATE FUNCTION memory_items_from_new_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_items (kind, user_id, partition, level, day, confidence, fact_id, body)
    SELECT 'fact', n.user_id, n.partition, n.level, n.last_seen, n.confidence, n.id, n.text
    FROM new_facts n WHERE n.status = 'active' ORDER BY n.id;
    RETURN NULL;
END
$$;

CREATE FUNCTION memory_items_from_new_dailies() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'daily', n.user_id, n.partition, mempipe_partition_level(n.partition), n.day, n.summary
    FROM new_dailies n WHERE n.summary <> '';
    RETURN NULL;
END
$$;

CREATE FUNCTION memory_items_from_new_historicals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_items m USING (SELECT DISTINCT user_id, partition FROM new_historicals) k
    WHERE m.kind = 'historical' AND m.user_id = k.user_id AND m.partition = k.partition;
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'historical', h.user_id, h.partition, mempipe_partition_level(h.partition), h.day, h.summary
    FROM (SELECT DISTINCT ON (s.user_id, s.partition) s.user_id, s.partition, s.day, s.summary
          FROM historical_summaries s JOIN (SELECT DISTINCT user_id, partition FROM new_historicals) k
               ON s.user_id = k.user_id AND s.partition = k.partition
          ORDER BY s.user_id, s.partition, s.day DESC) h
    WHERE h.summary <> ''
    ORDER BY h.user_id, h.partition;
    RETURN NULL;
END
$$;

DROP TRIGGER memory_facts_index ON memory_facts;
CREATE TRIGGER memory_facts_index AFTER DELETE OR UPDATE ON memory_facts
    FOR EACH ROW EXECUTE FUNCTION memory_items_from_fact();
CREATE TRIGGER memory_facts_index_insert AFTER INSERT ON memory_facts
    REFERENCING NEW TABLE AS new_facts FOR EACH STATEMENT EXECUTE FUNCTION memory_items_from_new_facts();

DROP TRIGGER daily_summaries_index ON daily_summaries;
CREATE TRIGGER daily_summaries_index AFTER DELETE OR UPDATE ON daily_summaries
    FOR EACH ROW EXECUTE FUNCTION memory_items_from_daily();
CREATE TRIGGER daily_summaries_index_insert AFTER INSERT ON daily_summaries
    REFERENCING NEW TABLE AS new_dailies FOR EACH STATEMENT EXECUTE FUNCTION memory_items_from_new_dailies();

DROP TRIGGER historical_summaries_index ON historical_summaries;
CREATE TRIGGER historical_summaries_index AFTER DELETE OR UPDATE ON historical_summaries
    FOR EACH ROW EXECUTE FUNCTION memory_items_from_historical();
CREATE TRIGGER historical_summaries_index_insert AFTER INSERT ON historical_summaries
    REFERENCING NEW TABLE AS new_historicals FOR EACH STATEMENT EXECUTE FUNCTION memory_items_from_new_historicals();
