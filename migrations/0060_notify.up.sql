-- New-chapter notifications: each Reader's private Atom feed and their push
-- targets (ntfy, JSON webhooks), with the ledger that sends each new Latest
-- Chapter once per target (docs/notifications.md).

-- One feed secret per Reader; only its SHA-256 is stored, like API tokens.
-- Revoking deletes the row; regenerating replaces it.
CREATE TABLE feed_secrets (
    reader_id    bigint PRIMARY KEY REFERENCES readers (id) ON DELETE CASCADE,
    secret_hash  bytea NOT NULL UNIQUE CHECK (octet_length(secret_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);

CREATE TABLE notify_targets (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reader_id  bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('ntfy', 'webhook')),
    url        text NOT NULL CHECK (url ~ '^https://' AND char_length(url) <= 2048),
    -- Chapters first seen before the target existed are never sent to it.
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (reader_id, kind, url)
);

-- The delivery ledger: one row per target and Latest Chapter history row.
-- The primary key makes a chapter enter a target's queue once, whichever
-- replica scans; the sender holds the rows it sends locked until it has
-- recorded the outcome, so no retry and no other replica sends them again.
CREATE TABLE notify_deliveries (
    target_id  bigint NOT NULL REFERENCES notify_targets (id) ON DELETE CASCADE,
    history_id bigint NOT NULL REFERENCES latest_chapter_history (id) ON DELETE CASCADE,
    reader_id  bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    status     text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    attempts   integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    done_at    timestamptz,
    PRIMARY KEY (target_id, history_id)
);
CREATE INDEX notify_deliveries_pending ON notify_deliveries (target_id, history_id) WHERE status = 'pending';
CREATE INDEX notify_deliveries_history ON notify_deliveries (history_id);

-- The scan reads the recent history only.
CREATE INDEX latest_chapter_history_seen ON latest_chapter_history (first_seen_at);
