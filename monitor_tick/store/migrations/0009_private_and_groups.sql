-- The status page: private monitors (kept off the public page) and groups (its sections).
ALTER TABLE monitors ADD COLUMN private        INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1));
ALTER TABLE monitors ADD COLUMN group_name     TEXT;
