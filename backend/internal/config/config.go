// Package config reads Lectern's configuration from the environment.
//
// Variable names are plain, without a prefix (docs/adr/0010-configuration-from-the-environment.md).
// Values that cannot be defaulted safely are required, and a bad start names
// every problem at once, so an Owner fixes a compose file in one pass.
package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kelseyhightower/envconfig"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/clientaddr"
)

// Config is every setting of a Lectern process. The envconfig tag is the
// variable name; desc is what `lectern config` prints; need names the
// commands for which the variable is required.
type Config struct {
	DatabaseURL   string `envconfig:"DATABASE_URL" need:"serve" desc:"Postgres URL, e.g. postgres://lectern:secret@db:5432/lectern"`
	PublicBaseURL string `envconfig:"PUBLIC_BASE_URL" need:"serve" desc:"the absolute URL clients reach this server at; Cover and userscript URLs are built on it"`
	DataDir       string `envconfig:"DATA_DIR" need:"serve" desc:"directory for stored bytes (Covers under DATA_DIR/covers, archives under DATA_DIR/archive)"`
	CoverDir      string `envconfig:"COVER_DIR" desc:"directory for Cover bytes (default DATA_DIR/covers)"`
	ArchiveDir    string `envconfig:"ARCHIVE_DIR" desc:"directory for archived chapters (default DATA_DIR/archive)"`
	// Object storage (package blob, docs/operations.md). BLOB_URL beats
	// COVER_DIR and ARCHIVE_DIR for the stored bytes; DATA_DIR stays
	// required for what is not bytes by address.
	BlobURL           string `envconfig:"BLOB_URL" desc:"where Cover and page bytes are stored: file:///dir (laid out as DATA_DIR is) or s3://bucket/prefix on an S3-compatible server; beats COVER_DIR and ARCHIVE_DIR; empty means DATA_DIR's volume"`
	S3Endpoint        string `envconfig:"S3_ENDPOINT" desc:"URL of the S3-compatible server, e.g. http://minio:9000 (buckets are then addressed by path); empty means AWS S3"`
	S3Region          string `envconfig:"S3_REGION" desc:"the bucket's region (empty lets the client ask; some servers want us-east-1)"`
	S3AccessKeyID     string `envconfig:"S3_ACCESS_KEY_ID" desc:"access key id for the bucket"`
	S3SecretAccessKey string `envconfig:"S3_SECRET_ACCESS_KEY" desc:"secret access key for the bucket (never logged)"`
	CoverCacheBytes   int64  `envconfig:"COVER_CACHE_BYTES" default:"33554432" desc:"memory for hot Covers kept in front of a bucket, in bytes (32 MiB); 0 keeps none; unused on a volume"`
	BackupURL         string `envconfig:"BACKUP_URL" desc:"where the daily backup goes: file:///dir (a local or mounted directory; one dated directory per backup, taken by the leader replica once a day); empty takes none"`
	BackupKeep        int    `envconfig:"BACKUP_KEEP" default:"7" desc:"how many daily backups BACKUP_URL keeps, the newest"`
	ListenAddr        string `envconfig:"LISTEN_ADDR" default:":8080" desc:"address the HTTP server listens on"`
	MetricsAddr       string `envconfig:"METRICS_ADDR" desc:"address for Prometheus metrics; empty turns them off"`
	// TRUSTED_PROXIES: see package clientaddr.
	TrustedProxies string `envconfig:"TRUSTED_PROXIES" desc:"reverse proxies whose X-Forwarded-For names the client (login limits, request logs), as addresses or CIDR prefixes, e.g. 127.0.0.1,10.0.0.0/8; empty believes no proxy"`

	BrowserURL  string `envconfig:"BROWSER_URL" desc:"DevTools URL of a headless Chrome (e.g. the Compose sidecar http://browser:9222); browser Sites need it or BROWSER_PATH"`
	BrowserPath string `envconfig:"BROWSER_PATH" desc:"path of a local Chromium to launch when BROWSER_URL is empty"`
	// The browser's gated forward proxy: where it listens, and the address
	// the browser is told to use. A remote sidecar must be able to reach it
	// (listen on ":3128", tell it "lectern:3128"); a local Chromium uses
	// loopback and needs neither.
	BrowserProxyListen string        `envconfig:"BROWSER_PROXY_LISTEN" default:"127.0.0.1:0" desc:"listen address of the forward proxy all browser traffic goes through (a Compose sidecar needs e.g. :3128)"`
	BrowserProxyAddr   string        `envconfig:"BROWSER_PROXY_ADDR" desc:"host:port the browser is told to reach the proxy at, e.g. lectern:3128 for a sidecar (default: the proxy's own listen address)"`
	BrowserTimeout     time.Duration `envconfig:"BROWSER_TIMEOUT" default:"60s" desc:"longest browser read of one page, waiting for a JavaScript challenge to clear"`
	BrowserIdle        time.Duration `envconfig:"BROWSER_IDLE" default:"5m" desc:"a local Chromium Lectern launched (BROWSER_PATH) is closed after this long without a read and launched again on the next; 0 keeps it running; a BROWSER_URL browser is never closed"`

	PollInterval  time.Duration `envconfig:"POLL_INTERVAL" default:"1h" desc:"how often a Series with too little Latest Chapter history is polled (every held Series, under POLL_POLICY=interval)"`
	PollPolicy    string        `envconfig:"POLL_POLICY" default:"adaptive" desc:"adaptive (learn each Series' release rhythm and poll around its expected releases, within each Site's budget) or interval (every held Series once per POLL_INTERVAL, the fallback)"`
	PollListings  bool          `envconfig:"POLL_LISTINGS" default:"true" desc:"under POLL_POLICY=adaptive, plan a Site whose registry entry has a listing (a Site-wide recent-updates page) around it: one request every few minutes (never more often than polling each held Series once per POLL_INTERVAL would cost, unless releases would scroll out of its reach) finds its Series' releases, and the Series it covers are polled only every two days; off: every Series is planned on its own"`
	SitePace      string        `envconfig:"SITE_PACE" desc:"per-Site minimum interval between requests, e.g. asura=1s,demonic=500ms (default: each Site's own, 2s unless the registry says otherwise); the Owner may change a Site's at run time (lectern site set)"`
	SiteBudget    string        `envconfig:"SITE_BUDGET" desc:"per-Site budget of scheduled polls in requests per hour, e.g. asura=1800,demonic=600 (default: every request the Site's pace allows, 1h / SITE_PACE); the Owner may change a Site's at run time (lectern site set)"`
	UserAgent     string        `envconfig:"USER_AGENT" default:"Lectern/1.0 (+https://github.com/lectern-reader/lectern)" desc:"User-Agent sent to Sites and image hosts"`
	FetchMaxBytes int64         `envconfig:"FETCH_MAX_BYTES" default:"5242880" desc:"largest Site page body read, in bytes"`
	FetchTimeout  time.Duration `envconfig:"FETCH_TIMEOUT" default:"30s" desc:"longest plain fetch of one Site page, body included"`
	// Per-phase limits within FETCH_TIMEOUT.
	FetchConnectTimeout time.Duration `envconfig:"FETCH_CONNECT_TIMEOUT" default:"10s" desc:"longest TCP and TLS set-up of a Site page fetch"`
	FetchHeaderTimeout  time.Duration `envconfig:"FETCH_HEADER_TIMEOUT" default:"15s" desc:"longest wait for a Site page's response headers"`
	CoverMaxBytes       int64         `envconfig:"COVER_MAX_BYTES" default:"2097152" desc:"largest Cover or archived page image accepted, in bytes"`
	ListCacheBytes      int64         `envconfig:"LIST_CACHE_BYTES" default:"67108864" desc:"memory for encoded Bookmark lists kept between panel refreshes, in bytes (64 MiB); each list is kept per Reader, Library, list version and coding until it changes; 0 keeps none"`
	Workers             int           `envconfig:"WORKERS" default:"4" desc:"background jobs run at once by this replica; 0 runs none (a replica that only serves HTTP)"`
	SitesRefresh        time.Duration `envconfig:"SITES_REFRESH" default:"20s" desc:"how often this replica reloads the Sites the Owner added, changed or removed at run time (lectern site add|remove); at least 1s"`
	ArchiveSweep        time.Duration `envconfig:"ARCHIVE_SWEEP" default:"24h" desc:"how often the archive's sweep queues again the chapters of Series kept archiving that were missed, ran out of attempts a day before, or lost their files; 0 turns it off"`

	// Trackers (package tracker, docs/trackers.md). Their endpoints are the
	// Owner's configuration, not addresses from third-party pages, so they
	// do not pass the destination gate, and plain http on loopback is
	// allowed (tests, mirrors).
	SecretKey           string `envconfig:"SECRET_KEY" desc:"32 random bytes as 64 hexadecimal characters (openssl rand -hex 32): seals tracker tokens and notification target credentials at rest; without it Readers cannot link trackers or add targets that hold a credential"`
	AniListClientID     string `envconfig:"ANILIST_CLIENT_ID" desc:"AniList API client id, for linking with AniList's authorisation page (without it Readers paste a token)"`
	AniListClientSecret string `envconfig:"ANILIST_CLIENT_SECRET" desc:"AniList API client secret"`
	AniListAPIURL       string `envconfig:"ANILIST_API_URL" default:"https://graphql.anilist.co" desc:"AniList's GraphQL endpoint"`
	AniListOAuthURL     string `envconfig:"ANILIST_OAUTH_URL" default:"https://anilist.co/api/v2/oauth" desc:"AniList's OAuth base (…/authorize, …/token)"`
	MALClientID         string `envconfig:"MAL_CLIENT_ID" desc:"MyAnimeList API client id; MyAnimeList is offered only with it"`
	MALClientSecret     string `envconfig:"MAL_CLIENT_SECRET" desc:"MyAnimeList API client secret (empty for an app registered without one)"`
	MALAPIURL           string `envconfig:"MAL_API_URL" default:"https://api.myanimelist.net/v2" desc:"MyAnimeList API v2 base"`
	MALOAuthURL         string `envconfig:"MAL_OAUTH_URL" default:"https://myanimelist.net/v1/oauth2" desc:"MyAnimeList's OAuth base (…/authorize, …/token)"`
	MangaUpdatesAPIURL  string `envconfig:"MANGAUPDATES_API_URL" default:"https://api.mangaupdates.com/v1" desc:"MangaUpdates API v1 base"`
	TrackerPace         string `envconfig:"TRACKER_PACE" desc:"per-tracker minimum interval between requests, e.g. anilist=2s,myanimelist=1s,mangaupdates=1s (the defaults: AniList's published 30 a minute)"`

	LogFormat string `envconfig:"LOG_FORMAT" default:"json" desc:"json (production) or text (development)"`
	LogLevel  string `envconfig:"LOG_LEVEL" default:"info" desc:"debug, info, warn or error"`
}

