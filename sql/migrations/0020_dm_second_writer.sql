-- A DM two people have written in is a group for good: since this migration every import marks
-- it (pipeline/store/ingest.py mark_group_dms), so retention, a deletion or an erase of the second
-- writer's messages never makes it one-to-one again. Mark the DMs stored before it.
UPDATE channels SET is_group = TRUE, one_to_one = FALSE
WHERE visibility = 'dm' AND NOT is_group AND EXISTS (
    SELECT 1 FROM chat_history a WHERE a.partition = channels.partition AND a.user_id <> (
        SELECT b.user_id FROM chat_history b WHERE b.partition = channels.partition LIMIT 1));
