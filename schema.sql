-- monitor-tick schema, version 21 (PRAGMA user_version = 21; store.SCHEMA_VERSION).
--
-- The whole schema at the newest version: what a new database gets. It ships inside the
-- package (monitor_tick/schema.sql is a link to this file, checked by a test). A database made
-- by an older monitor-tick is upgraded by the steps in monitor_tick/store/migrations/ instead,
-- and a test holds both ways to the same tables, columns and indexes: every change here comes
-- with a step there (a new column goes at the end of its table, as ALTER TABLE ADD COLUMN puts it).
--
-- Tables are STRICT: text where a number belongs is refused on write.
--
-- Rules that shape it:
--   * Every instant is an INTEGER of epoch milliseconds in a column named *_ms.
--   * The clock is the cursor: nothing here says when a monitor runs next. A monitor is due in
--     minute m when m % n = phase, n = max(interval_sec, plan floor) / 60 (see schedule.py).
--   * Only results are written per check: one rollup upsert, plus an incident row change while
--     a monitor is down or recovering (see "Alerts" at the end). A healthy monitor with no open
--     incident costs the rollup upsert and nothing else. (A monitor checked from several
--     locations also writes each location's check of the minute, short-lived, and an hourly row
--     per location: see the tables of step 17 at the end.)
--   * Names (of plans, owners, monitors and groups) are in Unicode NFC: every command writes and
--     looks them up so, and UNIQUE then holds for names that print the same (step 14).

CREATE TABLE plans (
    id               INTEGER PRIMARY KEY,
    name             TEXT    NOT NULL UNIQUE,
    -- the shortest interval a monitor of this plan's owners is checked at (whole minutes)
    min_interval_sec INTEGER NOT NULL CHECK (min_interval_sec >= 60 AND min_interval_sec % 60 = 0)
) STRICT;
-- Plan 1 is the default plan: monitors without an owner, and owners whose plan has expired,
-- are checked at its floor.
INSERT INTO plans (id, name, min_interval_sec) VALUES (1, 'default', 60);

CREATE TABLE owners (
    id                 INTEGER PRIMARY KEY,
    name               TEXT    NOT NULL UNIQUE,
    plan_id            INTEGER NOT NULL DEFAULT 1 REFERENCES plans (id),
    -- NULL: the plan never expires. From this instant on, the default plan's floor applies.
    plan_expires_at_ms INTEGER
) STRICT;

