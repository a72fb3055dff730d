-- An in-chat "remember" now stores its fact with the request's message as its source
-- ("<channel id>:<message id>", pipeline/stages/requests.py), so that deleting that message takes
-- the fact back; before, the source was "chat" and such a fact outlived its message. A fact
-- remembered before gets its message where one applied request alone can have made it: the same
-- user, partition and day (first_seen), its sources exactly ["chat"]. Where two requests of one
-- user in one partition on one day could each be it, it keeps "chat" (telling them apart would
-- be a guess).
UPDATE memory_facts f
SET sources = jsonb_build_array(r.channel_id::text || ':' || r.message_id::text)
FROM chat_requests r
WHERE f.origin = 'manual' AND f.sources = '["chat"]'::jsonb
  AND r.kind = 'remember' AND r.status = 'applied' AND r.user_id = f.user_id
  AND r.partition = f.partition AND r.day = f.first_seen
  AND (SELECT count(*) FROM chat_requests o
       WHERE o.kind = 'remember' AND o.status = 'applied' AND o.user_id = f.user_id
         AND o.partition = f.partition AND o.day = f.first_seen) = 1;
