-- Recurring maintenance: daily, or weekly on chosen days, so a regular window is set once.
CREATE TABLE maintenance_schedules (
    id           INTEGER PRIMARY KEY,
    monitor_id   INTEGER REFERENCES monitors (id) ON DELETE CASCADE,
    owner_id     INTEGER REFERENCES owners (id) ON DELETE CASCADE,
    start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    duration_min INTEGER NOT NULL CHECK (duration_min BETWEEN 1 AND 1440),
    days_mask    INTEGER NOT NULL CHECK (days_mask BETWEEN 1 AND 127),
    CHECK ((monitor_id IS NULL) <> (owner_id IS NULL))
) STRICT;
CREATE INDEX maintenance_schedules_by_monitor ON maintenance_schedules (monitor_id);
CREATE INDEX maintenance_schedules_by_owner ON maintenance_schedules (owner_id);
