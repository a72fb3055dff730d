-- An in-chat "remember" now stores its fact with the request's message as its source
-- ("<channel id>:<message id>", pipeline/stages/requests.py), so that deleting that message takes
-- the fact back; before, the source was "chat" and such a fact outlived its message. A fact
-- remembered before gets its message where one applied request alone can have made it: the same
-- user, partition and day (first_seen), its sources exactly ["chat"]. Where two requests of one
-- user in one partition on one day could each be it, it keeps "chat" (telling them apart would
-- be a guess).
UPDATE memory_facts
SET sources = (
    SELECT json_array(r.channel_id || ':' || r.message_id) FROM chat_requests r
    WHERE r.kind = 'remember' AND r.status = 'applied' AND r.user_id = memory_facts.user_id
      AND r.partition = memory_facts.partition AND r.day = memory_facts.first_seen)
WHERE origin = 'manual' AND json_valid(sources) AND json_array_length(sources) = 1
  AND json_extract(sources, '$[0]') = 'chat'
  AND (SELECT count(*) FROM chat_requests r
       WHERE r.kind = 'remember' AND r.status = 'applied' AND r.user_id = memory_facts.user_id
         AND r.partition = memory_facts.partition AND r.day = memory_facts.first_seen) = 1;
