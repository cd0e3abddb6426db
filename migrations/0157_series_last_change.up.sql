-- The newest Latest Chapter change of each Series, on the Series row, for the
-- adaptive plan's candidates (docs/adr/0033): reading it there instead of
-- probing latest_chapter_history once per Series took a third of a tick at
-- 100,000 Series. A trigger keeps it, so every writer of history (the
-- Poll's RecordPoll, imports, tests) keeps it right without remembering to.
-- The writer holds the Series row already (RecordPoll locks it first), so
-- the trigger takes no lock out of the order of docs/adr/0017. No index
-- names these columns: the update stays heap-only.
ALTER TABLE series
    ADD COLUMN last_change_at timestamptz,
    ADD COLUMN last_change_prev_poll_at timestamptz;

UPDATE series s SET last_change_at = h.first_seen_at, last_change_prev_poll_at = h.prev_poll_at
FROM (
    SELECT DISTINCT ON (series_key) series_key, first_seen_at, prev_poll_at
    FROM latest_chapter_history ORDER BY series_key, first_seen_at DESC, id DESC
) h
WHERE s.key = h.series_key;

-- The newest is the latest first_seen_at, the last inserted among equals
-- (ORDER BY first_seen_at DESC, id DESC).
CREATE FUNCTION series_last_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE series SET last_change_at = NEW.first_seen_at, last_change_prev_poll_at = NEW.prev_poll_at
    WHERE key = NEW.series_key AND (last_change_at IS NULL OR last_change_at <= NEW.first_seen_at);
    RETURN NULL;
END $$;

CREATE TRIGGER latest_chapter_history_last_change
    AFTER INSERT ON latest_chapter_history
    FOR EACH ROW EXECUTE FUNCTION series_last_change();
