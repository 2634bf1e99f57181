-- PostgreSQL as lean as SQLite: a fleet's database should cost no more per check than a file.
-- Due selection reads monitors_due alone (an index-only scan): it holds the id (INCLUDE), as
-- SQLite's holds the rowid.
DROP INDEX monitors_due;
CREATE INDEX monitors_due ON monitors (
    interval_sec,
    (CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END),
    owner_id,
    aligned
) INCLUDE (id) WHERE enabled = 1 AND auto_paused = 0;
-- Rollup upserts as HOT updates, and autovacuum after 1% of the rows changed (see
-- schema_postgres.sql); the fill factor applies to pages written from now on.
ALTER TABLE rollups SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01);
