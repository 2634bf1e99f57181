-- Ledger rows claimed by a replay (--minute) are told from live ones: catch-up and the "not
-- running" figures count only from live ticks. Rows already stored cannot be told apart and stay
-- live, as they were counted before.
ALTER TABLE ticks ADD COLUMN replayed       BIGINT NOT NULL DEFAULT 0 CHECK (replayed IN (0, 1));
