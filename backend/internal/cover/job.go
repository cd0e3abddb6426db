// Package cover acquires and serves Covers: the fetch_cover job routes a
// Cover address by its shape (the destination gate, or a cleared browser
// tab), stores the bytes content-addressed in package blob and records them
// on the Series; the public route serves them at /covers/{address}
// (docs/adr/0007-covers-content-addressed.md).
package cover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// FetchArgs is the fetch_cover job: fetch the Cover a poll found on a
// Series page, store its bytes, and record it on the Series.
type FetchArgs struct {
	Key  string `json:"key" river:"unique"`
	Site string `json:"site"`
	// Address is the Cover's URL as the series page gave it.
	Address string `json:"address"`
	// SeriesURL is the page it came from: the Referer, and the page a
	// browser-only Cover is fetched from inside.
	SeriesURL string `json:"series_url"`
	// Refetch replaces an existing Cover (the Owner's request); without it
	// a Series that has a Cover is left alone.
	Refetch bool `json:"refetch,omitempty"`
}

// Kind is River's job kind.
func (FetchArgs) Kind() string { return riverjob.FetchCover }

// InsertOpts: one Cover job in flight per Series, and a single attempt: a
// failure is retried by the Series' next poll, never by a retry queue of
// the Cover's own.
func (FetchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, Priority: 2, UniqueOpts: riverjob.UniqueInFlight()}
}

// Queue queues Cover jobs; it implements poll.CoverQueue.
type Queue struct {
	Client *river.Client[pgx.Tx]
}

// QueueCover implements poll.CoverQueue.
func (q Queue) QueueCover(ctx context.Context, args FetchArgs) error {
	if _, err := q.Client.Insert(ctx, args, nil); err != nil {
		return fmt.Errorf("queue cover of %s: %w", args.Key, err)
	}
	return nil
}

// Image is a fetched image whose bytes proved their type.
type Image = gate.Image

// ImageFetcher fetches an image through the destination gate
// (*gate.Client).
type ImageFetcher interface {
	FetchImage(ctx context.Context, rawURL, referer string) (Image, error)
}

// BrowserImages fetches an image from inside a cleared browser tab;
// *browser.Browser satisfies it.
type BrowserImages interface {
	Enabled() bool
	FetchImage(ctx context.Context, pageURL, imageURL string, hosts []string, maxBytes int64) ([]byte, string, error)
}

// ErrNoBrowser: the Cover is served only to a browser and none is
// configured; the Series keeps no Cover and nothing else degrades. It is
// the fetchers' own, so one errors.Is covers every fetch.
var ErrNoBrowser = fetch.ErrNoBrowser

// Fetcher acquires Covers: it runs the fetch_cover job.
type Fetcher struct {
	Store  *store.Store
	Covers blob.Store
	// Images fetches every Cover that is not browser-only.
	Images ImageFetcher
	// Browser fetches the Covers of a Site read only in a browser (kagane);
	// nil or disabled leaves them empty.
	Browser BrowserImages
	// MaxBytes caps browser-fetched bytes, as the gate caps its own.
	MaxBytes int64
	// Pacer is the pacing gate, waited at with the image's host before a
	// fetch through the destination gate; browser fetches are paced by the
	// browser.
	Pacer Pacer
	// Policy routes the address, says whether its Site backs off and paces
	// it, as for the Poll and the Archive.
	Policy *fetch.Policy
	Logger *slog.Logger
}

// Pacer is the per-host pacing gate (*pacing.Gate).
type Pacer interface {
	Wait(ctx context.Context, host string, every time.Duration) error
}

func (f *Fetcher) log() *slog.Logger {
	if f.Logger != nil {
		return f.Logger
	}
	return slog.Default()
}

// Fetch runs one fetch_cover job. It fails only when the database does: a
// Cover that cannot be fetched or stored is logged with its Series, Site,
// address and reason, noted on the Series for the Owner, and left for the
// Series' next poll. It never touches Progress or the Latest Chapter.
func (f *Fetcher) Fetch(ctx context.Context, args FetchArgs) error {
	log := f.log().With("series", args.Key, "site", args.Site, "address", args.Address)
	ser, err := f.Store.SeriesByKey(ctx, args.Key)
	if errors.Is(err, store.ErrNotFound) {
		log.WarnContext(ctx, "Cover for a Series that does not exist")
		return nil
	}
	if err != nil {
		return fmt.Errorf("fetch cover of %s: %w", args.Key, err)
	}
	if ser.CoverAddress != "" && !args.Refetch {
		// A poll fills a blank Cover and never replaces one.
		return nil
	}
	// The Owner's pause of the Series' Site (or of everything) holds its
	// Cover too, wherever the image is: the job waits, keeping its attempt.
	if h, err := f.Policy.Hold(ctx, ser.Site); err != nil {
		return fmt.Errorf("fetch cover of %s: %w", args.Key, err)
	} else if h.ByOwner() {
		log.InfoContext(ctx, "Cover fetch waits: "+h.String())
		return river.JobSnooze(f.Policy.HoldSnooze(h))
	}
	address, img, err := f.acquire(ctx, ser, args)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Shutting down: the Series' next poll hands the address on again.
			return nil
		}
		if errors.Is(err, fetch.ErrPaused) {
			// Paused while it ran, or the image's own Site is paused.
			log.InfoContext(ctx, "Cover fetch waits: paused by the Owner", "reason", err.Error())
			return river.JobSnooze(f.Policy.HoldSnooze(fetch.Hold{Site: true}))
		}
		reason := err.Error()
		// The job itself succeeds (the next poll retries), so name the
		// outcome for the job metrics.
		metrics.SetOutcome(ctx, "failed")
		if errors.Is(err, ErrNoBrowser) {
			log.InfoContext(ctx, "Cover not fetched", "reason", reason)
		} else {
			log.WarnContext(ctx, "Cover fetch failed", "reason", reason, "refetch", args.Refetch)
		}
		if rerr := f.Store.RecordCoverProblem(ctx, args.Key, reason); rerr != nil {
			return fmt.Errorf("fetch cover of %s: %w", args.Key, rerr)
		}
		return nil
	}
	changed, err := f.Store.SetCover(ctx, args.Key, store.CoverFacts{Address: address, Type: img.ContentType,
		SourceURL: img.URL, Size: len(img.Bytes)}, args.Refetch)
	if err != nil {
		return fmt.Errorf("fetch cover of %s: %w", args.Key, err)
	}
	log.InfoContext(ctx, "Cover stored", "cover", address, "type", img.ContentType, "bytes", len(img.Bytes),
		"changed", changed, "refetch", args.Refetch)
	return nil
}

