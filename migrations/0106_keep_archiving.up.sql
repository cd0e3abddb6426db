-- Keep archiving: a chapter that failed because its attempts ran out (not a
-- problem retrying cannot change) says when, so the archive's daily sweep
-- queues it again a day later.
ALTER TABLE archive_chapters ADD COLUMN exhausted_at timestamptz;
CREATE INDEX archive_chapters_exhausted ON archive_chapters (exhausted_at) WHERE state = 'failed' AND exhausted_at IS NOT NULL;

-- When each periodic chore last ran to its end, so a chore that runs daily
-- catches up at the first start after a longer downtime, and a restart does
-- not run it again before it is due.
CREATE TABLE periodic_runs (
    name        text PRIMARY KEY,
    last_run_at timestamptz NOT NULL
);
