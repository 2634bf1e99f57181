-- A forced rerun (--force) records only what the minute's run did not: keep those ids.
ALTER TABLE ticks ADD COLUMN unrecorded_ids TEXT;
