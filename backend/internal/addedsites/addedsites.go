// Package addedsites keeps the Sites an Owner adds at run time from a family
// (docs/adr/0019): it validates a definition against the registry, stores it
// (table added_sites), and rebuilds the registry's added Sites from the store
// on every replica, every SITES_REFRESH, so a change reaches every replica
// without a restart. The API, the web console and `lectern site add|list|remove`
// all go through Service: one decision in one place.
package addedsites

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// DefaultRefresh is SITES_REFRESH's default.
const DefaultRefresh = 20 * time.Second

// Def is a Site's definition as the Owner gives it.
type Def struct {
	Site    string            `json:"site"`
	Family  string            `json:"family"`
	Hosts   []string          `json:"hosts"`
	Kind    string            `json:"kind"`
	Options map[string]string `json:"options"`
}

// Service adds, changes, removes and loads the added Sites.
type Service struct {
	Store    *store.Store
	Registry *latest.Registry
	Logger   *slog.Logger
	// Pages is a Site's pinned, paced page fetcher (fetch.Pages over the
	// replica's fetch tree), for Probe; nil: Probe is unavailable.
	Pages func(site *latest.Site) latest.PageFetcher

	changed atomic.Int64
}

// ProbeTimeout bounds a probe's fetches (a series page and, for madara's
// ajax list, its chapter list), each paced like any request to its host.
const ProbeTimeout = time.Minute

