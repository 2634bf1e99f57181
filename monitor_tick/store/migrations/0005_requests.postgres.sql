-- Requests as real setups need them: methods beyond GET and HEAD (a changed CHECK: dropped and added again
-- under the name PostgreSQL gave it, no rebuild), then headers, basic auth, a body, a CA file
-- and --insecure as new columns at the end.
ALTER TABLE monitors DROP CONSTRAINT monitors_method_check;
ALTER TABLE monitors ADD CONSTRAINT monitors_method_check
    CHECK (method IN ('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'));
ALTER TABLE monitors ADD COLUMN headers        TEXT;
ALTER TABLE monitors ADD COLUMN basic_auth     TEXT;
ALTER TABLE monitors ADD COLUMN body           TEXT;
ALTER TABLE monitors ADD COLUMN ca_file        TEXT;
ALTER TABLE monitors ADD COLUMN insecure       BIGINT NOT NULL DEFAULT 0 CHECK (insecure IN (0, 1));