// DefaultListCacheBytes is LIST_CACHE_BYTES' default (64 MiB), for the
// callers that build a Config without the environment (tests, the bench).
const DefaultListCacheBytes = 64 << 20

// Lookup reads one variable; os.LookupEnv in production, a map in tests.
type Lookup func(string) (string, bool)

// Load reads the configuration for a command and checks what that command
// needs. The error names every missing or malformed variable.
func Load(lookup Lookup, command string) (Config, error) {
	var c Config
	var problems []string

	// envconfig reads the process environment; each parse error names one
	// variable, so a malformed value is reported and skipped rather than
	// hiding the problems after it.
	restore := withEnv(lookup)
	defer restore()
	skipped := map[string]string{}
	for range 32 {
		err := envconfig.Process("", &c)
		var pe *envconfig.ParseError
		if !errors.As(err, &pe) {
			if err != nil {
				problems = append(problems, err.Error())
			}
			break
		}
		problems = append(problems, fmt.Sprintf("%s is malformed: %q is not a valid %s", pe.KeyName, pe.Value, pe.TypeName))
		skipped[pe.KeyName] = pe.Value
		os.Unsetenv(pe.KeyName)
	}

	for _, f := range fields() {
		if !f.needed(command) {
			continue
		}
		if _, bad := skipped[f.name]; bad {
			continue
		}
		if v, _ := lookup(f.name); strings.TrimSpace(v) == "" {
			problems = append(problems, fmt.Sprintf("%s is required: %s", f.name, f.desc))
		}
	}
	problems = append(problems, c.check()...)
	if len(problems) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(problems, "; "))
	}
	c.Fill()
	return c, nil
}

