-- What the ticks found of monitors they could not probe, and when each host last said so on
-- stderr (see schema.sql).
CREATE TABLE invalid_monitors (
    monitor_id INTEGER PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
    -- why, as the tick says it, e.g. 'cannot be probed here: environment variable X is not set'
    cause      TEXT    NOT NULL,
    host       TEXT    NOT NULL,
    since_ms   INTEGER NOT NULL
) STRICT;
CREATE TABLE invalid_reports (
    monitor_id INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    host       TEXT    NOT NULL,
    said_at_ms INTEGER NOT NULL,
    PRIMARY KEY (monitor_id, host)
) STRICT, WITHOUT ROWID;
