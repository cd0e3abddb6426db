DROP INDEX series_site_next_poll;
ALTER TABLE site_state DROP COLUMN planned_until;
ALTER TABLE series
    DROP COLUMN rhythm_at,
    DROP COLUMN rhythm,
    DROP COLUMN next_poll_reason;