// acquire fetches the bytes and stores them on the volume, returning their
// address.
func (f *Fetcher) acquire(ctx context.Context, ser store.Series, args FetchArgs) (string, Image, error) {
	img, err := f.get(ctx, ser, args)
	if err != nil {
		return "", Image{}, err
	}
	address, err := f.Covers.Put(ctx, img.Bytes, img.ContentType)
	if err != nil {
		return "", Image{}, err
	}
	return address, img, nil
}

// get fetches the bytes. The route is decided by the address's shape (its
// host), never by the Series' Site name: an address on a Site read only in a
// browser (kagane) goes through the browser, every other one through the
// destination gate.
func (f *Fetcher) get(ctx context.Context, ser store.Series, args FetchArgs) (Image, error) {
	u, err := url.Parse(args.Address)
	if err != nil || u.Host == "" {
		return Image{}, fmt.Errorf("cover address %q is not a URL", args.Address)
	}
	host := strings.ToLower(u.Hostname())
	hostSite, route := f.Policy.ImageRoute(host)
	if hostSite != nil {
		h, err := f.Policy.Hold(ctx, hostSite.Name)
		switch {
		case err != nil:
			return Image{}, err
		case h.ByOwner():
			return Image{}, fmt.Errorf("cover on %s: %w", hostSite.Name, fetch.ErrPaused)
		case h.Held():
			return Image{}, fmt.Errorf("%s is backing off until %s", hostSite.Name, h.Until.UTC().Format(time.RFC3339))
		}
	}
	switch route {
	case fetch.RouteBrowser:
		return f.viaBrowser(ctx, hostSite, host, u, ser.SeriesURL)
	case fetch.RouteNone:
		return Image{}, ErrNoBrowser
	}
	if f.Pacer != nil {
		series, _ := f.Policy.Registry.Lookup(ser.Site)
		every, err := f.Policy.Admit(ctx, host, series)
		if err != nil {
			return Image{}, err
		}
		if err := f.Pacer.Wait(ctx, host, every); err != nil {
			return Image{}, err
		}
	}
	img, err := f.Images.FetchImage(ctx, u.String(), ser.SeriesURL)
	if err != nil {
		metrics.NoteRefusal(ctx, err)
	}
	return img, err
}

func (f *Fetcher) viaBrowser(ctx context.Context, site *latest.Site, host string, u *url.URL, seriesURL string) (Image, error) {
	if f.Browser == nil || !f.Browser.Enabled() {
		return Image{}, ErrNoBrowser
	}
	hosts := site.AllHostNames()
	if !slices.Contains(hosts, host) {
		// An API subdomain of the Site's own host (yuzuki.kagane.org).
		hosts = append(hosts, host)
	}
	ctx, cancel := f.Policy.BrowserDeadline(ctx)
	defer cancel()
	max := f.MaxBytes
	if max <= 0 {
		max = 2 << 20
	}
	data, declared, err := f.Browser.FetchImage(ctx, seriesURL, u.String(), hosts, max)
	if err != nil {
		return Image{}, err
	}
	// The same rule as the gate: the response must say image and the bytes
	// must prove one; the bytes decide which.
	mt, _, _ := mime.ParseMediaType(declared)
	got := imagetype.Sniff(data)
	if !strings.HasPrefix(mt, "image/") || got == "" {
		return Image{}, fmt.Errorf("cover %s: declared %q, bytes are %q: %w", u.Redacted(), declared, got, imagetype.ErrNotImage)
	}
	return Image{Bytes: data, ContentType: got, URL: u.String()}, nil
}

// FetchWorker runs fetch_cover jobs.
type FetchWorker struct {
	river.WorkerDefaults[FetchArgs]
	Fetcher *Fetcher
}

// Work implements river.Worker.
func (w *FetchWorker) Work(ctx context.Context, job *river.Job[FetchArgs]) error {
	return w.Fetcher.Fetch(ctx, job.Args)
}

// Timeout implements river.Worker: a gate fetch has its own deadline, a
// browser fetch may wait for a challenge to clear.
func (w *FetchWorker) Timeout(*river.Job[FetchArgs]) time.Duration { return 3 * time.Minute }
