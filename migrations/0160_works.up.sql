-- Works (issue 21; CONTEXT.md "Work"): a Reader's link between two or more
-- of their own Bookmarks that are one story on several Sites. Per Reader:
-- nothing one Reader links changes what another sees.
CREATE TABLE works (
    id         bigserial PRIMARY KEY,
    reader_id  bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- The target of the Bookmarks' composite key below.
    UNIQUE (reader_id, id)
);

-- A Bookmark belongs to at most one Work, and only to one of its own
-- Reader's: the foreign key is (reader_id, work_id), so a Bookmark of one
-- Reader can never name another Reader's Work, whatever the code does.
ALTER TABLE bookmarks ADD COLUMN work_id bigint;
-- When the Bookmark last left a Work: the chapters its Work held back as
-- another Site's news are not news again once it is on its own
-- (docs/notifications.md).
ALTER TABLE bookmarks ADD COLUMN work_left_at timestamptz;
ALTER TABLE bookmarks ADD CONSTRAINT bookmarks_work_fk
    FOREIGN KEY (reader_id, work_id) REFERENCES works (reader_id, id);
CREATE INDEX bookmarks_work ON bookmarks (work_id) WHERE work_id IS NOT NULL;

-- A Work with fewer than two members is no link: when a member leaves
-- (unlinked, its Bookmark deleted), the last one left is freed and the
-- Work row goes. Deferred to commit, so a transaction may move members
-- around (an import, a move) without dissolving a Work half-way.
--
-- Lock order (docs/adr/0027): every writer that changes a Work's members
-- locks the works row FOR UPDATE first (store.lockWork), so two removals
-- from one two-member Work never each free the other's Bookmark at commit
-- (a deadlock, 40P01, without it). The triggers are named to sort before
-- bookmarks_list_version, so at commit the Bookmark rows are locked before
-- the list version row (docs/adr/0017's order).
CREATE FUNCTION works_dissolve() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM bookmarks WHERE work_id = OLD.work_id) < 2 THEN
        UPDATE bookmarks SET work_id = NULL, work_left_at = now() WHERE work_id = OLD.work_id;
        DELETE FROM works WHERE id = OLD.work_id;
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER bookmarks_dissolve_work_delete
    AFTER DELETE ON bookmarks
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.work_id IS NOT NULL)
    EXECUTE FUNCTION works_dissolve();

CREATE CONSTRAINT TRIGGER bookmarks_dissolve_work_update
    AFTER UPDATE OF work_id ON bookmarks
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.work_id IS NOT NULL AND OLD.work_id IS DISTINCT FROM NEW.work_id)
    EXECUTE FUNCTION works_dissolve();

-- A suggested pair the Reader said is not one story: never suggested again.
-- Keys in order (key_a < key_b) so a pair has one row.
CREATE TABLE work_dismissals (
    reader_id  bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    key_a      text NOT NULL,
    key_b      text NOT NULL CHECK (key_a < key_b),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reader_id, key_a, key_b)
);

-- gone and gone_reason are on every Bookmark object now: a Series going (or
-- coming back) is a change of the list (docs/adr/0017).
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
       OR OLD.updated_at IS DISTINCT FROM NEW.updated_at
       OR OLD.gone_reason IS DISTINCT FROM NEW.gone_reason)
    EXECUTE FUNCTION reader_lists_bump_series();
