-- LLM accounting and retry budgets (both dialects).
-- attempts: how many times a row was computed while degraded, so a later run retries a degraded
-- row a bounded number of times instead of on every read or forever.
ALTER TABLE historical_summaries ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
ALTER TABLE historical_summaries ADD COLUMN degraded_reason TEXT;
ALTER TABLE memory_context ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
ALTER TABLE pipeline_runs ADD COLUMN llm_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN estimated_cost DOUBLE PRECISION NOT NULL DEFAULT 0;
