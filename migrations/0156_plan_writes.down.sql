CREATE INDEX latest_chapter_history_series ON latest_chapter_history (series_key, first_seen_at);
DROP INDEX latest_chapter_history_newest;
ALTER TABLE series RESET (fillfactor);
CREATE INDEX series_site_next_poll ON series (site, next_poll_at) WHERE readers > 0;
