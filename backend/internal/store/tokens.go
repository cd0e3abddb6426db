package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Token is an API token as listed to its Reader; the token itself is never
// stored, only its SHA-256.
type Token struct {
	ID         int64
	ReaderID   int64
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// tokenTouchEvery bounds how often a token's last-used time is written: a
// panel refreshing every few seconds must not turn every read into a write.
const tokenTouchEvery = time.Minute

// CreateToken stores the hash of a new token.
func (s *Store) CreateToken(ctx context.Context, readerID int64, name string, hash []byte) (Token, error) {
	var t Token
	err := s.db.QueryRow(ctx, `
		INSERT INTO api_tokens (reader_id, name, token_hash) VALUES ($1, $2, $3)
		RETURNING id, reader_id, name, created_at, last_used_at, revoked_at`,
		readerID, name, hash).Scan(&t.ID, &t.ReaderID, &t.Name, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	if err != nil {
		return Token{}, fmt.Errorf("create token: %w", err)
	}
	return t, nil
}

// ReaderByToken finds the Reader holding a live token, by its hash, and
// records the use at most once a minute.
func (s *Store) ReaderByToken(ctx context.Context, hash []byte) (Reader, error) {
	var r Reader
	var tokenID int64
	var lastUsed *time.Time
	err := s.db.QueryRow(ctx, `
		SELECT r.id, r.name, r.password_hash, r.is_owner, r.created_at, t.id, t.last_used_at,
		       coalesce(l.version, 0)
		FROM api_tokens t JOIN readers r ON r.id = t.reader_id
		LEFT JOIN reader_lists l ON l.reader_id = r.id
		WHERE t.token_hash = $1 AND t.revoked_at IS NULL`, hash).
		Scan(&r.ID, &r.Name, &r.PasswordHash, &r.IsOwner, &r.CreatedAt, &tokenID, &lastUsed, &r.ListVersion)
	if err != nil {
		return Reader{}, notFound(err)
	}
	if lastUsed == nil || time.Since(*lastUsed) > tokenTouchEvery {
		if _, err := s.db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = $1`, tokenID); err != nil {
			return Reader{}, fmt.Errorf("record token use: %w", err)
		}
	}
	return r, nil
}

// ReadersByTokens is ReaderByToken for many token hashes in one read: the
// Readers found, by hash (as a string); a hash with no live token is left
// out. Uses are recorded as ReaderByToken records them, in one write.
func (s *Store) ReadersByTokens(ctx context.Context, hashes [][]byte) (map[string]Reader, error) {
	rows, err := s.db.Query(ctx, `
		SELECT t.token_hash, r.id, r.name, r.password_hash, r.is_owner, r.created_at, t.id, t.last_used_at,
		       coalesce(l.version, 0)
		FROM api_tokens t JOIN readers r ON r.id = t.reader_id
		LEFT JOIN reader_lists l ON l.reader_id = r.id
		WHERE t.token_hash = ANY($1) AND t.revoked_at IS NULL`, hashes)
	if err != nil {
		return nil, fmt.Errorf("readers by tokens: %w", err)
	}
	defer rows.Close()
	out := make(map[string]Reader, len(hashes))
	var touch []int64
	for rows.Next() {
		var r Reader
		var hash []byte
		var tokenID int64
		var lastUsed *time.Time
		if err := rows.Scan(&hash, &r.ID, &r.Name, &r.PasswordHash, &r.IsOwner, &r.CreatedAt, &tokenID, &lastUsed, &r.ListVersion); err != nil {
			return nil, fmt.Errorf("readers by tokens: %w", err)
		}
		out[string(hash)] = r
		if lastUsed == nil || time.Since(*lastUsed) > tokenTouchEvery {
			touch = append(touch, tokenID)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("readers by tokens: %w", err)
	}
	if len(touch) > 0 {
		if _, err := s.db.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE id = ANY($1)`, touch); err != nil {
			return nil, fmt.Errorf("record token use: %w", err)
		}
	}
	return out, nil
}

// ListTokens lists a Reader's tokens, newest first, revoked ones included.
func (s *Store) ListTokens(ctx context.Context, readerID int64) ([]Token, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, reader_id, name, created_at, last_used_at, revoked_at
		FROM api_tokens WHERE reader_id = $1 ORDER BY created_at DESC, id DESC`, readerID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Token, error) {
		var t Token
		err := row.Scan(&t.ID, &t.ReaderID, &t.Name, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
		return t, err
	})
}

// RevokeToken revokes one of a Reader's tokens. Another Reader's token id
// gives ErrNotFound, so ids reveal nothing.
func (s *Store) RevokeToken(ctx context.Context, readerID, tokenID int64) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE api_tokens SET revoked_at = now()
		WHERE id = $1 AND reader_id = $2 AND revoked_at IS NULL`, tokenID, readerID)
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Session is a web login.
type Session struct {
	ReaderID  int64
	CSRFToken string
	ExpiresAt time.Time
}

// CreateSession stores the hash of a new session id.
func (s *Store) CreateSession(ctx context.Context, idHash []byte, readerID int64, csrf string, expires time.Time) error {
	_, err := s.db.Exec(ctx, `INSERT INTO sessions (id_hash, reader_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4)`,
		idHash, readerID, csrf, expires)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// SessionByHash finds a live session and its Reader.
func (s *Store) SessionByHash(ctx context.Context, idHash []byte) (Session, Reader, error) {
	var ses Session
	var r Reader
	err := s.db.QueryRow(ctx, `
		SELECT s.reader_id, s.csrf_token, s.expires_at, r.id, r.name, r.password_hash, r.is_owner, r.created_at
		FROM sessions s JOIN readers r ON r.id = s.reader_id
		WHERE s.id_hash = $1 AND s.expires_at > now()`, idHash).
		Scan(&ses.ReaderID, &ses.CSRFToken, &ses.ExpiresAt, &r.ID, &r.Name, &r.PasswordHash, &r.IsOwner, &r.CreatedAt)
	if err != nil {
		return Session{}, Reader{}, notFound(err)
	}
	return ses, r, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, idHash []byte) error {
	_, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE id_hash = $1`, idHash)
	return err
}

// DeleteExpiredSessions removes sessions past their expiry.
func (s *Store) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= now()`)
	return tag.RowsAffected(), err
}
