-- What a fleet with locations reports: the HTTP status each location got (its alert gives it),
-- the checks each location bucket recorded and the host a claim was taken over from (`hosts`),
-- and the minute a host last judged its network (`locations`' canary column).
ALTER TABLE claims ADD COLUMN taken_from     TEXT;
ALTER TABLE fleet_hosts ADD COLUMN canary_minute BIGINT;
ALTER TABLE location_claims ADD COLUMN checks         BIGINT;
ALTER TABLE location_claims ADD COLUMN taken_from     TEXT;
ALTER TABLE location_checks ADD COLUMN http_status BIGINT;
