-- An in-chat "remember" now stores its fact with the request's message as its source
-- ("<channel id>:<message id>", pipeline/stages/requests.py), so that deleting that message takes
-- the fact back; before, the source was "chat" and such a fact outlived its message. A fact
-- remembered before gets its message where one applied request alone can have made it: the same
-- user, partition and day (first_seen), its sources exactly ["chat"], and no other such fact of
-- that user, partition and day. Where two requests, or two facts, could each be the one, it keeps
-- "chat" (telling them apart would be a guess).
UPDATE memory_facts f
SET sources = jsonb_build_array(r.channel_id::text || ':' || r.message_id::text)
FROM chat_requests r
WHERE f.origin = 'manual' AND f.sources = '["chat"]'::jsonb
  AND r.kind = 'remember' AND r.status = 'applied' AND r.user_id = f.user_id
  AND r.partition = f.partition AND r.day = f.first_seen
  AND (SELECT count(*) FROM chat_requests o
       WHERE o.kind = 'remember' AND o.status = 'applied' AND o.user_id = f.user_id
         AND o.partition = f.partition AND o.day = f.first_seen) = 1
  AND (SELECT count(*) FROM memory_facts o
       WHERE o.origin = 'manual' AND o.user_id = f.user_id AND o.partition = f.partition
         AND o.first_seen = f.first_seen AND o.sources = '["chat"]'::jsonb) = 1;
