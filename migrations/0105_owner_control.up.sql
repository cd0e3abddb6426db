-- The Owner's run-time control of the Sites: a pause (no request of any kind
-- reaches the Site's hosts; its queued work waits, keeping its attempts), and
-- the pace and hourly budget that replace SITE_PACE's and SITE_BUDGET's
-- defaults. NULL pace_ms or budget_per_hour: the default. Every replica
-- reads these at most a minute old (fetch.SettingsReader).
CREATE TABLE site_settings (
    site            text PRIMARY KEY,
    paused          boolean NOT NULL DEFAULT false,
    paused_at       timestamptz,
    pace_ms         bigint CHECK (pace_ms IS NULL OR pace_ms BETWEEN 0 AND 86400000),
    budget_per_hour integer CHECK (budget_per_hour IS NULL OR budget_per_hour BETWEEN 1 AND 3600000),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The Owner's pause of all background work: one row, or none (not paused).
CREATE TABLE background_pause (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    paused     boolean NOT NULL DEFAULT false,
    paused_at  timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);
