package portability

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/proto"

	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/portability/mihonpb"
)

// A Mihon (or Tachiyomi) backup, .tachibk or .proto.gz: the Backup message
// of mihonpb, gzip-compressed. Each manga of the library names its source
// by an id and its page by the URL the source extension keeps, usually a
// path on the source's site ("/comics/solo-leveling-1a2b3c4d"). A manga is
// placed on the Site whose hosts give that path a Series key (the URL
// shape), with the source's name choosing between Sites that both would;
// the Progress is the furthest read chapter, and the tracking becomes the
// Bookmark's tracker mappings. A manga from a source Lectern has no Site
// for is placed by its tracker ids when a Site published them, else
// reported.

// mihonMaxDecompressed bounds a decompressed backup: one of 2,000 manga
// with their chapter lists is a few tens of megabytes.
const mihonMaxDecompressed = 256 << 20

// mihonTrackers are mihon's tracker ids (TrackerManager) Lectern knows.
var mihonTrackers = map[int32]string{1: "myanimelist", 2: "anilist", 7: "mangaupdates"}

func parseMihon(body []byte, reg *latest.Registry) ([]entry, []LineError, error) {
	raw, err := gunzipped(body, mihonMaxDecompressed)
	if err != nil {
		return nil, nil, err
	}
	var b mihonpb.Backup
	if err := proto.Unmarshal(raw, &b); err != nil {
		return nil, nil, fmt.Errorf("%w: not a Mihon backup: %v", ErrUnreadable, err)
	}
	if len(b.BackupManga) == 0 && len(b.BackupSources) == 0 {
		return nil, nil, fmt.Errorf("%w: no manga in this Mihon backup", ErrUnreadable)
	}
	if len(b.BackupManga) > MaxEntries {
		return nil, nil, fmt.Errorf("%w: one import takes at most %d manga", ErrTooMany, MaxEntries)
	}
	sources := map[int64]string{}
	for _, s := range b.BackupSources {
		sources[s.SourceId] = s.Name
	}
	var out []entry
	for i, m := range b.BackupManga {
		out = append(out, mihonEntry(i+1, m, sources[m.Source], reg))
	}
	return out, nil, nil
}

func mihonEntry(n int, m *mihonpb.BackupManga, source string, reg *latest.Registry) entry {
	title := strings.TrimSpace(m.CustomTitle)
	if title == "" {
		title = strings.TrimSpace(m.Title)
	}
	e := entry{Line: n, Title: title, Input: shorten(title + " (" + nonEmpty(source, "source "+strconv.FormatInt(m.Source, 10)) + ")")}
	for _, t := range m.Tracking {
		name, ok := mihonTrackers[t.SyncId]
		id := t.MediaId
		if id == 0 {
			id = int64(t.MediaIdInt)
		}
		if ok && id > 0 {
			if e.Trackers == nil {
				e.Trackers = map[string]string{}
			}
			e.Trackers[name] = strconv.FormatInt(id, 10)
		}
	}
	if !m.Favorite {
		e.NotPlaced = "not in the Mihon library (history only)"
		e.Trackers = nil
		return e
	}
	if m.DateAdded > 0 {
		t := time.UnixMilli(m.DateAdded).UTC()
		e.CreatedAt = &t
	}
	site, base, ok := mihonSite(reg, m.Url, source)
	if !ok {
		e.NotPlaced = fmt.Sprintf("%s is not a Site Lectern knows (its manga URL %s names no Series)", nonEmpty(source, "its source"), shorten(m.Url))
		mihonProgress(&e, m, nil)
		return e
	}
	e.Site, e.URL = site.Name, resolveOn(base, m.Url)
	mihonProgress(&e, m, base)
	return e
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// mihonSite finds the Site a manga's URL belongs to: an absolute URL by
// its host, a path by trying it on every Site's hosts. Several Sites
// taking the same path are told apart by the source's name, and a named
// source must match the Site it lands on: MangaDex's "/title/<uuid>" is
// the shape of another Site's pages too.
func mihonSite(reg *latest.Registry, raw, source string) (*latest.Site, *url.URL, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil, false
	}
	if u, err := url.Parse(raw); err == nil && u.IsAbs() {
		ref, err := reg.Resolve(raw)
		if err != nil {
			return nil, nil, false
		}
		site, _ := reg.Lookup(ref.Site)
		return site, &url.URL{Scheme: u.Scheme, Host: u.Host}, true
	}
	if !strings.HasPrefix(raw, "/") {
		raw = "/" + raw
	}
	var hits []*latest.Site
	var bases []*url.URL
	for _, s := range reg.Sites() {
		for _, h := range s.Hosts {
			if _, err := s.ResolveOn("https://" + h + raw); err == nil {
				hits, bases = append(hits, s), append(bases, &url.URL{Scheme: "https", Host: h})
				break
			}
		}
	}
	src := squash(source)
	if len(hits) == 1 && src == "" {
		return hits[0], bases[0], true
	}
	for i, s := range hits {
		if name := squash(s.Name); src != "" && (strings.Contains(src, name) || strings.Contains(name, src)) {
			return s, bases[i], true
		}
	}
	return nil, nil, false
}

// squash is a name in lower-case letters and digits only: "Asura Scans"
// and "asura" meet.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

func resolveOn(base *url.URL, raw string) string {
	if base == nil {
		return raw
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return raw
	}
	return base.ResolveReference(u).String()
}

// mihonProgress sets the Progress from the furthest chapter marked read
// (by its number; with none numbered, the one read last), else from a
// tracker's count.
func mihonProgress(e *entry, m *mihonpb.BackupManga, base *url.URL) {
	readAt := map[string]int64{}
	for _, h := range m.History {
		readAt[h.Url] = h.LastRead
	}
	var best *mihonpb.BackupChapter
	for _, c := range m.Chapters {
		if !c.Read {
			continue
		}
		switch {
		case best == nil:
			best = c
		case c.ChapterNumber >= 0 && c.ChapterNumber > best.ChapterNumber:
			best = c
		case c.ChapterNumber == best.ChapterNumber && readAt[c.Url] > readAt[best.Url]:
			best = c
		}
	}
	if best != nil {
		e.Chapter = strings.TrimSpace(best.Name)
		if best.ChapterNumber >= 0 {
			// A float32 printed at its own precision: 12.1, not 12.100000381.
			n, _ := strconv.ParseFloat(strconv.FormatFloat(float64(best.ChapterNumber), 'f', -1, 32), 64)
			e.ChapterNumber, e.NumberGiven = &n, true
			if e.Chapter == "" {
				e.Chapter = "Chapter " + strconv.FormatFloat(n, 'f', -1, 64)
			}
		}
		if base != nil && best.Url != "" {
			e.ChapterURL = resolveOn(base, best.Url)
		}
		if at := readAt[best.Url]; at > 0 {
			t := time.UnixMilli(at).UTC()
			e.ProgressAt = &t
		}
		return
	}
	furthest := 0.0
	for _, t := range m.Tracking {
		furthest = math.Max(furthest, float64(t.LastChapterRead))
	}
	if furthest >= 1 {
		e.Chapter = "Chapter " + strconv.Itoa(int(math.Floor(furthest)))
	}
}
