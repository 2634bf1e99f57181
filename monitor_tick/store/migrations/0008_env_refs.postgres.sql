-- `${VAR}` references of an applied monitors file, so that export writes them back (issue 13).
CREATE TABLE env_refs (
    target       TEXT PRIMARY KEY,
    template     TEXT NOT NULL,
    value_sha256 BYTEA NOT NULL CHECK (length(value_sha256) = 32)
);
