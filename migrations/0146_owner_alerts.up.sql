-- Owner alerts (docs/notifications.md, "Owner alerts"): one row per
-- condition the watch has seen, pending until it has held long enough, then
-- raised (sent once to the Owner's targets and shown in the console) until
-- it clears, when a recovery notice goes out and the row is deleted.
CREATE TABLE owner_alerts (
    key           text PRIMARY KEY CHECK (char_length(key) <= 200),
    kind          text NOT NULL CHECK (kind IN ('site_failing', 'site_backoff', 'queue_stale', 'disk_full')),
    site          text NOT NULL DEFAULT '',
    cause         text NOT NULL DEFAULT '',
    message       text NOT NULL DEFAULT '',
    first_seen_at timestamptz NOT NULL,
    raised_at     timestamptz
);

-- When each Site last answered mostly well: a Site failing since it was
-- added is not news, one failing after being healthy is.
CREATE TABLE site_health (
    site       text PRIMARY KEY,
    healthy_at timestamptz NOT NULL
);
