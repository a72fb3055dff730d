-- A fact write compares each new fact with the stored ones of its group: one user, one level,
-- one partition (pipeline/memory/dedup.py group_of). It reads them by (partition, user), which
-- this index answers directly; with only (user_id, status) and (partition) SQLite walked every
-- active fact of the user and dropped the other partitions' (issue 14: a model-backed nightly
-- run does one such read per partition-day). It replaces the (partition) index: a read by
-- partition alone uses its first column.
CREATE INDEX memory_facts_partition_user ON memory_facts (partition, user_id);
DROP INDEX memory_facts_partition;
