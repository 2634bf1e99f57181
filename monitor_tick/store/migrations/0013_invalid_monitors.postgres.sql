-- What the ticks found of monitors they could not probe, and when each host last said so on
-- stderr (see schema.sql).
CREATE TABLE invalid_monitors (
    monitor_id BIGINT PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
    cause      TEXT   NOT NULL,
    host       TEXT   NOT NULL,
    since_ms   BIGINT NOT NULL
);
CREATE TABLE invalid_reports (
    monitor_id BIGINT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    host       TEXT   NOT NULL,
    said_at_ms BIGINT NOT NULL,
    PRIMARY KEY (monitor_id, host)
);
