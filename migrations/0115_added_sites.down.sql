ALTER TABLE series DROP COLUMN gone_reason, DROP COLUMN gone_at;
DROP TABLE added_sites;
