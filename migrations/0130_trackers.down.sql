ALTER TABLE bookmarks DROP COLUMN completed_at;
DROP TABLE tracker_pace;
DROP TABLE tracker_oauth_states;
DROP TABLE series_tracker_ids;
DROP TABLE tracker_entries;
DROP TABLE tracker_accounts;
