-- A DM whose context was made while it was one-to-one reads its writer's rows from every partition
-- they posted in (restricted channels, other DMs); once a second person writes in it, or an input
-- says it is a group, its audience is everyone in it — and a bot reads its stored context by key
-- (sql/queries.sql get_context), asking nothing about the audience. So the moment a DM stops
-- being one-to-one (pipeline/store/ingest.py write_channels, mark_group_dms, or any other UPDATE),
-- its contexts and profiles (their scope is the DM's partition) go, in that same transaction: the
-- next run makes them again from the DM alone. (A run under way when it happens does not write
-- the ones it made as one-to-one: pipeline/store/derived.py write_batch, `wider`.)
CREATE TRIGGER channels_dm_narrowed AFTER UPDATE OF is_group, one_to_one ON channels
WHEN NEW.visibility = 'dm' AND OLD.one_to_one AND NOT OLD.is_group AND (NEW.is_group OR NOT NEW.one_to_one)
BEGIN
    DELETE FROM memory_context WHERE scope = NEW.partition;
    DELETE FROM memory_profiles WHERE scope = NEW.partition;
END;
