package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Site listings (poll/listing.go, docs/adr/0028-site-listings.md): each
// Site's listing state and the marks it leaves on held Series.

// The states of a Site's listing.
const (
	ListingNew        = "new"
	ListingHealthy    = "healthy"
	ListingFailing    = "failing"
	ListingOverflowed = "overflowed"
)

// SiteListing is a Site's listing as the Poll last read it.
type SiteListing struct {
	Site    string
	State   string
	Problem string
	// GoodReads counts the good reads in a row.
	GoodReads                           int
	ReadAt, OKAt, NextAt, FallbackUntil *time.Time
	// Entries is how many entries the last good read showed; Rate the
	// releases per hour the reads of the last day showed.
	Entries int
	Rate    float64
	// Seen are the last good read's entries as "key|label".
	Seen     []string
	Reads    []ListingRead
	Confirms []time.Time
}

// ListingRead is one read of a listing: when, and how many entries it
// showed that the read before it did not.
type ListingRead struct {
	At    time.Time `json:"at"`
	Fresh int       `json:"fresh"`
}

// SiteListingOf reads a Site's listing; a zero one in state new when the
// Poll has never read it.
func (s *Store) SiteListingOf(ctx context.Context, site string) (SiteListing, error) {
	all, err := s.siteListings(ctx, `WHERE site = $1`, site)
	if err != nil || len(all) == 0 {
		return SiteListing{Site: site, State: ListingNew}, err
	}
	return all[0], nil
}

// SiteListings reads every Site's listing the Poll has read, by Site.
func (s *Store) SiteListings(ctx context.Context) (map[string]SiteListing, error) {
	all, err := s.siteListings(ctx, ``)
	if err != nil {
		return nil, err
	}
	out := make(map[string]SiteListing, len(all))
	for _, l := range all {
		out[l.Site] = l
	}
	return out, nil
}