// Probe is the console's "Test this Site": it fetches the series page at
// pageURL now, as a Site of d's family on that URL's host would read it
// (the chapter list too when the family needs a second request), and
// answers every question, as `lectern probe` prints them. The Site is
// named after the family, so the key reads FAMILY:slug. Nothing is stored.
func (s *Service) Probe(ctx context.Context, d Def, pageURL string) (latest.ProbeResult, error) {
	u, err := url.Parse(strings.TrimSpace(pageURL))
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil {
		return latest.ProbeResult{}, errs.New(errs.Invalid, "the URL must be an https URL of a series page")
	}
	site, err := latest.NewFamilySite(d.Family, d.Family, []string{u.Hostname()}, latest.Kind(d.Kind), d.Options)
	if err != nil {
		return latest.ProbeResult{}, invalid(err)
	}
	if s.Pages == nil {
		return latest.ProbeResult{}, errs.New(errs.Unavailable, "this replica cannot fetch Site pages")
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	pages := s.Pages(site)
	body, err := pages.FetchPage(ctx, u.String())
	if err != nil {
		return latest.ProbeResult{}, fmt.Errorf("%w: fetch %s: %w", ErrProbeFetch, u.Redacted(), err)
	}
	return latest.ProbeWith(ctx, site, latest.PageSeries, u.String(), body, pages), nil
}

// ErrProbeFetch: the page to probe could not be fetched.
var ErrProbeFetch = errors.New("the page could not be fetched")

// Changed is when the added Sites last changed as of the last refresh, in
// Unix seconds (0: never): the same on every replica, so the userscripts
// each serves carry the same @version.
func (s *Service) Changed() int64 { return s.changed.Load() }

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// invalid makes a refused definition a 422 naming the fault.
func invalid(err error) error {
	if errors.Is(err, latest.ErrInvalidSite) {
		return errs.New(errs.Invalid, strings.TrimPrefix(err.Error(), latest.ErrInvalidSite.Error()+": "))
	}
	return err
}

// Build makes the registry entry of a definition, refusing what
// NewFamilySite refuses and a host another Site already has.
func (s *Service) Build(d Def) (*latest.Site, error) {
	site, err := latest.NewFamilySite(d.Site, d.Family, d.Hosts, latest.Kind(d.Kind), d.Options)
	if err != nil {
		return nil, invalid(err)
	}
	for _, h := range site.Hosts {
		if other, ok := s.Registry.HostSite(h); ok && other.Name != site.Name {
			return nil, errs.New(errs.Invalid, fmt.Sprintf("host %s is already a host of the Site %s", h, other.Name))
		}
	}
	return site, nil
}

// Add stores a new Site and puts it in this replica's registry at once;
// the others pick it up at their next refresh. resumed reports a removed
// Site brought back with its Bookmarks.
func (s *Service) Add(ctx context.Context, d Def) (site *latest.Site, resumed bool, err error) {
	if _, ok := s.Registry.Lookup(d.Site); ok {
		if latest.IsBuiltIn(d.Site) {
			return nil, false, errs.New(errs.Invalid, d.Site+" is a built-in Site")
		}
		return nil, false, errs.New(errs.Conflict, "a Site named "+d.Site+" exists")
	}
	if site, err = s.Build(d); err != nil {
		return nil, false, err
	}
	resumed, err = s.Store.AddSite(ctx, store.AddedSite{Site: site.Name, Family: site.Family, Kind: string(site.Kind), Hosts: site.Hosts, Options: site.Options})
	if errors.Is(err, store.ErrSiteNameHeld) {
		return nil, false, errs.New(errs.Conflict, "Bookmarks hold Series of an earlier Site named "+d.Site+" of another family or Library; choose another name")
	}
	if err != nil {
		return nil, false, err
	}
	s.log().InfoContext(ctx, "site added", "site", site.Name, "family", site.Family, "hosts", strings.Join(site.Hosts, ","), "resumed", resumed)
	if err := s.Refresh(ctx); err != nil {
		return nil, false, err
	}
	// The registry's entry: the one with its pace filled in.
	if in, ok := s.Registry.Lookup(site.Name); ok {
		site = in
	}
	return site, resumed, nil
}

// Change replaces an added Site's hosts or options (nil: leave them). A
// built-in Site has neither to change.
func (s *Service) Change(ctx context.Context, name string, hosts []string, options map[string]string) error {
	if latest.IsBuiltIn(name) {
		return errs.New(errs.Invalid, name+" is a built-in Site: its hosts and options are not the Owner's to change")
	}
	old, err := s.Store.AddedSiteByName(ctx, name)
	if err != nil || old.RemovedAt != nil {
		return errs.New(errs.NotFound, "no added Site "+name)
	}
	d := Def{Site: name, Family: old.Family, Kind: old.Kind, Hosts: old.Hosts, Options: old.Options}
	if hosts != nil {
		d.Hosts = hosts
	}
	if options != nil {
		d.Options = options
	}
	site, err := s.Build(d)
	if err != nil {
		return err
	}
	var h []string
	if hosts != nil {
		h = site.Hosts
	}
	if err := s.Store.UpdateAddedSite(ctx, name, h, options); err != nil {
		return err
	}
	s.log().InfoContext(ctx, "site changed", "site", name, "hosts", strings.Join(site.Hosts, ","))
	return s.Refresh(ctx)
}

// Remove removes an added Site: its polling stops, its Bookmarks stay and
// their Series are gone ("site removed") until it is added back.
func (s *Service) Remove(ctx context.Context, name string) error {
	if latest.IsBuiltIn(name) {
		return errs.New(errs.Invalid, name+" is a built-in Site and cannot be removed")
	}
	n, err := s.Store.RemoveAddedSite(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return errs.New(errs.NotFound, "no added Site "+name)
	}
	if err != nil {
		return err
	}
	s.log().InfoContext(ctx, "site removed", "site", name, "series_gone", n)
	return s.Refresh(ctx)
}

// List returns the added Sites in force, by name.
func (s *Service) List(ctx context.Context) ([]store.AddedSite, error) {
	return s.Store.AddedSites(ctx)
}

// Refresh rebuilds the registry's added Sites from the store. A row that no
// longer builds (a family option this version refuses) is left out and
// logged; the others still load.
func (s *Service) Refresh(ctx context.Context) error {
	changed, err := s.Store.AddedSitesChanged(ctx)
	if err != nil {
		return fmt.Errorf("refresh added sites: %w", err)
	}
	rows, err := s.Store.AddedSites(ctx)
	if err != nil {
		return fmt.Errorf("refresh added sites: %w", err)
	}
	sites := make([]*latest.Site, 0, len(rows))
	for _, a := range rows {
		site, err := latest.NewFamilySite(a.Site, a.Family, a.Hosts, latest.Kind(a.Kind), a.Options)
		if err != nil {
			s.log().ErrorContext(ctx, "added site left out of the registry", "site", a.Site, "err", err)
			continue
		}
		sites = append(sites, site)
	}
	var version int64
	if !changed.IsZero() {
		version = changed.Unix()
	}
	if same(s.Registry.Added(), sites) {
		s.changed.Store(version)
		return nil
	}
	if err := s.Registry.SetAdded(sites...); err != nil {
		return fmt.Errorf("refresh added sites: %w", err)
	}
	s.changed.Store(version)
	s.log().InfoContext(ctx, "site registry refreshed", "added_sites", len(sites))
	return nil
}

// same reports whether the registry already holds these definitions, so an
// unchanged refresh keeps the entries (and the log) as they are.
func same(cur, next []*latest.Site) bool {
	if len(cur) != len(next) {
		return false
	}
	byName := map[string]*latest.Site{}
	for _, c := range cur {
		byName[c.Name] = c
	}
	for _, n := range next {
		c := byName[n.Name]
		if c == nil || c.Family != n.Family || c.Kind != n.Kind || !slices.Equal(c.Hosts, n.Hosts) || !equalMaps(c.Options, n.Options) {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Run refreshes the registry every interval until ctx ends. A failed
// refresh keeps the registry as it was and is logged; the next one retries.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultRefresh
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
				s.log().WarnContext(ctx, "site registry not refreshed", "err", err)
			}
		}
	}
}