// check validates the values that were given.
func (c *Config) check() []string {
	var p []string
	if c.PublicBaseURL != "" {
		u, err := url.Parse(c.PublicBaseURL)
		// Quotes, backslashes and spaces are refused too: the URL is written
		// into the served userscripts and into HTML attributes.
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" ||
			strings.ContainsAny(c.PublicBaseURL, "'\"\\ <>`") {
			p = append(p, fmt.Sprintf("PUBLIC_BASE_URL is malformed: %q must be an absolute http(s) URL such as https://lectern.example.net", c.PublicBaseURL))
		}
	}
	if c.DatabaseURL != "" {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			p = append(p, "DATABASE_URL is malformed: it must be a postgres:// URL")
		}
	}
	if c.PollInterval != 0 && c.PollInterval < time.Minute {
		p = append(p, fmt.Sprintf("POLL_INTERVAL is too short: %s (at least 1m)", c.PollInterval))
	}
	if c.SitesRefresh != 0 && c.SitesRefresh < time.Second {
		p = append(p, fmt.Sprintf("SITES_REFRESH is too short: %s (at least 1s)", c.SitesRefresh))
	}
	if c.Workers < 0 {
		p = append(p, "WORKERS must be 0 or more")
	}
	for name, d := range map[string]time.Duration{"FETCH_TIMEOUT": c.FetchTimeout, "FETCH_CONNECT_TIMEOUT": c.FetchConnectTimeout,
		"FETCH_HEADER_TIMEOUT": c.FetchHeaderTimeout, "BROWSER_TIMEOUT": c.BrowserTimeout, "ARCHIVE_SWEEP": c.ArchiveSweep, "BROWSER_IDLE": c.BrowserIdle} {
		if d < 0 {
			p = append(p, fmt.Sprintf("%s must not be negative: %s", name, d))
		}
	}
	if c.ListCacheBytes < 0 {
		p = append(p, "LIST_CACHE_BYTES must not be negative")
	}
	if c.FetchMaxBytes < 0 || c.CoverMaxBytes < 0 {
		p = append(p, "FETCH_MAX_BYTES and COVER_MAX_BYTES must not be negative")
	}
	switch c.LogFormat {
	case "", "json", "text":
	default:
		p = append(p, fmt.Sprintf("LOG_FORMAT is malformed: %q is neither json nor text", c.LogFormat))
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		p = append(p, fmt.Sprintf("LOG_LEVEL is malformed: %q is not debug, info, warn or error", c.LogLevel))
	}
	if _, err := c.Paces(); err != nil {
		p = append(p, err.Error())
	}
	switch c.PollPolicy {
	case "", PolicyAdaptive, PolicyInterval:
	default:
		p = append(p, fmt.Sprintf("POLL_POLICY is malformed: %q is neither %s nor %s", c.PollPolicy, PolicyAdaptive, PolicyInterval))
	}
	if _, err := c.Budgets(); err != nil {
		p = append(p, err.Error())
	}
	if _, err := clientaddr.Parse(c.TrustedProxies); err != nil {
		p = append(p, err.Error())
	}
	if c.SecretKey != "" && !hexKey.MatchString(strings.TrimSpace(c.SecretKey)) {
		p = append(p, "SECRET_KEY is malformed: it is 64 hexadecimal characters (32 random bytes), e.g. from openssl rand -hex 32")
	}
	for name, v := range map[string]string{"ANILIST_API_URL": c.AniListAPIURL, "ANILIST_OAUTH_URL": c.AniListOAuthURL,
		"MAL_API_URL": c.MALAPIURL, "MAL_OAUTH_URL": c.MALOAuthURL, "MANGAUPDATES_API_URL": c.MangaUpdatesAPIURL} {
		if u, err := url.Parse(v); v != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			p = append(p, fmt.Sprintf("%s is malformed: %q is not an absolute http(s) URL", name, v))
		}
	}
	if _, err := c.TrackerPaces(); err != nil {
		p = append(p, err.Error())
	}
	if c.BlobURL != "" {
		if _, err := blob.Open(c.Blobs()); err != nil {
			p = append(p, err.Error())
		}
	}
	if u, err := url.Parse(c.S3Endpoint); c.S3Endpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		p = append(p, fmt.Sprintf("S3_ENDPOINT is malformed: %q is not an absolute http(s) URL", c.S3Endpoint))
	}
	if c.BackupURL != "" {
		if rest, ok := strings.CutPrefix(c.BackupURL, "file://"); !ok || !filepath.IsAbs(rest) {
			p = append(p, fmt.Sprintf("BACKUP_URL is malformed: %q is not file:///dir (an absolute directory)", c.BackupURL))
		}
	}
	if c.BackupKeep < 1 && c.BackupURL != "" {
		p = append(p, "BACKUP_KEEP is malformed: keep at least 1 backup")
	}
	if c.CoverCacheBytes < 0 {
		p = append(p, "COVER_CACHE_BYTES is malformed: it is a number of bytes, 0 or more")
	}
	return p
}

