-- Stable daily inputs (both dialects; issue 14, item 1): each message keeps its author's display
-- name as the import gave it at the time (cut to 64 characters; NULL when it had none), so that a
-- rename or a first post never changes how an earlier partition-day reads (ARCHITECTURE.md,
-- "names"). An edit keeps the original name. Existing rows take the name their author has in
-- that partition now: the best name known for them.
ALTER TABLE chat_history ADD COLUMN author_name TEXT;
UPDATE chat_history SET author_name = (
    SELECT m.display_name FROM members m
    WHERE m.partition = chat_history.partition AND m.user_id = chat_history.user_id);
