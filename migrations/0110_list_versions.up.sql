-- A Reader's list version: one number that changes whenever anything in the
-- Reader's Bookmark list changes (their own Bookmark writes, and the facts of
-- any Series they hold: title, Cover, Latest Chapter). A panel refresh reads
-- it with the token in one indexed read and answers 304 without touching the
-- Bookmarks; a replica's cached encoded body is keyed by it. Only Postgres
-- moves it (the triggers below), so every replica reads the same number.
--
-- Lock order (docs/adr/0017-list-versions-and-lock-order.md): the triggers are
-- deferred, so a transaction takes version rows only at its commit, after
-- every Series and Bookmark row it locks; and a Series' Readers are locked in
-- reader_id order. A poll's write and a Reader's PUT therefore never wait on
-- each other in a cycle.
CREATE TABLE reader_lists (
    reader_id bigint PRIMARY KEY REFERENCES readers (id) ON DELETE CASCADE,
    version   bigint NOT NULL DEFAULT 1
);
INSERT INTO reader_lists (reader_id) SELECT id FROM readers;

CREATE FUNCTION reader_lists_create() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO reader_lists (reader_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER readers_list_version
    AFTER INSERT ON readers
    FOR EACH ROW EXECUTE FUNCTION reader_lists_create();

-- A Bookmark written or removed: its Reader's list changed.
CREATE FUNCTION reader_lists_bump_bookmark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE reader_lists SET version = version + 1
    WHERE reader_id = CASE WHEN TG_OP = 'DELETE' THEN OLD.reader_id ELSE NEW.reader_id END;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER bookmarks_list_version
    AFTER INSERT OR UPDATE OR DELETE ON bookmarks
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION reader_lists_bump_bookmark();

-- A Series fact a Bookmark object shows changed: every Reader holding the
-- Series sees a new list. Their rows are locked in reader_id order, so two
-- such fan-outs never lock each other's rows in opposite orders.
CREATE FUNCTION reader_lists_bump_series() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE reader_lists v SET version = v.version + 1
    FROM (SELECT l.reader_id FROM reader_lists l JOIN bookmarks b ON b.reader_id = l.reader_id
          WHERE b.series_key = NEW.key
          ORDER BY l.reader_id
          FOR NO KEY UPDATE OF l) o
    WHERE v.reader_id = o.reader_id;
    RETURN NULL;
END $$;

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
