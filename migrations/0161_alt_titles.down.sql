ALTER TABLE series DROP COLUMN alt_titles;
