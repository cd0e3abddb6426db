DROP TRIGGER series_list_version ON series;
CREATE CONSTRAINT TRIGGER series_list_version
    AFTER UPDATE ON series
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (OLD.title IS DISTINCT FROM NEW.title
       OR OLD.series_url IS DISTINCT FROM NEW.series_url
       OR OLD.kind IS DISTINCT FROM NEW.kind
       OR OLD.site IS DISTINCT FROM NEW.site
       OR OLD.cover_address IS DISTINCT FROM NEW.cover_address
       OR OLD.cover_type IS DISTINCT FROM NEW.cover_type
       OR OLD.latest_label IS DISTINCT FROM NEW.latest_label
       OR OLD.latest_number IS DISTINCT FROM NEW.latest_number
       OR OLD.latest_url IS DISTINCT FROM NEW.latest_url
       OR OLD.latest_locked IS DISTINCT FROM NEW.latest_locked
       OR OLD.latest_at IS DISTINCT FROM NEW.latest_at
       OR OLD.updated_at IS DISTINCT FROM NEW.updated_at)
    EXECUTE FUNCTION reader_lists_bump_series();
DROP TABLE work_dismissals;
DROP TRIGGER bookmarks_dissolve_work_update ON bookmarks;
DROP TRIGGER bookmarks_dissolve_work_delete ON bookmarks;
DROP FUNCTION works_dissolve();
ALTER TABLE bookmarks DROP COLUMN work_left_at, DROP COLUMN work_id;
DROP TABLE works;
