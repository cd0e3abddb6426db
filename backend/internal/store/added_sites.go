package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// GoneSiteRemoved is the gone reason of the Series of a removed Site.
const GoneSiteRemoved = "site removed"

// AddedSite is a Site an Owner added from a family (table added_sites).
type AddedSite struct {
	Site      string
	Family    string
	Kind      string
	Hosts     []string
	Options   map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
	RemovedAt *time.Time
}

const addedSiteCols = `site, family, kind, hosts, options, created_at, updated_at, removed_at`

func scanAddedSite(row pgx.Row) (AddedSite, error) {
	var a AddedSite
	err := row.Scan(&a.Site, &a.Family, &a.Kind, &a.Hosts, &a.Options, &a.CreatedAt, &a.UpdatedAt, &a.RemovedAt)
	if a.Options == nil {
		a.Options = map[string]string{}
	}
	return a, err
}

// AddedSites lists the added Sites in force (not removed), by name.
func (s *Store) AddedSites(ctx context.Context) ([]AddedSite, error) {
	rows, err := s.db.Query(ctx, `SELECT `+addedSiteCols+` FROM added_sites WHERE removed_at IS NULL ORDER BY site`)
	if err != nil {
		return nil, fmt.Errorf("added sites: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AddedSite, error) { return scanAddedSite(row) })
	if err != nil {
		return nil, fmt.Errorf("added sites: %w", err)
	}
	return out, nil
}

// AddedSiteByName returns an added Site's row, removed or not.
func (s *Store) AddedSiteByName(ctx context.Context, name string) (AddedSite, error) {
	a, err := scanAddedSite(s.db.QueryRow(ctx, `SELECT `+addedSiteCols+` FROM added_sites WHERE site = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return AddedSite{}, fmt.Errorf("added site %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return AddedSite{}, fmt.Errorf("added site %s: %w", name, err)
	}
	return a, nil
}

// ErrSiteNameHeld: a Site name that Bookmarks hold cannot be reused for
// another family.
var ErrSiteNameHeld = errs.New(errs.Conflict, "the name is held by Bookmarks of another Site")

// AddSite stores a new added Site, or brings a removed one back. Re-adding
// a removed Site with the same name and family resumes its Series (their
// gone mark is cleared); any other reuse of a name whose Series Bookmarks
// hold is ErrSiteNameHeld, and a Site in force of that name ErrConflict.
// resumed reports a Site brought back.
func (s *Store) AddSite(ctx context.Context, a AddedSite) (resumed bool, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		old, err := tx.AddedSiteByName(ctx, a.Site)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		case old.RemovedAt == nil:
			return fmt.Errorf("site %s: %w", a.Site, ErrConflict)
		case old.Family == a.Family && old.Kind == a.Kind:
			resumed = true
		}
		if !resumed {
			var held bool
			if err := tx.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM series WHERE site = $1 AND readers > 0)`, a.Site).Scan(&held); err != nil {
				return fmt.Errorf("add site %s: %w", a.Site, err)
			}
			if held {
				return fmt.Errorf("site %s: %w", a.Site, ErrSiteNameHeld)
			}
		}
		opts := a.Options
		if opts == nil {
			opts = map[string]string{}
		}
		if _, err := tx.db.Exec(ctx, `
			INSERT INTO added_sites (site, family, kind, hosts, options) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (site) DO UPDATE SET family = $2, kind = $3, hosts = $4, options = $5,
				created_at = now(), updated_at = now(), removed_at = NULL`,
			a.Site, a.Family, a.Kind, a.Hosts, opts); err != nil {
			return fmt.Errorf("add site %s: %w", a.Site, err)
		}
		if _, err := tx.db.Exec(ctx, `
			UPDATE series SET gone_at = NULL, gone_reason = NULL, next_poll_at = NULL
			WHERE site = $1 AND gone_reason = $2`, a.Site, GoneSiteRemoved); err != nil {
			return fmt.Errorf("resume series of %s: %w", a.Site, err)
		}
		return nil
	})
	return resumed, err
}

// UpdateAddedSite replaces an added Site's hosts or options (nil: leave).
func (s *Store) UpdateAddedSite(ctx context.Context, name string, hosts []string, options map[string]string) error {
	// An untyped nil is SQL NULL; a nil map would be the JSON null.
	var h, o any
	if hosts != nil {
		h = hosts
	}
	if options != nil {
		o = options
	}
	tag, err := s.db.Exec(ctx, `
		UPDATE added_sites SET hosts = coalesce($2, hosts), options = coalesce($3, options), updated_at = now()
		WHERE site = $1 AND removed_at IS NULL`, name, h, o)
	if err != nil {
		return fmt.Errorf("change site %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("added site %s: %w", name, ErrNotFound)
	}
	return nil
}

// RemoveAddedSite removes an added Site: its row stays, marked removed, and
// its Series are gone with the reason "site removed"; their Bookmarks stay.
// n is the number of Series marked.
func (s *Store) RemoveAddedSite(ctx context.Context, name string) (n int64, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		tag, err := tx.db.Exec(ctx, `UPDATE added_sites SET removed_at = now(), updated_at = now() WHERE site = $1 AND removed_at IS NULL`, name)
		if err != nil {
			return fmt.Errorf("remove site %s: %w", name, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("added site %s: %w", name, ErrNotFound)
		}
		tag, err = tx.db.Exec(ctx, `UPDATE series SET gone_at = now(), gone_reason = $2 WHERE site = $1 AND gone_at IS NULL`, name, GoneSiteRemoved)
		if err != nil {
			return fmt.Errorf("mark series of %s gone: %w", name, err)
		}
		n = tag.RowsAffected()
		return nil
	})
	return n, err
}

// SeriesGone returns a Series' gone mark: the reason, "" when it is not gone.
func (s *Store) SeriesGone(ctx context.Context, key string) (string, error) {
	var reason *string
	err := s.db.QueryRow(ctx, `SELECT gone_reason FROM series WHERE key = $1`, key).Scan(&reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("series %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("series %s: %w", key, err)
	}
	if reason == nil {
		return "", nil
	}
	return *reason, nil
}

// AddedSitesChanged is when the added Sites last changed (an add, change or
// removal), zero when none ever was: the userscripts' version follows it.
func (s *Store) AddedSitesChanged(ctx context.Context) (time.Time, error) {
	var t *time.Time
	if err := s.db.QueryRow(ctx, `SELECT max(updated_at) FROM added_sites`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("added sites changed: %w", err)
	}
	if t == nil {
		return time.Time{}, nil
	}
	return *t, nil
}
