-- incident_events.kind may be 'paused': housekeeping auto-paused the monitor,
-- and its channels are told so.
-- A changed CHECK: the table is rebuilt (foreign keys are off while steps run).
CREATE TABLE incident_events_new (
    id            INTEGER PRIMARY KEY,
    incident_id   INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    kind          TEXT    NOT NULL CHECK (kind IN ('down', 'up', 'reminder', 'paused')),
    created_at_ms INTEGER NOT NULL
) STRICT;
INSERT INTO incident_events_new (id, incident_id, kind, created_at_ms)
SELECT id, incident_id, kind, created_at_ms FROM incident_events;
DROP TABLE incident_events;
ALTER TABLE incident_events_new RENAME TO incident_events;
CREATE INDEX incident_events_by_incident ON incident_events (incident_id);
