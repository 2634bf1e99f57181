-- Conditions: --max-latency and --json-field, which Uptime Kuma's and Gatus's monitors use.
ALTER TABLE monitors ADD COLUMN max_latency_ms BIGINT CHECK (max_latency_ms > 0);
ALTER TABLE monitors ADD COLUMN json_field     TEXT;
