package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// Reader is a person with an account; the Owner runs the deployment.
type Reader struct {
	ID           int64
	Name         string
	PasswordHash string
	IsOwner      bool
	CreatedAt    time.Time
	// ListVersion is the Reader's list version (reader_lists), read with
	// the token by ReaderByToken only, so a panel refresh that changed
	// nothing costs that one read; zero elsewhere.
	ListVersion int64
}

// ErrLastOwner refuses a change that would leave the deployment without an Owner.
var ErrLastOwner = errs.New(errs.Conflict, "the last Owner cannot be removed or demoted")

const readerCols = `id, name, password_hash, is_owner, created_at`

func scanReader(row pgx.Row) (Reader, error) {
	var r Reader
	err := row.Scan(&r.ID, &r.Name, &r.PasswordHash, &r.IsOwner, &r.CreatedAt)
	return r, notFound(err)
}

// CreateReader adds a Reader. A taken name gives ErrConflict.
func (s *Store) CreateReader(ctx context.Context, name, passwordHash string, owner bool) (Reader, error) {
	r, err := scanReader(s.db.QueryRow(ctx,
		`INSERT INTO readers (name, password_hash, is_owner) VALUES ($1, $2, $3) RETURNING `+readerCols,
		name, passwordHash, owner))
	if isUniqueViolation(err) {
		return Reader{}, fmt.Errorf("reader %q: %w", name, ErrConflict)
	}
	if err != nil {
		return Reader{}, fmt.Errorf("create reader %q: %w", name, err)
	}
	return r, nil
}

// CreateFirstOwner creates the Owner only while no Reader exists, so two
// browsers racing through first-run set-up cannot both become Owners.
func (s *Store) CreateFirstOwner(ctx context.Context, name, passwordHash string) (Reader, error) {
	var r Reader
	err := s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `LOCK TABLE readers IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		n, err := tx.CountReaders(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return ErrConflict
		}
		r, err = tx.CreateReader(ctx, name, passwordHash, true)
		return err
	})
	return r, err
}

// ReaderByName finds a Reader by name.
func (s *Store) ReaderByName(ctx context.Context, name string) (Reader, error) {
	return scanReader(s.db.QueryRow(ctx, `SELECT `+readerCols+` FROM readers WHERE name = $1`, name))
}

// ReaderByID finds a Reader by id.
func (s *Store) ReaderByID(ctx context.Context, id int64) (Reader, error) {
	return scanReader(s.db.QueryRow(ctx, `SELECT `+readerCols+` FROM readers WHERE id = $1`, id))
}

// CountReaders counts every Reader.
func (s *Store) CountReaders(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM readers`).Scan(&n)
	return n, err
}

// ReaderSummary is a Reader as the Owner console lists them.
type ReaderSummary struct {
	Reader
	Bookmarks int
	Tokens    int
}

// ListReaders lists every Reader with their Bookmark and live token counts.
func (s *Store) ListReaders(ctx context.Context) ([]ReaderSummary, error) {
	rows, err := s.db.Query(ctx, `
		SELECT r.id, r.name, r.password_hash, r.is_owner, r.created_at,
		       (SELECT count(*) FROM bookmarks b WHERE b.reader_id = r.id),
		       (SELECT count(*) FROM api_tokens t WHERE t.reader_id = r.id AND t.revoked_at IS NULL)
		FROM readers r ORDER BY r.name`)
	if err != nil {
		return nil, fmt.Errorf("list readers: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReaderSummary, error) {
		var r ReaderSummary
		err := row.Scan(&r.ID, &r.Name, &r.PasswordHash, &r.IsOwner, &r.CreatedAt, &r.Bookmarks, &r.Tokens)
		return r, err
	})
}

// SetPassword replaces a Reader's password hash and ends their web sessions.
func (s *Store) SetPassword(ctx context.Context, id int64, passwordHash string) error {
	return s.InTx(ctx, func(tx *Store) error {
		tag, err := tx.db.Exec(ctx, `UPDATE readers SET password_hash = $2, updated_at = now() WHERE id = $1`, id, passwordHash)
		if err != nil {
			return fmt.Errorf("set password: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.db.Exec(ctx, `DELETE FROM sessions WHERE reader_id = $1`, id)
		return err
	})
}

// SetOwner grants or removes the Owner flag, never removing the last Owner.
func (s *Store) SetOwner(ctx context.Context, id int64, owner bool) error {
	return s.InTx(ctx, func(tx *Store) error {
		if !owner {
			if err := tx.keepAnOwner(ctx, id); err != nil {
				return err
			}
		}
		tag, err := tx.db.Exec(ctx, `UPDATE readers SET is_owner = $2, updated_at = now() WHERE id = $1`, id, owner)
		if err != nil {
			return fmt.Errorf("set owner flag: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// DeleteReader removes a Reader with their Bookmarks, tokens and sessions,
// never the last Owner.
func (s *Store) DeleteReader(ctx context.Context, id int64) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.keepAnOwner(ctx, id); err != nil {
			return err
		}
		tag, err := tx.db.Exec(ctx, `DELETE FROM readers WHERE id = $1`, id)
		if err != nil {
			return fmt.Errorf("delete reader: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// keepAnOwner fails when id is the only Owner. The row locks serialise two
// Owners demoting each other at once.
func (s *Store) keepAnOwner(ctx context.Context, id int64) error {
	rows, err := s.db.Query(ctx, `SELECT id FROM readers WHERE is_owner ORDER BY id FOR UPDATE`)
	if err != nil {
		return fmt.Errorf("lock owners: %w", err)
	}
	owners, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("lock owners: %w", err)
	}
	if len(owners) == 1 && owners[0] == id {
		return ErrLastOwner
	}
	return nil
}