CREATE TABLE monitors (
    id            INTEGER PRIMARY KEY,
    owner_id      INTEGER REFERENCES owners (id) ON DELETE SET NULL,
    name          TEXT    NOT NULL UNIQUE,
    -- probe kind (monitor_tick/probes): selected by url's scheme ('http' covers http:// and
    -- https://; tls://, tcp://; a heartbeat's url is the word 'heartbeat')
    kind          TEXT    NOT NULL DEFAULT 'http',
    url           TEXT    NOT NULL,
    -- whole minutes only; the effective interval is max(interval_sec, the owner's plan floor)
    interval_sec  INTEGER NOT NULL CHECK (interval_sec >= 60 AND interval_sec % 60 = 0),
    -- 1: fire on wall-clock boundaries (phase 0); 0: phase = id % n spreads monitors
    aligned       INTEGER NOT NULL DEFAULT 0 CHECK (aligned IN (0, 1)),
    method        TEXT    NOT NULL DEFAULT 'GET'
                  CHECK (method IN ('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS')),
    -- accepted statuses: comma-separated codes and ranges, e.g. '200-399' or '200,204,301-302'
    expect_status TEXT    NOT NULL DEFAULT '200-399',
    -- the body (first 1 MiB) must contain this text; NULL: no keyword check
    keyword       TEXT,
    -- one hard deadline covering connect, headers and body, retries included; `add` takes at
    -- most 25 s, and a row above that (older versions took 30 s) is probed at 25 s
    timeout_s     REAL    NOT NULL DEFAULT 10 CHECK (timeout_s > 0 AND timeout_s <= 30),
    -- extra attempts within the same tick before a failure counts as down (0 disables)
    retries       INTEGER NOT NULL DEFAULT 1 CHECK (retries BETWEEN 0 AND 3),
    enabled       INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    -- set by housekeeping after a long continuous outage; cleared by `resume`
    auto_paused   INTEGER NOT NULL DEFAULT 0 CHECK (auto_paused IN (0, 1)),
    created_at_ms INTEGER NOT NULL,
    -- consecutive down checks before an incident is confirmed and announced (1: at once)
    alert_after_checks INTEGER NOT NULL DEFAULT 2 CHECK (alert_after_checks BETWEEN 1 AND 10),
    -- consecutive up checks before a confirmed incident is resolved
    resolve_after_checks INTEGER NOT NULL DEFAULT 1 CHECK (resolve_after_checks BETWEEN 1 AND 10),
    -- NULL: no reminders; else remind every this many seconds while a confirmed incident stays open
    remind_every_sec INTEGER CHECK (remind_every_sec IS NULL OR remind_every_sec >= 60),
    -- http: the body (first 1 MiB) must NOT contain this text; NULL: no such check
    keyword_absent TEXT,
    -- tls:// and https://: down when the certificate expires within this many seconds; NULL: no check
    expires_within_sec INTEGER CHECK (expires_within_sec > 0),
    -- heartbeat: how long past its period (interval_sec) a ping may be late before it is down
    grace_sec      INTEGER CHECK (grace_sec >= 0),
    -- heartbeat: SHA-256 of the token that identifies its pings over HTTP. The token itself is
    -- printed once by `add` and never stored, so a copy of this file cannot be used to ping.
    token_sha256   BLOB CHECK (length(token_sha256) = 32),
    -- http, tls, tcp: down when an up check took longer than this many ms; NULL: no limit
    max_latency_ms INTEGER CHECK (max_latency_ms > 0),
    -- http: 'PATH=VALUE': the JSON body's field at the dotted PATH must equal VALUE; NULL: no check
    json_field     TEXT,
    -- http: request headers, one 'Name: value' a line. Values (and basic_auth's) may be
    -- ${ENV_VAR} references, resolved by the tick; a literal secret is stored as given (this
    -- file is the owner's only, like channels' URLs) and never printed.
    headers        TEXT,
    -- http: 'USER:PASSWORD' for HTTP basic authentication
    basic_auth     TEXT,
    -- http: the request body, sent as given (POST, PUT, ...)
    body           TEXT,
    -- https: a PEM file of the certificate authorities trusted instead of the system's
    ca_file        TEXT,
    -- https: 1 to skip certificate verification (shown plainly in `list`)
    insecure       INTEGER NOT NULL DEFAULT 0 CHECK (insecure IN (0, 1)),
    -- A minute of the epoch in which the monitor is also due, whatever its schedule: set by add,
    -- resume, edit and apply to a minute or few ahead, so a daily monitor's first check does not
    -- wait a day. A minute, not a flag cleared by the check: the clock stays the cursor, and a
    -- replay of that minute checks it again. NULL: none.
    first_check_minute INTEGER,
    -- 1: left out of the status page (and its summary), no badge; metrics and reports keep it
    private        INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1)),
    -- the status page's section this monitor is shown in; NULL: the first, untitled one
    group_name     TEXT,
    -- Several locations (step 17): the locations it is checked from, comma-separated and sorted,
    -- or 'all' (every location a host ticked from in the last 7 days); NULL: once per due minute
    -- by any host of the fleet, as before locations. A quorum of them decides (core/quorum.py).
    locations      TEXT,
    -- how many of its locations must see it down; NULL: a majority of them
    quorum         INTEGER CHECK (quorum IS NULL OR quorum >= 1),
    -- 1: a partial episode (down from fewer locations than the quorum) is notified, once
    notify_partial INTEGER NOT NULL DEFAULT 0 CHECK (notify_partial IN (0, 1))
) STRICT;
-- Due selection reads candidates through this index: for each distinct interval n (walked as a
-- loose index scan) the rows whose phase equals minute % (n / 60). The expression must match
-- store.SELECT_DUE to the letter, or SQLite silently falls back to a scan. The owner and aligned
-- are in it so that most due monitors are selected, owners' plans and maintenance included,
-- without reading a row.
CREATE INDEX monitors_due ON monitors (
    interval_sec,
    (CASE WHEN aligned = 1 THEN 0 ELSE id % (interval_sec / 60) END),
    owner_id,
    aligned
) WHERE enabled = 1 AND auto_paused = 0;
-- Monitors due in their first-check minute (see first_check_minute), one index probe a tick.
CREATE INDEX monitors_first_check ON monitors (first_check_minute)
 WHERE first_check_minute IS NOT NULL AND enabled = 1 AND auto_paused = 0;
