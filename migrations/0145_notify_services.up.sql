-- Notification targets by Apprise URL (Discord, Telegram, Gotify, Matrix,
-- ntfy, signed JSON webhooks), their credentials sealed with SECRET_KEY,
-- the Reader's terms (each chapter, a threshold, a digest) and per-Series
-- mutes (docs/notifications.md, ADR 0024).

ALTER TABLE notify_targets DROP CONSTRAINT notify_targets_kind_check;
ALTER TABLE notify_targets DROP CONSTRAINT notify_targets_url_check;

-- The https URLs saved before become their Apprise forms: an ntfy topic URL
-- is ntfys://host/topic, a webhook jsons://host/path. Their URLs stay in
-- the clear as before (an ntfy ?auth= token included) until saved again.
UPDATE notify_targets SET url = 'ntfys://' || substr(url, 9) WHERE kind = 'ntfy';
UPDATE notify_targets SET kind = 'json', url = 'jsons://' || substr(url, 9) WHERE kind = 'webhook';

ALTER TABLE notify_targets
    ADD CONSTRAINT notify_targets_kind_check CHECK (kind IN ('discord', 'tgram', 'gotify', 'matrix', 'ntfy', 'json')),
    ADD CONSTRAINT notify_targets_url_check CHECK (char_length(url) <= 2048),
    -- url is what a Reader is shown: the masked form when sealed_url holds
    -- the full one, else the full URL (it has no secret).
    ADD COLUMN sealed_url bytea,
    -- A jsons:// target's whsec_ signing secret, sealed; NULL: unsigned.
    ADD COLUMN signing_secret bytea,
    ADD COLUMN name text NOT NULL DEFAULT '' CHECK (char_length(name) <= 100),
    ADD COLUMN mode text NOT NULL DEFAULT 'each' CHECK (mode IN ('each', 'threshold', 'digest')),
    ADD COLUMN threshold integer NOT NULL DEFAULT 1 CHECK (threshold BETWEEN 1 AND 1000),
    ADD COLUMN digest text NOT NULL DEFAULT 'daily' CHECK (digest IN ('daily', 'weekly')),
    ADD COLUMN digest_hour integer NOT NULL DEFAULT 9 CHECK (digest_hour BETWEEN 0 AND 23),
    ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC' CHECK (char_length(time_zone) BETWEEN 1 AND 64),
    -- When the last digest left: the next is due at the first digest hour
    -- after it.
    ADD COLUMN last_digest_at timestamptz;

-- A muted Series enters no target's ledger of its Reader.
CREATE TABLE notify_mutes (
    reader_id  bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    series_key text NOT NULL REFERENCES series (key) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reader_id, series_key)
);
