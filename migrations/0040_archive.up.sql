-- Archive: whole chapters stored so a Reader keeps what they read when a Site
-- disappears. Page bytes live in the content-addressed store under
-- ARCHIVE_DIR; these rows hold their addresses (docs/adr/0001).

-- The Owner's switch and cap per Reader. A Reader without a row, or with
-- enabled = false, may not archive; the Owner always may. The cap counts
-- chapters charged to the Reader (queued or archived): it can be checked
-- before anything is fetched, which a byte cap cannot.
CREATE TABLE archive_readers (
    reader_id    bigint PRIMARY KEY REFERENCES readers (id) ON DELETE CASCADE,
    enabled      boolean NOT NULL DEFAULT false,
    max_chapters integer CHECK (max_chapters IS NULL OR max_chapters >= 0), -- NULL: no cap
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- "Keep archiving": a Bookmark whose new chapters, found by the Poll, archive
-- themselves. It goes with the Bookmark.
CREATE TABLE archive_follows (
    reader_id  bigint NOT NULL,
    series_key text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reader_id, series_key),
    FOREIGN KEY (reader_id, series_key) REFERENCES bookmarks (reader_id, series_key) ON DELETE CASCADE
);
CREATE INDEX archive_follows_series ON archive_follows (series_key, created_at);

-- What the last chapter listing of a Series said, for "archived/total" and
-- ComicInfo's Count.
CREATE TABLE archive_series (
    series_key    text PRIMARY KEY REFERENCES series (key) ON DELETE CASCADE,
    chapter_count integer NOT NULL CHECK (chapter_count >= 0),
    listed_at     timestamptz NOT NULL DEFAULT now()
);

-- A Reader's request to archive a Series with a scope. Resolving it needs the
-- Site's chapter list, so it is a job of its own (archive_series): a request
-- never waits on a Site, and waits on a backed-off one.
CREATE TABLE archive_requests (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reader_id   bigint REFERENCES readers (id) ON DELETE SET NULL,
    series_key  text NOT NULL REFERENCES series (key) ON DELETE CASCADE,
    scope       text NOT NULL CHECK (char_length(scope) <= 64),
    state       text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done', 'failed', 'cancelled')),
    selected    integer, -- chapters the scope named
    queued      integer, -- of those, queued by this request
    capped      integer, -- of those, left out by the Reader's cap
    problem     text NOT NULL DEFAULT '',
    detail      text NOT NULL DEFAULT '',
    job_id      bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
CREATE INDEX archive_requests_series ON archive_requests (series_key, created_at DESC);

-- One row per chapter Lectern was asked to archive. A chapter is visible
-- (state 'archived') only once every page is stored: its pages rows and the
-- state change commit in one transaction. url is the chapter's identity, so
-- two requests never make two rows.
CREATE TABLE archive_chapters (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    series_key    text NOT NULL REFERENCES series (key) ON DELETE CASCADE,
    url           text NOT NULL UNIQUE CHECK (char_length(url) <= 2048),
    label         text NOT NULL,
    number        double precision,
    position      integer NOT NULL, -- index in the Site's list, oldest first
    state         text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'archived', 'failed', 'cancelled')),
    problem       text NOT NULL DEFAULT '', -- a stable code when state is 'failed'
    detail        text NOT NULL DEFAULT '', -- for a person: why it failed, or the last retryable error
    requested_by  bigint REFERENCES readers (id) ON DELETE SET NULL, -- charged to this Reader's cap
    job_id        bigint,
    page_count    integer NOT NULL DEFAULT 0,
    bytes         bigint NOT NULL DEFAULT 0, -- page (or text) bytes of the chapter
    fetched_bytes bigint NOT NULL DEFAULT 0, -- bytes downloaded to archive it, retries included
    body          text, -- a novel chapter's text
    queued_at     timestamptz NOT NULL DEFAULT now(),
    archived_at   timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((state = 'archived') = (archived_at IS NOT NULL))
);
CREATE INDEX archive_chapters_series ON archive_chapters (series_key, position);
CREATE INDEX archive_chapters_reader ON archive_chapters (requested_by) WHERE state IN ('queued', 'archived');
CREATE INDEX archive_chapters_state ON archive_chapters (state, updated_at DESC);

-- The pages of an archived chapter, in reading order. Identical images share
-- one address (one file).
CREATE TABLE archive_pages (
    chapter_id   bigint NOT NULL REFERENCES archive_chapters (id) ON DELETE CASCADE,
    idx          integer NOT NULL CHECK (idx >= 0),
    address      text NOT NULL CHECK (address ~ '^[0-9a-f]{64}$'),
    content_type text NOT NULL,
    size         integer NOT NULL CHECK (size > 0),
    crc32        bigint NOT NULL, -- lets an export write the zip entry without reading it twice
    width        integer NOT NULL,
    height       integer NOT NULL,
    source_url   text NOT NULL,
    PRIMARY KEY (chapter_id, idx)
);
CREATE INDEX archive_pages_address ON archive_pages (address);

-- The checkpoint of a chapter being archived: a row per page as soon as its
-- bytes are stored, so a retry after a crash does not fetch it again. Never
-- read by anything a Reader sees; emptied when the chapter commits.
CREATE TABLE archive_staging (
    chapter_id    bigint NOT NULL REFERENCES archive_chapters (id) ON DELETE CASCADE,
    idx           integer NOT NULL CHECK (idx >= 0),
    page_url      text NOT NULL,
    address       text NOT NULL CHECK (address ~ '^[0-9a-f]{64}$'),
    content_type  text NOT NULL,
    size          integer NOT NULL,
    crc32         bigint NOT NULL,
    width         integer NOT NULL,
    height        integer NOT NULL,
    stored_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chapter_id, idx)
);
