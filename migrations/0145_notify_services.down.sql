DROP TABLE notify_mutes;
DELETE FROM notify_targets WHERE kind NOT IN ('ntfy', 'json') OR sealed_url IS NOT NULL;
ALTER TABLE notify_targets
    DROP COLUMN sealed_url, DROP COLUMN signing_secret, DROP COLUMN name, DROP COLUMN mode,
    DROP COLUMN threshold, DROP COLUMN digest, DROP COLUMN digest_hour, DROP COLUMN time_zone,
    DROP COLUMN last_digest_at,
    DROP CONSTRAINT notify_targets_kind_check, DROP CONSTRAINT notify_targets_url_check;
DELETE FROM notify_targets WHERE url NOT LIKE 'ntfys://%' AND url NOT LIKE 'jsons://%';
UPDATE notify_targets SET url = 'https://' || substr(url, 9);
UPDATE notify_targets SET kind = 'webhook' WHERE kind = 'json';
ALTER TABLE notify_targets
    ADD CONSTRAINT notify_targets_kind_check CHECK (kind IN ('ntfy', 'webhook')),
    ADD CONSTRAINT notify_targets_url_check CHECK (url ~ '^https://' AND char_length(url) <= 2048);