-- Monitors whose owner's plan floor is above their own interval are found through their owner.
CREATE INDEX monitors_owner ON monitors (owner_id, interval_sec);
-- Rows whose interval has no schedule (possible only if edited by hand with CHECKs ignored): the
-- due query offers them to the tick hourly, which reports them. Empty on a healthy database.
CREATE INDEX monitors_bad_interval ON monitors (id)
 WHERE NOT (typeof(interval_sec) = 'integer' AND interval_sec >= 60 AND interval_sec % 60 = 0)
   AND enabled = 1 AND auto_paused = 0;

-- A window covers one monitor (monitor_id) or every monitor of one owner (owner_id).
CREATE TABLE maintenance_windows (
    id           INTEGER PRIMARY KEY,
    monitor_id   INTEGER REFERENCES monitors (id) ON DELETE CASCADE,
    owner_id     INTEGER REFERENCES owners (id) ON DELETE CASCADE,
    starts_at_ms INTEGER NOT NULL,
    ends_at_ms   INTEGER NOT NULL,
    CHECK (ends_at_ms > starts_at_ms),
    CHECK ((monitor_id IS NULL) <> (owner_id IS NULL))
) STRICT;
CREATE INDEX maintenance_by_monitor ON maintenance_windows (monitor_id, ends_at_ms);
CREATE INDEX maintenance_by_owner ON maintenance_windows (owner_id, ends_at_ms);
-- The windows that have not ended: what due selection reads to know who is in maintenance now.
CREATE INDEX maintenance_by_end ON maintenance_windows (ends_at_ms);

-- One row per monitor per UTC hour. Uptime, averages and reports are derived from these.
CREATE TABLE rollups (
    monitor_id     INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    hour_start_ms  INTEGER NOT NULL,
    checks         INTEGER NOT NULL DEFAULT 0,
    failures       INTEGER NOT NULL DEFAULT 0,
    -- latency of the up checks only: average = latency_ms_sum / (checks - failures)
    latency_ms_sum INTEGER NOT NULL DEFAULT 0,
    latency_ms_min INTEGER,
    latency_ms_max INTEGER,
    -- the newest check counted here; a tick that commits late never flips state behind it
    last_check_ms  INTEGER NOT NULL,
    -- The certificate expiry seen by the hour's newest check (tls://, https:// with an expiry
    -- check); NULL when that check saw none. Days left are derived from it and the reader's clock,
    -- never stored. Written by the same upsert that counts the check: no extra write per check.
    cert_expires_at_ms INTEGER,
    -- Where the hour's newest check's time went (an HTTP check that got an answer): 'lookup
    -- connect tls first_byte total', ms from its start, '-' for no TLS (core/model.py, Phases);
    -- NULL when that check had none. Written by the same upsert that counts the check; `show`
    -- gives the newest hour's, and the daily housekeeping clears every older hour's.
    phases         TEXT,
    PRIMARY KEY (monitor_id, hour_start_ms)
) STRICT, WITHOUT ROWID;

