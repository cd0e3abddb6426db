-- The Poll's state beside the Series: each change of a Latest Chapter, the
-- back-off of each Site, and the per-host pacing gate shared by every worker
-- and replica (docs/adr/0009-politeness.md).

-- One row per change of a Series' Latest Chapter, with when the Poll first
-- saw it and the successful poll before, which did not: the release happened
-- between the two. Adaptive scheduling and "new chapter" feeds read it.
CREATE TABLE latest_chapter_history (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    series_key    text NOT NULL REFERENCES series (key) ON DELETE CASCADE,
    label         text NOT NULL,
    number        double precision,
    url           text NOT NULL DEFAULT '',
    locked        boolean NOT NULL DEFAULT false,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    prev_poll_at  timestamptz
);
CREATE INDEX latest_chapter_history_series ON latest_chapter_history (series_key, first_seen_at);

-- Reader hints and Owner requests about a Series' next poll. Neither is a
-- Series fact, so neither touches updated_at.
ALTER TABLE series
    ADD COLUMN hint_at          timestamptz, -- last Progress recorded beyond the Latest Chapter
    ADD COLUMN cover_refetch_at timestamptz, -- the Owner asked for a fresh Cover; consumed by the next poll
    ADD COLUMN cover_problem    text NOT NULL DEFAULT '', -- why the last Cover fetch failed, '' after a success
    ADD COLUMN cover_tried_at   timestamptz;

-- The Owner console lists the most recent failing Series.
CREATE INDEX series_failing ON series (last_poll_at DESC) WHERE poll_failures > 0;

-- A Site's back-off: paused after 401/403/429, an uncleared challenge or an
-- access-denied page; the pause doubles with each consecutive refusal.
CREATE TABLE site_state (
    site            text PRIMARY KEY,
    paused_until    timestamptz,
    refusals        integer NOT NULL DEFAULT 0 CHECK (refusals >= 0),
    last_problem    text NOT NULL DEFAULT '',
    last_problem_at timestamptz,
    last_success_at timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The pacing gate: the next moment a request to the host may start. A
-- caller reserves the slot and advances it in one statement, so replicas
-- never hand out the same slot twice.
CREATE TABLE pacing_hosts (
    host    text PRIMARY KEY CHECK (char_length(host) BETWEEN 1 AND 253),
    next_at timestamptz NOT NULL
);
