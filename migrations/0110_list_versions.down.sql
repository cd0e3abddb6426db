DROP TRIGGER series_list_version ON series;
DROP TRIGGER bookmarks_list_version ON bookmarks;
DROP TRIGGER readers_list_version ON readers;
DROP FUNCTION reader_lists_bump_series();
DROP FUNCTION reader_lists_bump_bookmark();
DROP FUNCTION reader_lists_create();
DROP TABLE reader_lists;
