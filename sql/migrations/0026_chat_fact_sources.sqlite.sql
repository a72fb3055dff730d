-- An in-chat "remember" now stores its fact with the request's message as its source
-- ("<channel id>:<message id>", pipeline/stages/requests.py), so that deleting that message takes
-- the fact back; before, the source was "chat" and such a fact outlived its message. A fact
-- remembered before gets its message where one applied request alone can have made it: the same
-- user, partition and day (first_seen), its sources exactly ["chat"], and no other such fact of
-- that user, partition and day. Where two requests, or two facts, could each be the one, it keeps
-- "chat" (telling them apart would be a guess).
UPDATE memory_facts
SET sources = (
    SELECT json_array(r.channel_id || ':' || r.message_id) FROM chat_requests r
    WHERE r.kind = 'remember' AND r.status = 'applied' AND r.user_id = memory_facts.user_id
      AND r.partition = memory_facts.partition AND r.day = memory_facts.first_seen)
WHERE origin = 'manual' AND json_valid(sources) AND json_array_length(sources) = 1
  AND json_extract(sources, '$[0]') = 'chat'
  AND (SELECT count(*) FROM chat_requests r
       WHERE r.kind = 'remember' AND r.status = 'applied' AND r.user_id = memory_facts.user_id
         AND r.partition = memory_facts.partition AND r.day = memory_facts.first_seen) = 1
  AND (SELECT count(*) FROM memory_facts o
       WHERE o.origin = 'manual' AND o.user_id = memory_facts.user_id AND o.partition = memory_facts.partition
         AND o.first_seen = memory_facts.first_seen AND json_valid(o.sources) AND json_array_length(o.sources) = 1
         AND json_extract(o.sources, '$[0]') = 'chat') = 1;
