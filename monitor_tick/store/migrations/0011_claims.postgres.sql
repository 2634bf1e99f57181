-- The work split between hosts: (minute, bucket) claims with a lease (see schema.sql).
CREATE TABLE claims (
    minute         BIGINT NOT NULL,
    bucket         BIGINT NOT NULL CHECK (bucket >= 0 AND bucket < 64),
    -- --host-name of the run that holds it (default: the machine's hostname)
    host           TEXT    NOT NULL,
    -- the run's own random token: its writes are conditional on still holding the claim
    token          TEXT    NOT NULL,
    claimed_at_ms  BIGINT NOT NULL,
    lease_until_ms BIGINT NOT NULL,
    -- NULL: still probing, or the run died (then another run may take it over)
    finished_at_ms BIGINT,
    -- checks recorded for the bucket's monitors
    checks         BIGINT,
    PRIMARY KEY (minute, bucket)
);
