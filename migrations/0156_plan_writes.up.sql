-- The adaptive plan's tick at 100,000 Series (issue 18, docs/adr/0033).
--
-- Plan writes (next_poll_at, next_poll_reason) become heap-only updates: no
-- index names either column any more, and pages keep room for the new row
-- version. The Owner's per-Site schedule list, the one reader that ordered
-- by next_poll_at, sorts a Site's held Series instead (a top-N sort).
DROP INDEX series_site_next_poll;
ALTER TABLE series SET (fillfactor = 85);

-- The plan's newest history change per Series as an index-only probe, in
-- either direction; it serves ReleaseHistory's forward range as the index
-- it replaces did.
CREATE INDEX latest_chapter_history_newest ON latest_chapter_history (series_key, first_seen_at, id) INCLUDE (prev_poll_at);
DROP INDEX latest_chapter_history_series;
