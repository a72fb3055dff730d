-- Names of erased users, as keys (pipeline/stages/erased.py): another member's message that typed
-- an erased user's name as plain text keeps it (other people's chat is theirs), so a run that
-- summarises that day again must not bring the name back. `erase` records, for each partition
-- where the user had a name, a sha256 of each significant word of their names (not the word; no
-- secret key: it hides the word from a reader, not from a guess) and when; the daily stage
-- reads such a word as "someone" in the partition's messages posted before then, and in what
-- the summarizer says of those partition-days.
CREATE TABLE erased_names (
    partition     TEXT NOT NULL,
    word_key      TEXT NOT NULL,
    erased_at     TEXT NOT NULL,
    PRIMARY KEY (partition, word_key)
);
