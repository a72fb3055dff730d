-- A search by a user who has forgotten a fact reads their display names (pipeline/search/forgotten.py,
-- query search_member_names), and a merge group reads its users' names (member_names): both by
-- user_id, which the key (partition, user_id) cannot answer — every row of members was read. At
-- the large bench corpus's size (~104,000 members) that was 3.35 ms a search on SQLite, against
-- 0.008 ms with this index (a search's p50 is ~0.5 ms).
CREATE INDEX members_user ON members (user_id);
