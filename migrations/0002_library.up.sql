-- Series hold the facts true whoever reads them; only the backend's own fetches
-- write them (docs/adr/0002-only-the-backend-writes-series-facts.md).
CREATE TABLE series (
    key          text PRIMARY KEY CHECK (key ~ '^[a-z]+:.+$' AND char_length(key) <= 300),
    site         text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('manga', 'novel')),
    series_url   text NOT NULL,
    title        text NOT NULL DEFAULT '',

    cover_address    text NOT NULL DEFAULT '', -- SHA-256 of the bytes, hex; '' until bytes exist
    cover_type       text NOT NULL DEFAULT '',
    cover_size       integer,
    cover_source_url text NOT NULL DEFAULT '',
    cover_at         timestamptz,

    latest_label  text NOT NULL DEFAULT '',
    latest_number double precision,
    latest_url    text NOT NULL DEFAULT '',
    latest_locked boolean NOT NULL DEFAULT false,
    latest_at     timestamptz, -- when the backend first saw this Latest Chapter

    -- How many Readers hold this Series, kept by the bookmarks trigger below so
    -- that ordering 100,000 Series by popularity is an index scan, not a count.
    readers integer NOT NULL DEFAULT 0 CHECK (readers >= 0),

    -- Poll bookkeeping: how the last fetch of the series page went.
    last_poll_at       timestamptz,
    next_poll_at       timestamptz,
    poll_status        text NOT NULL DEFAULT '',
    poll_problem       text NOT NULL DEFAULT '',
    poll_body_len      integer,
    poll_ms            integer,
    poll_etag          text NOT NULL DEFAULT '',
    poll_last_modified text NOT NULL DEFAULT '',
    poll_failures      integer NOT NULL DEFAULT 0,
    last_success_at    timestamptz,

    created_at timestamptz NOT NULL DEFAULT now(),
    -- Changes only when a fact a client sees changes (title, Cover, Latest
    -- Chapter), so Bookmark list ETags survive the Poll's bookkeeping writes.
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX series_popularity ON series (readers DESC, last_poll_at ASC NULLS FIRST) WHERE readers > 0;
CREATE INDEX series_site ON series (site);

CREATE TABLE bookmarks (
    reader_id      bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    series_key     text NOT NULL REFERENCES series (key),
    -- The title the Reader's client saw, shown only to that Reader and only
    -- while the Series has no title of its own: it never becomes a Series fact.
    title_hint     text NOT NULL DEFAULT '',
    chapter        text NOT NULL DEFAULT '',
    chapter_number double precision,
    chapter_url    text NOT NULL DEFAULT '',
    progress_at    timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reader_id, series_key)
);
CREATE INDEX bookmarks_series ON bookmarks (series_key);

CREATE FUNCTION series_readers_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE series SET readers = readers + 1 WHERE key = NEW.series_key;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE series SET readers = readers - 1 WHERE key = OLD.series_key;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER bookmarks_count_readers
    AFTER INSERT OR DELETE ON bookmarks
    FOR EACH ROW EXECUTE FUNCTION series_readers_count();
