-- The status page and every metrics scrape (pipeline/web/metrics.py snapshot, store/ops.py) count
-- contexts by scope and day and count and list the degraded rows of four tables: with no index
-- for either, each scrape read every context and every summary whole. A covering index answers
-- the context ages by an index-only scan once (auto)vacuum has marked the table's pages visible
-- (a quarter of the large bench corpus, 25,745 contexts: 30-88 ms -> 8 ms), and a partial index
-- per table holds only its degraded rows (rare): their count and the newest of them are read from
-- those rows alone. A context write adds one small index entry; a row that is not degraded adds
-- none to the partial ones.
CREATE INDEX memory_context_scope_day ON memory_context (scope, as_of_day);
CREATE INDEX partition_days_degraded ON partition_days (degraded_reason) WHERE degraded;
CREATE INDEX historical_summaries_degraded ON historical_summaries (degraded_reason) WHERE degraded;
CREATE INDEX memory_context_degraded ON memory_context (degraded_reason) WHERE degraded;
CREATE INDEX daily_summaries_degraded ON daily_summaries (partition, day) WHERE degraded;
