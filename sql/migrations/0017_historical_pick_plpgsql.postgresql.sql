-- The historical search item is re-picked by PL/pgSQL (issue 14: nightly at 1M). 0007 wrote
-- memory_items_pick_historical in LANGUAGE sql, which PostgreSQL (15) parses and plans again at
-- every call: the trigger calls it for each historical row stored, and an upsert of 6,000
-- historical rows cost 358-373 µs a row. PL/pgSQL keeps its statements' plans for the session:
-- 141-175 µs a row, the same rows. The body is unchanged. SQLite's triggers are inline SQL and
-- need nothing here.
CREATE OR REPLACE FUNCTION memory_items_pick_historical(u bigint, p text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_items WHERE kind = 'historical' AND user_id = u AND partition = p;
    INSERT INTO memory_items (kind, user_id, partition, level, day, body)
    SELECT 'historical', h.user_id, h.partition, mempipe_partition_level(h.partition), h.day, h.summary
    FROM (SELECT * FROM historical_summaries WHERE user_id = u AND partition = p ORDER BY day DESC LIMIT 1) h
    WHERE h.summary <> '';
END
$$;
