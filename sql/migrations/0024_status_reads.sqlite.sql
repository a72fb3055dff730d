-- The status page and every metrics scrape (pipeline/web/metrics.py snapshot, store/ops.py) count
-- contexts by scope and day and count and list the degraded rows of four tables: with no index
-- for either, each scrape read every context and every summary whole (on SQLite, of the large
-- bench corpus's derived tables: ~320 ms a scrape, 200 of it the context ages). A covering index
-- answers the context ages from the index alone (a quarter of that corpus, 25,745 contexts: 108 ->
-- 3 ms), and a partial index per table holds only its degraded rows (rare): their count and the
-- newest of them are read from those rows alone. A context write adds one small index entry;
-- a row that is not degraded adds none to the partial ones. SQLAlchemy writes a boolean test as
-- `degraded = 1` on SQLite: the partial indexes say it the same way, as SQLite needs to use them.
CREATE INDEX memory_context_scope_day ON memory_context (scope, as_of_day);
CREATE INDEX partition_days_degraded ON partition_days (degraded_reason) WHERE degraded = 1;
CREATE INDEX historical_summaries_degraded ON historical_summaries (degraded_reason) WHERE degraded = 1;
CREATE INDEX memory_context_degraded ON memory_context (degraded_reason) WHERE degraded = 1;
CREATE INDEX daily_summaries_degraded ON daily_summaries (partition, day) WHERE degraded = 1;
