-- Readers, their API tokens and their web sessions. Secrets are stored only as
-- hashes: a database dump never contains a usable token or session.
CREATE TABLE readers (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text NOT NULL UNIQUE CHECK (char_length(name) BETWEEN 1 AND 64),
    password_hash text NOT NULL,
    is_owner      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reader_id    bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '' CHECK (char_length(name) <= 100),
    token_hash   bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32), -- SHA-256
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_reader ON api_tokens (reader_id);

CREATE TABLE sessions (
    id_hash      bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32), -- SHA-256 of the cookie value
    reader_id    bigint NOT NULL REFERENCES readers (id) ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_reader ON sessions (reader_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
