-- Which item recorded a batch request (pipeline/llm/batch.py; the refresh key of the item, e.g.
-- "daily:guild:1:2026-11-01"): a message deletion drops the requests of the partition-days it
-- changes — they quote the deleted text — and leaves the rest of a batch night in place
-- (dropping every request on each deletion meant a busy community's night never finished).
ALTER TABLE llm_batch_requests ADD COLUMN item_key TEXT;
CREATE INDEX llm_batch_requests_item ON llm_batch_requests (item_key);