// Blobs is where the stored bytes are: the one reading of BLOB_URL, S3_*,
// COVER_CACHE_BYTES, COVER_DIR and ARCHIVE_DIR (blob.Open builds the stores).
func (c Config) Blobs() blob.Settings {
	c.Fill()
	return blob.Settings{
		URL: c.BlobURL, CoverDir: c.CoverDir, ArchiveDir: c.ArchiveDir,
		S3: blob.S3Options{Endpoint: c.S3Endpoint, Region: c.S3Region,
			AccessKeyID: c.S3AccessKeyID, SecretAccessKey: c.S3SecretAccessKey},
		CoverCacheBytes: c.CoverCacheBytes,
	}
}

// The Poll's scheduling policies (POLL_POLICY).
const (
	PolicyAdaptive = "adaptive"
	PolicyInterval = "interval"
)

// MaxBudget is the largest SITE_BUDGET a Site may have, in requests per hour.
const MaxBudget = 3_600_000

// Budgets parses SITE_BUDGET into per-Site requests per hour.
func (c *Config) Budgets() (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(c.SiteBudget) == "" {
		return out, nil
	}
	for _, part := range strings.Split(c.SiteBudget, ",") {
		site, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		site = strings.TrimSpace(site)
		if !ok || site == "" || err != nil || n < 1 || n > MaxBudget {
			return nil, fmt.Errorf("SITE_BUDGET is malformed: %q should look like asura=1800,demonic=600 (requests per hour, 1 to %d)", part, MaxBudget)
		}
		if _, dup := out[site]; dup {
			return nil, fmt.Errorf("SITE_BUDGET is malformed: %s is given twice", site)
		}
		out[site] = n
	}
	return out, nil
}

