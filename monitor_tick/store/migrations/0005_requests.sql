-- Requests as real setups need them: methods beyond GET and HEAD (a changed CHECK: the table is rebuilt,
-- foreign keys are off while steps run and checked before the commit; the tables that refer to
-- monitors keep referring to it by name), then headers, basic auth, a body, a CA file and
-- --insecure as new columns at the end.
CREATE TABLE monitors_new (
    id            INTEGER PRIMARY KEY,
    owner_id      INTEGER REFERENCES owners (id) ON DELETE SET NULL,
    name          TEXT    NOT NULL UNIQUE,
    kind          TEXT    NOT NULL DEFAULT 'http',
    url           TEXT    NOT NULL,
    interval_sec  INTEGER NOT NULL CHECK (interval_sec >= 60 AND interval_sec % 60 = 0),
    aligned       INTEGER NOT NULL DEFAULT 0 CHECK (aligned IN (0, 1)),
    method        TEXT    NOT NULL DEFAULT 'GET'
                  CHECK (method IN ('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS')),
    expect_status TEXT    NOT NULL DEFAULT '200-399',
    keyword       TEXT,
    timeout_s     REAL    NOT NULL DEFAULT 10 CHECK (timeout_s > 0 AND timeout_s <= 30),
    retries       INTEGER NOT NULL DEFAULT 1 CHECK (retries BETWEEN 0 AND 3),
    enabled       INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    auto_paused   INTEGER NOT NULL DEFAULT 0 CHECK (auto_paused IN (0, 1)),
    created_at_ms INTEGER NOT NULL,
    alert_after_checks INTEGER NOT NULL DEFAULT 2 CHECK (alert_after_checks BETWEEN 1 AND 10),
    resolve_after_checks INTEGER NOT NULL DEFAULT 1 CHECK (resolve_after_checks BETWEEN 1 AND 10),
    remind_every_sec INTEGER CHECK (remind_every_sec IS NULL OR remind_every_sec >= 60),
    keyword_absent TEXT,
    expires_within_sec INTEGER CHECK (expires_within_sec > 0),
    grace_sec      INTEGER CHECK (grace_sec >= 0),
    token_sha256   BLOB CHECK (length(token_sha256) = 32),
    max_latency_ms INTEGER CHECK (max_latency_ms > 0),
    json_field     TEXT,
    headers        TEXT,
    basic_auth     TEXT,
    body           TEXT,
    ca_file        TEXT,
    insecure       INTEGER NOT NULL DEFAULT 0 CHECK (insecure IN (0, 1))
) STRICT;
INSERT INTO monitors_new (
    id, owner_id, name, kind, url, interval_sec, aligned, method, expect_status, keyword, timeout_s,
    retries, enabled, auto_paused, created_at_ms, alert_after_checks, resolve_after_checks,
    remind_every_sec, keyword_absent, expires_within_sec, grace_sec, token_sha256, max_latency_ms,
    json_field
)
SELECT
    id, owner_id, name, kind, url, interval_sec, aligned, method, expect_status, keyword, timeout_s,
    retries, enabled, auto_paused, created_at_ms, alert_after_checks, resolve_after_checks,
    remind_every_sec, keyword_absent, expires_within_sec, grace_sec, token_sha256, max_latency_ms,
    json_field
FROM monitors;
DROP TABLE monitors;
ALTER TABLE monitors_new RENAME TO monitors;
CREATE INDEX monitors_due ON monitors (
    interval_sec,
    (CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END)
) WHERE enabled = 1 AND auto_paused = 0;
CREATE INDEX monitors_owner ON monitors (owner_id, interval_sec);
CREATE INDEX monitors_bad_interval ON monitors (id)
 WHERE NOT (typeof(interval_sec) = 'integer' AND interval_sec >= 60 AND interval_sec % 60 = 0)
   AND enabled = 1 AND auto_paused = 0;
CREATE UNIQUE INDEX monitors_token ON monitors (token_sha256) WHERE token_sha256 IS NOT NULL;