-- One row per outage: opened by the first down check (its start is that check's time), resolved
-- by the up checks that end it; confirmation is counted on it (see "Alerts" below).
CREATE TABLE incidents (
    id            INTEGER PRIMARY KEY,
    monitor_id    INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    started_at_ms INTEGER NOT NULL,
    resolved_at_ms INTEGER,
    -- why the first failed check failed, e.g. 'timeout', 'status 503' (credentials redacted)
    cause         TEXT    NOT NULL,
    http_status   INTEGER,
    -- 'suspected' until alert_after_checks consecutive down checks, then 'confirmed'
    state          TEXT NOT NULL DEFAULT 'suspected' CHECK (state IN ('suspected', 'confirmed')),
    -- consecutive down checks counted until confirmation (the opening check is the first)
    down_checks    INTEGER NOT NULL DEFAULT 1,
    -- consecutive up checks while confirmed; a down check sets it back to 0
    up_checks      INTEGER NOT NULL DEFAULT 0,
    confirmed_at_ms INTEGER,
    -- the last reminder's time (NULL: none yet; the next is due a period after confirmed_at_ms)
    reminded_at_ms INTEGER,
    -- 'down': an outage; 'partial' (step 17): a monitor checked from several locations was down
    -- from some, fewer than its quorum. Never both open: the one ends where the other begins.
    kind           TEXT NOT NULL DEFAULT 'down' CHECK (kind IN ('down', 'partial'))
) STRICT;
-- At most one open incident per monitor.
CREATE UNIQUE INDEX incidents_one_open ON incidents (monitor_id) WHERE resolved_at_ms IS NULL;
CREATE INDEX incidents_by_monitor ON incidents (monitor_id, started_at_ms);

-- The ledger of minutes: one row per claimed minute, never one per monitor. Claiming is an
-- INSERT that only the first run for a minute wins. finished_at_ms NULL: the run died or is
-- still running. Reports read this to tell "monitor-tick was not running" from "site down".
CREATE TABLE ticks (
    minute         INTEGER PRIMARY KEY,
    started_at_ms  INTEGER NOT NULL,
    finished_at_ms INTEGER,
    -- NULL: probed by its own run; else the minute of the run that caught it up
    covered_by     INTEGER,
    -- 1: claimed too late to probe (beyond the catch-up window): nothing was checked
    missed         INTEGER NOT NULL DEFAULT 0 CHECK (missed IN (0, 1)),
    due            INTEGER,
    up             INTEGER,
    down           INTEGER,
    -- probes that could not decide (our own limits, not the site's): counted neither way
    unknown        INTEGER,
    opened         INTEGER,
    resolved       INTEGER,
    -- 1: some probe failed with dns/connect errors and the network canary failed too: the probe
    -- host had lost its network. Those checks were counted as unknown; no incident changed, nobody
    -- was told. Never set without a canary.
    network_lost   INTEGER NOT NULL DEFAULT 0 CHECK (network_lost IN (0, 1)),
    -- a JSON array: the monitors this run probed but did not record (unknown: cut off by the
    -- budget, our network lost). A --force rerun of the minute records only these and monitors
    -- added after started_at_ms, so no monitor-minute is counted twice. NULL: none (or unknown).
    unrecorded_ids TEXT,
    -- 1 (step 18): claimed by a replay (--minute), not a live tick. Only live ticks say monitor-tick was
    -- running: catch-up counts skipped minutes from the newest live row, and the minutes before
    -- the first live row are never missed, however old a replayed minute is.
    replayed       INTEGER NOT NULL DEFAULT 0 CHECK (replayed IN (0, 1))
) STRICT;

-- ---------------------------------------------------------------------------------------------
-- Alerts: confirmation, notification channels, incident events and their deliveries.
--
-- Confirmation is counted on the open incident row, never per check of a healthy monitor: a
-- monitor's first down check opens a *suspected* incident; after alert_after_checks consecutive
-- down checks it is *confirmed* (and people are told); resolve_after_checks consecutive up checks
-- resolve it. An up check while it is still suspected resolves it quietly (nobody was told).
-- Their columns (alert_after_checks, resolve_after_checks, remind_every_sec on monitors; state,
-- down_checks, up_checks, confirmed_at_ms, reminded_at_ms on incidents; network_lost on ticks)
-- are in the tables above.

-- Where notifications go: an Apprise URL (it holds secrets: show it only redacted) for one
-- monitor, every monitor of one owner, or every monitor (both NULL).
CREATE TABLE channels (
    id            INTEGER PRIMARY KEY,
    url           TEXT    NOT NULL,
    monitor_id    INTEGER REFERENCES monitors (id) ON DELETE CASCADE,
    owner_id      INTEGER REFERENCES owners (id) ON DELETE CASCADE,
    created_at_ms INTEGER NOT NULL,
    CHECK (monitor_id IS NULL OR owner_id IS NULL)
) STRICT;

-- What happened to an incident that people are told about: 'down' (confirmed), 'up' (resolved
-- after being confirmed), 'reminder' (still down), 'paused' (housekeeping auto-paused the
-- monitor). Written in the tick's results (or housekeeping) transaction.
CREATE TABLE incident_events (
    id            INTEGER PRIMARY KEY,
    incident_id   INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    kind          TEXT    NOT NULL CHECK (kind IN ('down', 'up', 'reminder', 'paused')),
    created_at_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX incident_events_by_incident ON incident_events (incident_id);

-- One row per event per channel that should hear of it, made with the event. A tick claims a
-- due row with a conditional UPDATE (state 'pending' -> 'sending', its own claim token), so two
-- overlapping ticks never send the same one; 'sending' rows whose claim expired (the tick died
-- mid-send) may be claimed again. A failed send goes back to 'pending' with a later
-- next_attempt_at_ms, until the event is too old: then 'failed' (given up, warned once).
CREATE TABLE deliveries (
    event_id           INTEGER NOT NULL REFERENCES incident_events (id) ON DELETE CASCADE,
    channel_id         INTEGER NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    state              TEXT    NOT NULL DEFAULT 'pending'
                               CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms INTEGER NOT NULL,
    claim_token        TEXT,
    claimed_until_ms   INTEGER,
    sent_at_ms         INTEGER,
    -- why the last attempt failed (from Apprise, channel secrets removed)
    last_error         TEXT,
    PRIMARY KEY (event_id, channel_id)
) STRICT, WITHOUT ROWID;
-- Only unfinished rows are indexed: an idle tick's "anything to send?" is one index probe.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at_ms) WHERE state = 'pending';
CREATE INDEX deliveries_claimed ON deliveries (claimed_until_ms) WHERE state = 'sending';
CREATE INDEX deliveries_by_channel ON deliveries (channel_id, event_id);

-- Settings by name: 'network_canary_url' (a URL whose failure says the probe host is offline).
CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Probe kinds beyond HTTP: their options, certificate expiry, heartbeat tokens and pings.
-- Their columns (keyword_absent, expires_within_sec, grace_sec, token_sha256 on monitors;
-- cert_expires_at_ms on rollups) are in the tables above.

-- A heartbeat's pings name it by its token's digest.
CREATE UNIQUE INDEX monitors_token ON monitors (token_sha256) WHERE token_sha256 IS NOT NULL;

-- A heartbeat's last signals: one row per heartbeat monitor, written by `ping` and `serve`
-- (a ping is a result, not schedule state) and never by the tick, which only reads the rows of
-- the heartbeats due.
CREATE TABLE pings (
    monitor_id       INTEGER PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
    -- the last ping (success or failure); NULL: none yet
    last_ping_ms     INTEGER,
    -- 1: the last ping reported that the job failed (`ping --fail`, /ping/TOKEN/fail)
    last_ping_failed INTEGER NOT NULL DEFAULT 0 CHECK (last_ping_failed IN (0, 1)),
    -- set by a start signal, cleared by the next ping, which records the run's duration
    started_at_ms    INTEGER,
    last_duration_ms INTEGER
) STRICT;

-- The largest id each table has handed out. SQLite gives a new row the largest rowid + 1, so
-- the id of the newest row, once deleted, would go to the next one: a badge URL or a metrics
-- series would silently switch to another monitor. Inserts take max(this, max(id)) + 1 instead
-- (store.db.insert_row), so no id of monitors, owners, plans, maintenance_windows or channels is
-- ever given twice. A mark instead of AUTOINCREMENT: that needs each table rebuilt.
CREATE TABLE id_high_water (
    table_name TEXT    PRIMARY KEY,
    last_id    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- `apply` reads `${VAR}` references in a monitors file and stores what they resolve to. Here it
-- keeps the reference (`template`) with the SHA-256 of the value it stood for, per stored value
-- (`target`: 'monitors:ID:COLUMN', 'channels:ID:url', 'settings:NAME'), so that `export` writes
-- the reference back, never the secret, while the value is still the one it resolved to.
CREATE TABLE env_refs (
    target       TEXT PRIMARY KEY,
    template     TEXT NOT NULL,
    value_sha256 BLOB NOT NULL CHECK (length(value_sha256) = 32)
) STRICT, WITHOUT ROWID;

-- Maintenance that comes back: a window of duration_min minutes starting at start_minute (after
-- 00:00 UTC) on the days of days_mask (bit 0 Monday ... bit 6 Sunday; 127: daily), for a monitor
-- or an owner. Filtered in the due query like maintenance_windows, through these indexes
-- (store.due.IN_SCHEDULED_WINDOW); its ids are drawn with maintenance_windows' (id_high_water),
-- so `maintenance remove ID` names one window of either kind.
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

-- The work split (several hosts on one PostgreSQL database; one host on SQLite claims every
-- bucket at once): a monitor falls in bucket id % 64 (store.BUCKETS). A run claims (minute,
-- bucket) rows of its minute a few at a time and probes the monitors due in them, for the
-- minute and the minutes it caught up; `minute` is the run's own minute (ticks.minute). A claim
-- not finished before lease_until_ms may be claimed again by another run (on PostgreSQL the
-- server's clock judges it); a run writes results only for the buckets it still holds (token).
CREATE TABLE claims (
    minute         INTEGER NOT NULL,
    bucket         INTEGER NOT NULL CHECK (bucket >= 0 AND bucket < 64),
    -- --host-name of the run that holds it (default: the machine's hostname)
    host           TEXT    NOT NULL,
    -- the run's own random token: its writes are conditional on still holding the claim
    token          TEXT    NOT NULL,
    claimed_at_ms  INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    -- NULL: still probing, or the run died (then another run may take it over)
    finished_at_ms INTEGER,
    -- checks recorded for the bucket's monitors
    checks         INTEGER,
    -- the host whose claim this run took over (its lease ran out unfinished: step 19), else NULL
    taken_from     TEXT,
    PRIMARY KEY (minute, bucket)
) STRICT, WITHOUT ROWID;

-- Monitors the newest tick that had them due could not probe: an invalid row, a `${VAR}` its
-- environment lacks, an address --block-private refuses, a kind this host cannot run. What that
-- tick found, with the time (the tick's clock reading) and the --host-name of the run that found
-- it; written only when it changes (the same finding by another host writes nothing, nor does a
-- replay of a minute before it), deleted by the first tick that can probe the monitor again.
-- `list`, `show`, the status page and the metrics read it, never judging the monitor again: they
-- run elsewhere, in another environment.
CREATE TABLE invalid_monitors (
    monitor_id INTEGER PRIMARY KEY REFERENCES monitors (id) ON DELETE CASCADE,
    -- why, as the tick says it, e.g. 'cannot be probed here: environment variable X is not set'
    cause      TEXT    NOT NULL,
    host       TEXT    NOT NULL,
    since_ms   INTEGER NOT NULL
) STRICT;

-- When each host last said on stderr that it cannot probe a monitor: a live tick says it in its
-- first tick of each UTC hour that has the monitor due, so at most one write per monitor per host
-- per hour. --force and --minute runs never write here (they do not use up the hour's report).
CREATE TABLE invalid_reports (
    monitor_id INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    host       TEXT    NOT NULL,
    said_at_ms INTEGER NOT NULL,
    PRIMARY KEY (monitor_id, host)
) STRICT, WITHOUT ROWID;

-- Several locations (step 17; PostgreSQL fleets; see core/quorum.py and store/locations.py).
-- Each host of the fleet, the location it probes from (--location; 'default' without it), the
-- newest minute it ticked and whether its canary said its network was lost. One upsert a tick.
CREATE TABLE fleet_hosts (
    host         TEXT    PRIMARY KEY,
    location     TEXT    NOT NULL,
    last_minute  INTEGER NOT NULL,
    -- when it last ticked, by the database server's clock (on SQLite, the tick's own)
    seen_at_ms   INTEGER NOT NULL,
    network_lost INTEGER NOT NULL DEFAULT 0 CHECK (network_lost IN (0, 1)),
    -- the newest minute whose tick judged its network, network_lost's minute (step 19)
    canary_minute INTEGER
) STRICT, WITHOUT ROWID;

-- The work split of monitors with locations: a location's hosts claim (minute, location,
-- bucket) rows, bucket = id % 16 (store.LOCATION_BUCKETS), as `claims` does fleet-wide; only a
-- host of the same location ever takes one over. Kept as long as `claims`.
CREATE TABLE location_claims (
    minute         INTEGER NOT NULL,
    location       TEXT    NOT NULL,
    bucket         INTEGER NOT NULL CHECK (bucket >= 0 AND bucket < 16),
    host           TEXT    NOT NULL,
    token          TEXT    NOT NULL,
    claimed_at_ms  INTEGER NOT NULL,
    lease_until_ms INTEGER NOT NULL,
    finished_at_ms INTEGER,
    -- checks recorded for the bucket's monitors, and the host whose claim this run took over
    -- (as in `claims`; step 19)
    checks         INTEGER,
    taken_from     TEXT,
    PRIMARY KEY (minute, location, bucket)
) STRICT, WITHOUT ROWID;

-- Each location's check of a monitor for a minute, while the minute's verdict is being decided:
-- up 1 or 0; NULL when the location could not decide (unknown, its network lost, a monitor it
-- cannot probe): it wrote, but does not count. Deleted a few minutes after (short-lived).
CREATE TABLE location_checks (
    monitor_id  INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    minute      INTEGER NOT NULL,
    location    TEXT    NOT NULL,
    up          INTEGER CHECK (up IN (0, 1)),
    cause       TEXT,
    latency_ms  INTEGER,
    -- the HTTP status the location got, if any (its alert gives it: step 19)
    http_status INTEGER,
    PRIMARY KEY (monitor_id, minute, location)
) STRICT, WITHOUT ROWID;

-- A minute's verdict, counted once: 'down' may be counted before the minute closes (a quorum saw
-- it down), the others when it closes. closed 1: nothing more is decided for it. Short-lived too.
CREATE TABLE quorum_minutes (
    monitor_id      INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    minute          INTEGER NOT NULL,
    verdict         TEXT CHECK (verdict IN ('up', 'down', 'partial')),
    closed          INTEGER NOT NULL DEFAULT 0 CHECK (closed IN (0, 1)),
    -- the first write of the minute, by the database server's clock: it closes 2 minutes later
    first_write_ms  INTEGER NOT NULL,
    PRIMARY KEY (monitor_id, minute)
) STRICT, WITHOUT ROWID;

-- Each location's own hourly figures of a monitor with locations (its verdicts are counted in
-- rollups): one row per monitor and hour for all its locations, 'LOCATION CHECKS FAILURES
-- LATENCY_MS_SUM' (the latency of its up checks) for each, joined by ';' -- a row a location
-- would cost more than the monitor's own rollup does (store/locations.py writes and reads it).
CREATE TABLE location_rollups (
    monitor_id     INTEGER NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
    hour_start_ms  INTEGER NOT NULL,
    figures        TEXT    NOT NULL,
    PRIMARY KEY (monitor_id, hour_start_ms)
) STRICT, WITHOUT ROWID;
