-- Trackers: the outside list services a Reader links (AniList, MyAnimeList,
-- MangaUpdates). Lectern pushes Progress to them, never lowering it, and
-- pulls theirs back when it is higher (docs/trackers.md).

-- A Reader's link to a tracker. The tokens are sealed with SECRET_KEY
-- (package secretbox) and bound to this row; a token the tracker refuses is
-- dropped and the row kept, unlinked, with the reason, so Settings says why.
CREATE TABLE tracker_accounts (
    reader_id       bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    tracker         text NOT NULL CHECK (tracker IN ('anilist', 'myanimelist', 'mangaupdates')),
    user_id         text NOT NULL DEFAULT '',
    user_name       text NOT NULL DEFAULT '',
    token           bytea,
    refresh_token   bytea,
    expires_at      timestamptz,
    linked_at       timestamptz NOT NULL DEFAULT now(),
    unlinked_at     timestamptz,
    unlinked_reason text NOT NULL DEFAULT '',
    last_sync_at    timestamptz,
    last_error      text NOT NULL DEFAULT '',
    last_error_at   timestamptz,
    PRIMARY KEY (reader_id, tracker),
    CHECK ((token IS NULL) = (unlinked_at IS NOT NULL))
);

-- A Bookmark's entry on a tracker, as the Reader confirmed it (or an import
-- carried it). It goes with the Bookmark. The sync bookkeeping: round is the
-- generation of sync job that will send the next change (its unique
-- argument), dirty_since the first Progress record not yet sent.
CREATE TABLE tracker_entries (
    reader_id       bigint NOT NULL,
    series_key      text NOT NULL,
    tracker         text NOT NULL CHECK (tracker IN ('anilist', 'myanimelist', 'mangaupdates')),
    entry_id        text NOT NULL CHECK (entry_id ~ '^[0-9]{1,20}$'),
    title           text NOT NULL DEFAULT '',
    source          text NOT NULL DEFAULT 'reader' CHECK (source IN ('reader', 'site', 'import')),
    id              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    round           bigint NOT NULL DEFAULT 0,
    dirty_since     timestamptz,
    failures        integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    synced_progress integer,
    synced_status   text NOT NULL DEFAULT '',
    last_sync_at    timestamptz,
    last_error      text NOT NULL DEFAULT '',
    last_error_at   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reader_id, series_key, tracker),
    FOREIGN KEY (reader_id, series_key) REFERENCES bookmarks (reader_id, series_key) ON DELETE CASCADE
);
CREATE INDEX tracker_entries_entry ON tracker_entries (reader_id, tracker, entry_id);

-- Tracker ids a Site's series page publishes (MangaDex's links: al, mal,
-- mu): read by the backend's own poll, so a Series fact, offered to every
-- Reader as the mapping to confirm.
CREATE TABLE series_tracker_ids (
    series_key text NOT NULL REFERENCES series (key) ON DELETE CASCADE,
    tracker    text NOT NULL CHECK (tracker IN ('anilist', 'myanimelist', 'mangaupdates')),
    entry_id   text NOT NULL CHECK (entry_id ~ '^[0-9]{1,20}$'),
    seen_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (series_key, tracker)
);
CREATE INDEX series_tracker_ids_entry ON series_tracker_ids (tracker, entry_id);

-- An OAuth authorisation under way: the state's SHA-256 (the state itself
-- travels only in the redirect) and the PKCE verifier, sealed. One use, ten
-- minutes.
CREATE TABLE tracker_oauth_states (
    state_hash bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
    reader_id  bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    tracker    text NOT NULL,
    verifier   bytea NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Each tracker's pace, shared by every replica: the next moment a request
-- may start (a Retry-After pushes it out).
CREATE TABLE tracker_pace (
    tracker       text PRIMARY KEY,
    next_at       timestamptz NOT NULL,
    blocked_until timestamptz,
    taken_slot    timestamptz -- scratch of the reserving statement
);

-- The Reader's own "completed" mark on a Bookmark: the only way a tracker's
-- status becomes completed.
ALTER TABLE bookmarks ADD COLUMN completed_at timestamptz;
