DROP TABLE periodic_runs;
DROP INDEX archive_chapters_exhausted;
ALTER TABLE archive_chapters DROP COLUMN exhausted_at;
