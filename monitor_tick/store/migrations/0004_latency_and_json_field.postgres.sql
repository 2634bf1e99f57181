-- Conditions (issue 14): --max-latency and --json-field.
ALTER TABLE monitors ADD COLUMN max_latency_ms BIGINT CHECK (max_latency_ms > 0);
ALTER TABLE monitors ADD COLUMN json_field     TEXT;
