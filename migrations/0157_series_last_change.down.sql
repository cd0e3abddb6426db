DROP TRIGGER latest_chapter_history_last_change ON latest_chapter_history;
DROP FUNCTION series_last_change();
ALTER TABLE series DROP COLUMN last_change_at, DROP COLUMN last_change_prev_poll_at;