func (s *Store) siteListings(ctx context.Context, where string, args ...any) ([]SiteListing, error) {
	rows, err := s.db.Query(ctx, `
		SELECT site, state, problem, good_reads, read_at, ok_at, next_at, fallback_until, entries, rate, seen, reads, confirms
		FROM site_listings `+where+` ORDER BY site`, args...)
	if err != nil {
		return nil, fmt.Errorf("site listings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SiteListing, error) {
		var l SiteListing
		var reads []byte
		err := row.Scan(&l.Site, &l.State, &l.Problem, &l.GoodReads, &l.ReadAt, &l.OKAt, &l.NextAt, &l.FallbackUntil,
			&l.Entries, &l.Rate, &l.Seen, &reads, &l.Confirms)
		if err == nil && len(reads) > 0 {
			err = json.Unmarshal(reads, &l.Reads)
		}
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("site listings: %w", err)
	}
	return out, nil
}

// SaveSiteListing writes a Site's listing state as a whole.
func (s *Store) SaveSiteListing(ctx context.Context, l SiteListing) error {
	if l.Reads == nil {
		l.Reads = []ListingRead{}
	}
	reads, err := json.Marshal(l.Reads)
	if err != nil {
		return fmt.Errorf("save listing of %s: %w", l.Site, err)
	}
	if l.Seen == nil {
		l.Seen = []string{}
	}
	if l.Confirms == nil {
		l.Confirms = []time.Time{}
	}
	if len(l.Problem) > 2000 {
		l.Problem = l.Problem[:2000]
	}
	_, err = s.db.Exec(ctx, `
		INSERT INTO site_listings (site, state, problem, good_reads, read_at, ok_at, next_at, fallback_until, entries, rate, seen, reads, confirms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (site) DO UPDATE SET state = $2, problem = $3, good_reads = $4, read_at = $5, ok_at = $6, next_at = $7,
			fallback_until = $8, entries = $9, rate = $10, seen = $11, reads = $12, confirms = $13`,
		l.Site, l.State, l.Problem, l.GoodReads, l.ReadAt, l.OKAt, l.NextAt, l.FallbackUntil, l.Entries, l.Rate, l.Seen, reads, l.Confirms)
	if err != nil {
		return fmt.Errorf("save listing of %s: %w", l.Site, err)
	}
	return nil
}

// SetListingNext records when a Site's listing is read next.
func (s *Store) SetListingNext(ctx context.Context, site string, at time.Time) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_listings (site, next_at) VALUES ($1, $2)
		ON CONFLICT (site) DO UPDATE SET next_at = $2`, site, at)
	if err != nil {
		return fmt.Errorf("listing of %s: next read: %w", site, err)
	}
	return nil
}

// ListingTarget is a held Series as a listing read compares it: its stored
// Latest Chapter, and the label a listing last marked it with, when, and how
// many confirming polls that mark has asked for.
type ListingTarget struct {
	Key          string
	LatestLabel  string
	LatestNumber *float64
	LastPollAt   *time.Time
	MarkLabel    string
	MarkAt       *time.Time
	MarkTries    int
}

// ListingTargets reads the held Series of a Site among keys.
func (s *Store) ListingTargets(ctx context.Context, site string, keys []string) (map[string]ListingTarget, error) {
	rows, err := s.db.Query(ctx, `
		SELECT s.key, s.latest_label, s.latest_number, s.last_poll_at, coalesce(m.label, ''), m.marked_at, coalesce(m.tries, 0)
		FROM series s LEFT JOIN listing_marks m ON m.series_key = s.key
		WHERE s.site = $1 AND s.key = ANY($2) AND s.readers > 0 AND s.gone_at IS NULL`, site, keys)
	if err != nil {
		return nil, fmt.Errorf("listing targets of %s: %w", site, err)
	}
	out := map[string]ListingTarget{}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var t ListingTarget
		err := row.Scan(&t.Key, &t.LatestLabel, &t.LatestNumber, &t.LastPollAt, &t.MarkLabel, &t.MarkAt, &t.MarkTries)
		out[t.Key] = t
		return struct{}{}, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing targets of %s: %w", site, err)
	}
	return out, nil
}

// ListingMark is a listing's mark on a held Series. Tries counts the
// confirming polls asked for this label (zero is read as one).
type ListingMark struct {
	Key, Label string
	At         time.Time
	Tries      int
}

// MarkListing records marks, replacing a Series' older one.
func (s *Store) MarkListing(ctx context.Context, marks []ListingMark) error {
	if len(marks) == 0 {
		return nil
	}
	keys, labels, ats := make([]string, len(marks)), make([]string, len(marks)), make([]time.Time, len(marks))
	tries := make([]int32, len(marks))
	for i, m := range marks {
		keys[i], labels[i], ats[i], tries[i] = m.Key, m.Label, m.At, int32(min(max(m.Tries, 1), 100))
		if len(labels[i]) > 400 {
			labels[i] = labels[i][:400]
		}
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO listing_marks (series_key, label, marked_at, tries)
		SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::smallint[])
		ON CONFLICT (series_key) DO UPDATE SET label = excluded.label, marked_at = excluded.marked_at, tries = excluded.tries`,
		keys, labels, ats, tries)
	if err != nil {
		return fmt.Errorf("mark listing: %w", err)
	}
	return nil
}

// ListingMarks are the marks on a Site's Series, by key.
func (s *Store) ListingMarks(ctx context.Context, site string) (map[string]time.Time, error) {
	rows, err := s.db.Query(ctx, `
		SELECT m.series_key, m.marked_at FROM listing_marks m JOIN series s ON s.key = m.series_key WHERE s.site = $1`, site)
	if err != nil {
		return nil, fmt.Errorf("listing marks of %s: %w", site, err)
	}
	out := map[string]time.Time{}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var k string
		var at time.Time
		err := row.Scan(&k, &at)
		out[k] = at
		return struct{}{}, err
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("listing marks of %s: %w", site, err)
	}
	return out, nil
}

// ListingReserve is the largest share of a Site's budget a plan of the last
// hour gave its listing (0 when none), from SetListingReserve.
func (s *Store) ListingReserve(ctx context.Context, site string, now time.Time) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `
		SELECT coalesce(max(reserve), 0) FROM site_listings WHERE site = $1 AND reserve_at > $2`, site, now.Add(-time.Hour)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("listing reserve of %s: %w", site, err)
	}
	return n, nil
}

// SetListingReserve records a plan's share of the budget for the listing:
// kept when it is at least the stored one or that is an hour old.
func (s *Store) SetListingReserve(ctx context.Context, site string, reserve int, now time.Time) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_listings (site, reserve, reserve_at) VALUES ($1, $2, $3)
		ON CONFLICT (site) DO UPDATE SET reserve = $2, reserve_at = $3
		WHERE site_listings.reserve <= $2 OR site_listings.reserve_at IS NULL OR site_listings.reserve_at <= $3 - interval '1 hour'`,
		site, reserve, now)
	if err != nil {
		return fmt.Errorf("listing reserve of %s: %w", site, err)
	}
	return nil
}
