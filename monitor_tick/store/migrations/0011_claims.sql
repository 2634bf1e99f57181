-- The work split between hosts: (minute, bucket) claims with a lease (see schema.sql).
CREATE TABLE claims (
    minute         INTEGER NOT NULL,
    bucket         INTEGER NOT NULL CHECK (bucket >= 0 AND bucket < 64),
    -- --host-name of the run that holds it (default: the machine's hostname)
    host           TEXT    NOT NULL,
    -- the run's own random token: its writes are conditional on still holding the claim
    token          TEXT    NOT NULL,
    claimed_at_ms  INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    -- NULL: still probing, or the run died (then another run may take it over)
    finished_at_ms INTEGER,
    -- checks recorded for the bucket's monitors
    checks         INTEGER,
    PRIMARY KEY (minute, bucket)
) STRICT, WITHOUT ROWID;
