-- Several locations: monitors checked from named locations with a quorum, partial episodes,
-- and the tables of the locations' work split, checks and hourly figures (see schema.sql).
-- Existing monitors have no locations: they are checked as before.
ALTER TABLE monitors ADD COLUMN locations      TEXT;
ALTER TABLE monitors ADD COLUMN quorum         INTEGER CHECK (quorum IS NULL OR quorum >= 1);
ALTER TABLE monitors ADD COLUMN notify_partial INTEGER NOT NULL DEFAULT 0 CHECK (notify_partial IN (0, 1));
ALTER TABLE incidents ADD COLUMN kind           TEXT NOT NULL DEFAULT 'down' CHECK (kind IN ('down', 'partial'));
CREATE TABLE fleet_hosts (
    host         TEXT    PRIMARY KEY,
    location     TEXT    NOT NULL,
    last_minute  INTEGER NOT NULL,
    -- when it last ticked, by the database server's clock (on SQLite, the tick's own)
    seen_at_ms   INTEGER NOT NULL,
    network_lost INTEGER NOT NULL DEFAULT 0 CHECK (network_lost IN (0, 1))
) STRICT, WITHOUT ROWID;

-- The work split of monitors with locations: a location's hosts claim (minute, location,
-- bucket) rows, bucket = id % 16 (store.LOCATION_BUCKETS), as `claims` does fleet-wide; only a
-- host of the same location ever takes one over. Kept as long as `claims`.
CREATE TABLE location_claims (
    minute         INTEGER NOT NULL,
    location       TEXT    NOT NULL,
    bucket         INTEGER NOT NULL CHECK (bucket >= 0 AND bucket < 16),
    host           TEXT    NOT NULL,
    token          TEXT    NOT NULL,
    claimed_at_ms  INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    finished_at_ms INTEGER,
    PRIMARY KEY (minute, location, bucket)
) STRICT, WITHOUT ROWID;

-- Each location's check of a monitor for a minute, while the minute's verdict is being decided:
-- up 1 or 0; NULL when the location could not decide (unknown, its network lost, a monitor it
-- cannot probe): it wrote, but does not count. Deleted a few minutes after (short-lived).
CREATE TABLE location_checks (
    monitor_id  INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    minute      INTEGER NOT NULL,
    location    TEXT    NOT NULL,
    up          INTEGER CHECK (up IN (0, 1)),
    cause       TEXT,
    latency_ms  INTEGER,
    PRIMARY KEY (monitor_id, minute, location)
) STRICT, WITHOUT ROWID;

-- A minute's verdict, counted once: 'down' may be counted before the minute closes (a quorum saw
-- it down), the others when it closes. closed 1: nothing more is decided for it. Short-lived too.
CREATE TABLE quorum_minutes (
    monitor_id      INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    minute          INTEGER NOT NULL,
    verdict         TEXT CHECK (verdict IN ('up', 'down', 'partial')),
    closed          INTEGER NOT NULL DEFAULT 0 CHECK (closed IN (0, 1)),
    -- the first write of the minute, by the database server's clock: it closes 2 minutes later
    first_write_ms  INTEGER NOT NULL,
    PRIMARY KEY (monitor_id, minute)
) STRICT, WITHOUT ROWID;

-- Each location's own hourly figures of a monitor with locations (its verdicts are counted in
-- rollups): one row per monitor and hour for all its locations, 'LOCATION CHECKS FAILURES
-- LATENCY_MS_SUM' (the latency of its up checks) for each, joined by ';' -- a row a location
-- would cost more than the monitor's own rollup does (store/locations.py writes and reads it).
CREATE TABLE location_rollups (
    monitor_id     INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    hour_start_ms  INTEGER NOT NULL,
    figures        TEXT    NOT NULL,
    PRIMARY KEY (monitor_id, hour_start_ms)
) STRICT, WITHOUT ROWID;
