-- Site listings (docs/adr/0028-site-listings.md): each Site's listing as the
-- Poll reads it — its state (new until two good reads, healthy, failing,
-- overflowed), why, when it is read next, what it measured (release rate,
-- entries per read) and what the last read showed, so the next read tells
-- the new entries from the old.
CREATE TABLE site_listings (
    site           text PRIMARY KEY CHECK (char_length(site) <= 100),
    state          text NOT NULL DEFAULT 'new' CHECK (state IN ('new', 'healthy', 'failing', 'overflowed')),
    problem        text NOT NULL DEFAULT '' CHECK (char_length(problem) <= 2000),
    good_reads     integer NOT NULL DEFAULT 0,
    read_at        timestamptz,
    ok_at          timestamptz,
    next_at        timestamptz,
    fallback_until timestamptz,
    entries        integer NOT NULL DEFAULT 0,
    rate           double precision NOT NULL DEFAULT 0,
    -- the last read's entries, "key|label", and the reads of the last day
    -- ([{"at": ..., "fresh": n}]), from which the rate is measured
    seen           text[] NOT NULL DEFAULT '{}',
    reads          jsonb NOT NULL DEFAULT '[]',
    -- the confirming polls queued at once within the last hour
    confirms       timestamptz[] NOT NULL DEFAULT '{}',
    -- the largest share of the budget a plan of the last hour gave the
    -- listing, and when: an hour may still hold that plan's reads
    reserve        integer NOT NULL DEFAULT 0,
    reserve_at     timestamptz
);

-- A held Series the listing showed with a chapter newer than its stored
-- Latest Chapter: the plan polls it first while the mark is newer than its
-- last poll. label is what the listing showed, so one entry asks for one
-- confirming poll, however many reads show it.
CREATE TABLE listing_marks (
    series_key text PRIMARY KEY REFERENCES series (key) ON DELETE CASCADE,
    label      text NOT NULL CHECK (char_length(label) <= 400),
    marked_at  timestamptz NOT NULL
);
