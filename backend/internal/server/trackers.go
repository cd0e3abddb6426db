package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

// newTrackers builds the trackers over the replica's River client: the
// three clients on the Owner's endpoints (plain HTTP clients: the Owner's
// configuration, not addresses from third-party pages, so not the
// destination gate), and the box that seals tokens when SECRET_KEY is set.
// Without it the replica serves as usual and linking answers 503.
func newTrackers(d Deps, client *river.Client[pgx.Tx]) (*tracker.Service, error) {
	cfg := d.Config
	paces, err := cfg.TrackerPaces()
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	s := &tracker.Service{
		Store: d.Store, River: client, BaseURL: cfg.PublicBaseURL, Paces: paces, Logger: d.Logger,
		Clients: map[string]tracker.Client{
			tracker.AniList: tracker.NewAniList(cfg.AniListAPIURL, cfg.AniListOAuthURL, cfg.AniListClientID, cfg.AniListClientSecret,
				cfg.UserAgent, hc),
			tracker.MyAnimeList:  tracker.NewMAL(cfg.MALAPIURL, cfg.MALOAuthURL, cfg.MALClientID, cfg.MALClientSecret, cfg.UserAgent, hc),
			tracker.MangaUpdates: tracker.NewMangaUpdates(cfg.MangaUpdatesAPIURL, cfg.UserAgent, hc),
		},
	}
	if cfg.SecretKey != "" {
		key, err := secretbox.ParseKey(cfg.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("SECRET_KEY: %w", err)
		}
		if s.Box, err = secretbox.New(key); err != nil {
			return nil, fmt.Errorf("SECRET_KEY: %w", err)
		}
	}
	return s, nil
}