// Fill derives the defaults that depend on other values (the data
// directories under DATA_DIR). Load calls it; code that builds a Config by
// hand (tests, the demo) calls it too.
func (c *Config) Fill() {
	c.PublicBaseURL = strings.TrimRight(c.PublicBaseURL, "/")
	if c.CoverDir == "" && c.DataDir != "" {
		c.CoverDir = filepath.Join(c.DataDir, "covers")
	}
	if c.ArchiveDir == "" && c.DataDir != "" {
		c.ArchiveDir = filepath.Join(c.DataDir, "archive")
	}
}

// Paces parses SITE_PACE into per-Site intervals.
func (c *Config) Paces() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	if strings.TrimSpace(c.SitePace) == "" {
		return out, nil
	}
	for _, part := range strings.Split(c.SitePace, ",") {
		site, d, ok := strings.Cut(strings.TrimSpace(part), "=")
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if !ok || site == "" || err != nil || dur < 0 {
			return nil, fmt.Errorf("SITE_PACE is malformed: %q should look like asura=1s,demonic=500ms", part)
		}
		out[strings.TrimSpace(site)] = dur
	}
	return out, nil
}

// hexKey is SECRET_KEY's shape; secretbox.ParseKey reads it.
var hexKey = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// TrackerPaces parses TRACKER_PACE into per-tracker intervals.
func (c *Config) TrackerPaces() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	if strings.TrimSpace(c.TrackerPace) == "" {
		return out, nil
	}
	for _, part := range strings.Split(c.TrackerPace, ",") {
		name, d, ok := strings.Cut(strings.TrimSpace(part), "=")
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		name = strings.TrimSpace(name)
		switch name {
		case "anilist", "myanimelist", "mangaupdates":
		default:
			ok = false
		}
		if !ok || err != nil || dur < 0 {
			return nil, fmt.Errorf("TRACKER_PACE is malformed: %q should look like anilist=2s,myanimelist=1s,mangaupdates=1s", part)
		}
		out[name] = dur
	}
	return out, nil
}

