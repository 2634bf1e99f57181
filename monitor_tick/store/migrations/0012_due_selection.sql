-- Due selection at scale: monitors_due holds the owner and aligned, so that most due monitors
-- are selected without reading a row, and the windows that have not ended are found through an
-- index.
DROP INDEX monitors_due;
CREATE INDEX monitors_due ON monitors (
    interval_sec,
    (CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END),
    owner_id,
    aligned
) WHERE enabled = 1 AND auto_paused = 0;
CREATE INDEX maintenance_by_end ON maintenance_windows (ends_at_ms);
