DROP TABLE archive_staging;
DROP TABLE archive_pages;
DROP TABLE archive_chapters;
DROP TABLE archive_requests;
DROP TABLE archive_series;
DROP TABLE archive_follows;
DROP TABLE archive_readers;
