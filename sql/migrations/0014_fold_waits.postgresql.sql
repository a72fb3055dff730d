-- The hourly refresh's fold rule (issue 14, cost; README, "mempipe serve"; pipeline/stages/daily.py
-- `_fold_waits`): today's partition-day whose only change is a few new messages waits for more
-- (fewer than refresh.fold_min_chars characters, the oldest younger than refresh.fold_max_wait_h
-- hours) — no request, its stored row kept. Counted per run as one more pass-through reason, so
-- the items still add up (0010, 0012):
--     partition_days + historical_items + context_items
--     = summarized + passed_* + errors + deferred
ALTER TABLE pipeline_runs ADD COLUMN passed_fold_waits INTEGER NOT NULL DEFAULT 0;
