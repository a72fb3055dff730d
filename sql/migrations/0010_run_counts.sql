-- Where each item of a run went (both dialects; issue 15): `mempipe run`, `replay` and `runs`
-- show why items made no model request, and their parts add up:
--   partition_days + historical_items + context_items
--     = summarized + passed_fits + passed_week_rendered + passed_recent_rendered + passed_no_recent
--       + passed_reused + passed_unchanged + errors
-- summarized: items a summarizer operation produced (the model's answer, its extractive fallback,
-- or the extractive summarizer). passed_*: no summarizer operation, by reason — the daily (or
-- fold) text already fits its length target; the past week rendered because it fits; the recent
-- part of a context rendered because it fits; a context with no summary to merge (its profile,
-- "Last active"); a historical row reused as the same input as an earlier day; unchanged since
-- the last run (a cache hit, or a context's stored recent part kept). planned_*: a dry run's
-- estimate of LLM requests and prompt tokens.
ALTER TABLE pipeline_runs ADD COLUMN historical_items INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN context_items INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN summarized INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN passed_fits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN passed_week_rendered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN passed_recent_rendered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN passed_no_recent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN passed_reused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN passed_unchanged INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN planned_llm_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pipeline_runs ADD COLUMN planned_prompt_tokens INTEGER NOT NULL DEFAULT 0;
