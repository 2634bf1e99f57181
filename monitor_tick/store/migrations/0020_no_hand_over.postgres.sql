-- HTTP checks all go through one engine (libcurl): no check is handed from one client to another,
-- so nothing remembers a hand-over.
ALTER TABLE rollups DROP COLUMN handed_at_ms;
