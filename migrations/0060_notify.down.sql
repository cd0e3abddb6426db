DROP INDEX latest_chapter_history_seen;
DROP TABLE notify_deliveries;
DROP TABLE notify_targets;
DROP TABLE feed_secrets;