// Secure reports whether cookies must carry the Secure attribute.
func (c *Config) Secure() bool { return strings.HasPrefix(c.PublicBaseURL, "https://") }

type field struct {
	name, def, desc, typ string
	need                 []string
}

func (f field) needed(command string) bool {
	for _, n := range f.need {
		if n == command {
			return true
		}
	}
	return false
}

func fields() []field {
	t := reflect.TypeOf(Config{})
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		f := field{name: sf.Tag.Get("envconfig"), def: sf.Tag.Get("default"), desc: sf.Tag.Get("desc"), typ: sf.Type.String()}
		if sf.Type == reflect.TypeOf(time.Duration(0)) {
			f.typ = "duration"
		}
		if n := sf.Tag.Get("need"); n != "" {
			f.need = strings.Split(n, ",")
		}
		out = append(out, f)
	}
	return out
}

// Names lists every variable the configuration reads, for checks that a
// compose file or document passes nothing unknown.
func Names() []string {
	var out []string
	for _, f := range fields() {
		out = append(out, f.name)
	}
	sort.Strings(out)
	return out
}

// Required lists the variables a command cannot start without.
func Required(command string) []string {
	var out []string
	for _, f := range fields() {
		if f.needed(command) {
			out = append(out, f.name)
		}
	}
	return out
}

// Print writes every variable with its default and meaning.
func Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tTYPE\tDEFAULT\tMEANING")
	for _, f := range fields() {
		def := f.def
		if len(f.need) > 0 {
			def = "(required for " + strings.Join(f.need, ", ") + ")"
		} else if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.name, f.typ, def, f.desc)
	}
	tw.Flush()
}

// Markdown writes the configuration table for docs/configuration.md.
func Markdown(w io.Writer) {
	fmt.Fprintln(w, "| Variable | Type | Default | Meaning |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, f := range fields() {
		def := "`" + f.def + "`"
		if len(f.need) > 0 {
			def = "required"
		} else if f.def == "" {
			def = "empty"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", f.name, f.typ, def, strings.ReplaceAll(f.desc, "|", "\\|"))
	}
}

// withEnv makes the process environment match lookup for the variables the
// configuration reads, and returns a function restoring it. In production
// lookup is os.LookupEnv and nothing changes.
func withEnv(lookup Lookup) func() {
	// The process environment is one for every goroutine: two Loads at once
	// (parallel tests, each with its own lookup) would read each other's
	// values, so a Load holds it until restored.
	envMu.Lock()
	type saved struct {
		v  string
		ok bool
	}
	old := map[string]saved{}
	for _, f := range fields() {
		v, ok := os.LookupEnv(f.name)
		old[f.name] = saved{v, ok}
		if nv, nok := lookup(f.name); nok {
			os.Setenv(f.name, nv)
		} else {
			os.Unsetenv(f.name)
		}
	}
	return func() {
		defer envMu.Unlock()
		for k, s := range old {
			if s.ok {
				os.Setenv(k, s.v)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}

var envMu sync.Mutex
