DROP TRIGGER bookmarks_count_readers ON bookmarks;
DROP FUNCTION series_readers_count();
DROP TABLE bookmarks;
DROP TABLE series;
