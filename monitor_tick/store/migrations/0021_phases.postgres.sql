-- Where the time of each hour's newest HTTP check went: lookup, connect, TLS, first byte and
-- total, kept beside its hour's counts (schema.sql, rollups.phases).
ALTER TABLE rollups ADD COLUMN phases TEXT;
