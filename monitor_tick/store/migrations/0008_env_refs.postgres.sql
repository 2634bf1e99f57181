-- `${VAR}` references of an applied monitors file, so that export writes them back
-- and no secret is written into the file.
CREATE TABLE env_refs (
    target       TEXT PRIMARY KEY,
    template     TEXT NOT NULL,
    value_sha256 BYTEA NOT NULL CHECK (length(value_sha256) = 32)
);
