-- Several locations (see schema.sql's step 17): existing monitors have no locations.
ALTER TABLE monitors ADD COLUMN locations      TEXT;
ALTER TABLE monitors ADD COLUMN quorum         BIGINT CHECK (quorum IS NULL OR quorum >= 1);
ALTER TABLE monitors ADD COLUMN notify_partial BIGINT NOT NULL DEFAULT 0 CHECK (notify_partial IN (0, 1));
ALTER TABLE incidents ADD COLUMN kind           TEXT NOT NULL DEFAULT 'down' CHECK (kind IN ('down', 'partial'));

-- Several locations (step 17; see schema.sql).
CREATE TABLE fleet_hosts (
    host         TEXT   PRIMARY KEY,
    location     TEXT   NOT NULL,
    last_minute  BIGINT NOT NULL,
    seen_at_ms   BIGINT NOT NULL,
    network_lost BIGINT NOT NULL DEFAULT 0 CHECK (network_lost IN (0, 1))
);

CREATE TABLE location_claims (
    minute         BIGINT NOT NULL,
    location       TEXT   NOT NULL,
    bucket         BIGINT NOT NULL CHECK (bucket >= 0 AND bucket < 16),
    host           TEXT   NOT NULL,
    token          TEXT   NOT NULL,
    claimed_at_ms  BIGINT NOT NULL,
    lease_until_ms BIGINT NOT NULL,
    finished_at_ms BIGINT,
    PRIMARY KEY (minute, location, bucket)
);

CREATE TABLE location_checks (
    monitor_id  BIGINT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    minute      BIGINT NOT NULL,
    location    TEXT   NOT NULL,
    up          BIGINT CHECK (up IN (0, 1)),
    cause       TEXT,
    latency_ms  BIGINT,
    PRIMARY KEY (monitor_id, minute, location)
);

CREATE TABLE quorum_minutes (
    monitor_id      BIGINT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    minute          BIGINT NOT NULL,
    verdict         TEXT CHECK (verdict IN ('up', 'down', 'partial')),
    closed          BIGINT NOT NULL DEFAULT 0 CHECK (closed IN (0, 1)),
    first_write_ms  BIGINT NOT NULL,
    PRIMARY KEY (monitor_id, minute)
);

CREATE TABLE location_rollups (
    monitor_id     BIGINT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    hour_start_ms  BIGINT NOT NULL,
    figures        TEXT   NOT NULL,
    PRIMARY KEY (monitor_id, hour_start_ms)
);
