package archive_test

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The Series the fixture Site serves, as the registry names them.
const (
	mangaURL  = "https://demonicscans.org/manga/Solo-Max-Level-Newbie"
	mangaKey  = "demonic:Solo-Max-Level-Newbie"
	novelURL  = "https://lightnovelworld.com/novel/shadow-slave"
	novelKey  = "lightnovelworld:shadow-slave"
	asuraURL  = "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b"
	asuraKey  = "asura:omniscient-readers-viewpoint"
	comixURL  = "https://comix.to/title/r8k2m-the-greatest-estate-developer"
	comixKey  = "comix:r8k2m-the-greatest-estate-developer"
	imageHost = "cdn.demoniclibs.com"
)

// mangaChapterURL is a demonic chapter as its series page lists it.
func mangaChapterURL(n string) string {
	return "https://demonicscans.org/chaptered.php?manga=4812&chapter=" + n
}

// fixtureHosts are the names the fixture Site answers for on the fake
// network.
var fixtureHosts = []string{
	"demonicscans.org", "www.demonicscans.org", imageHost,
	"lightnovelworld.com", "www.lightnovelworld.com",
	"asurascans.com", "cdn.asurascans.com", "comix.to",
}

func readFixture(tb testing.TB, site, name string) string {
	tb.Helper()
	return string(testenv.SiteFixture(tb, site, name))
}

// site answers for every fixture host on the fake network: the Sites'
// pages from testdata/sites, and page images it generates. It counts every
// request, can hold one until released, and can answer one with a status.
type site struct {
	fixtures map[string]string

	mu       sync.Mutex
	hits     map[string]int
	referers map[string]string
	hold     map[string]chan struct{}
	held     chan string
	status   map[string]int
	pages    map[string]int  // demonic chapter → page images its page lists
	jxl      map[string]bool // demonic chapters whose images are JPEG XL
	private  map[string]bool // demonic chapters whose images are on a loopback address
	images   map[string][]byte
	served   int64 // image bytes served
}

func newSite(tb testing.TB, n *fakenet.Net) *site {
	tb.Helper()
	s := &site{
		fixtures: map[string]string{},
		hits:     map[string]int{}, referers: map[string]string{}, hold: map[string]chan struct{}{},
		held: make(chan string, 16), status: map[string]int{}, pages: map[string]int{},
		jxl: map[string]bool{}, private: map[string]bool{}, images: map[string][]byte{},
	}
	for _, f := range [][2]string{
		{"demonic", "series.html"}, {"demonic", "chapter.html"},
		{"lightnovelworld", "series.html"}, {"lightnovelworld", "chapters-page-1.html"},
		{"lightnovelworld", "chapters-page-2.html"}, {"lightnovelworld", "chapter.html"},
		{"asura", "series.html"}, {"asura", "chapter.html"}, {"asura", "chapter-locked.html"},
		{"comix", "series.html"}, {"comix", "chapter-scrambled.html"},
	} {
		s.fixtures[f[0]+"/"+f[1]] = readFixture(tb, f[0], f[1])
	}
	for _, h := range fixtureHosts {
		n.HandleHost(h, s)
	}
	// Held requests end before the network closes (cleanups run last
	// first).
	tb.Cleanup(s.releaseAll)
	return s
}

// hitKey names a request: host (without www.), decoded path and query.
func hitKey(host, path, rawQuery string) string {
	k := strings.TrimPrefix(host, "www.") + path
	if rawQuery != "" {
		k += "?" + rawQuery
	}
	return k
}

// Hits counts the requests for one key.
func (s *site) Hits(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

// HitsPrefix counts the requests whose key starts with prefix.
func (s *site) HitsPrefix(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.hits {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// Referer is the Referer of the last request for key.
func (s *site) Referer(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.referers[key]
}

// Hold makes requests for key wait until Release; each arrival is sent on
// Held.
func (s *site) Hold(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold[key] = make(chan struct{})
}

// Release lets held requests for key (and later ones) through.
func (s *site) Release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.hold[key]; ok {
		close(ch)
		delete(s.hold, key)
	}
}

func (s *site) releaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, ch := range s.hold {
		close(ch)
		delete(s.hold, k)
	}
}

// Status makes requests for key answer status.
func (s *site) Status(key string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.status, key)
		return
	}
	s.status[key] = status
}

// Pages makes a demonic chapter's page list n images.
func (s *site) Pages(chapter string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[chapter] = n
}

// JXL serves a demonic chapter's images as JPEG XL.
func (s *site) JXL(chapter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jxl[chapter] = true
}

// Private makes a demonic chapter list its images on a loopback address.
func (s *site) Private(chapter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.private[chapter] = true
}

// ServedImageBytes is how many image bytes the fixture sent.
func (s *site) ServedImageBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimPrefix(strings.ToLower(host), "www.")
	key := hitKey(host, r.URL.Path, r.URL.RawQuery)
	s.mu.Lock()
	s.hits[key]++
	s.referers[key] = r.Header.Get("Referer")
	hold := s.hold[key]
	status := s.status[key]
	s.mu.Unlock()
	if hold != nil {
		select {
		case s.held <- key:
		default:
		}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html><head><title>%d %s</title></head><body>refused</body></html>", status, http.StatusText(status))
		return
	}
	html := func(body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}
	switch {
	case host == "demonicscans.org" && r.URL.Path == "/manga/Solo-Max-Level-Newbie":
		html(s.fixtures["demonic/series.html"])
	case host == "demonicscans.org" && r.URL.Path == "/chaptered.php" && r.URL.Query().Get("manga") == "4812":
		html(s.demonicChapter(r.URL.Query().Get("chapter")))
	case host == imageHost && strings.HasPrefix(r.URL.Path, "/mangas/Solo Max-Level Newbie/"):
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/mangas/Solo Max-Level Newbie/"), "/")
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		page, err := strconv.Atoi(strings.TrimSuffix(parts[1], ".jpg"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		jxl := s.jxl[parts[0]]
		s.mu.Unlock()
		if jxl {
			// A JPEG XL codestream: signature FF 0A.
			w.Header().Set("Content-Type", "image/jxl")
			_, _ = w.Write(append([]byte{0xff, 0x0a}, bytes.Repeat([]byte{0x7a}, 600)...))
			return
		}
		s.image(w, parts[0], page)
	case host == "lightnovelworld.com" && r.URL.Path == "/novel/shadow-slave":
		html(s.fixtures["lightnovelworld/series.html"])
	case host == "lightnovelworld.com" && r.URL.Path == "/novel/shadow-slave/chapters/page-1":
		html(s.fixtures["lightnovelworld/chapters-page-1.html"])
	case host == "lightnovelworld.com" && r.URL.Path == "/novel/shadow-slave/chapters/page-2":
		html(s.fixtures["lightnovelworld/chapters-page-2.html"])
	case host == "lightnovelworld.com" && strings.HasPrefix(r.URL.Path, "/novel/shadow-slave/chapter-"):
		html(novelChapter(s.fixtures["lightnovelworld/chapter.html"], strings.TrimPrefix(r.URL.Path, "/novel/shadow-slave/chapter-")))
	case host == "asurascans.com" && r.URL.Path == "/comics/omniscient-readers-viewpoint-7f3k9a2b":
		html(s.fixtures["asura/series.html"])
	case host == "asurascans.com" && strings.HasPrefix(r.URL.Path, "/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/"):
		n := strings.TrimPrefix(r.URL.Path, "/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/")
		if n == "250" {
			html(s.fixtures["asura/chapter-locked.html"])
			return
		}
		html(strings.ReplaceAll(strings.ReplaceAll(s.fixtures["asura/chapter.html"], "/250/", "/"+n+"/"), "chapter/250", "chapter/"+n))
	case host == "cdn.asurascans.com" && strings.HasPrefix(r.URL.Path, "/asura-images/chapters/"):
		// asura serves .webp names as image/jpeg.
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/asura-images/chapters/"), "/")
		page, _ := strconv.Atoi(strings.TrimSuffix(parts[len(parts)-1], ".webp"))
		s.image(w, "asura-"+parts[len(parts)-2], page)
	case host == "comix.to" && r.URL.Path == "/title/r8k2m-the-greatest-estate-developer":
		html(s.fixtures["comix/series.html"])
	case host == "comix.to" && strings.HasPrefix(r.URL.Path, "/title/r8k2m-the-greatest-estate-developer/"):
		html(s.fixtures["comix/chapter-scrambled.html"])
	default:
		http.NotFound(w, r)
	}
}

var imgholders = regexp.MustCompile(`(?s)<div class="main-width center-m">.*?</div>`)

// demonicChapter is demonic's chapter fixture for chapter n: its page images
// under the chapter's own folder, as many as Pages asked for.
func (s *site) demonicChapter(n string) string {
	s.mu.Lock()
	count, private := s.pages[n], s.private[n]
	s.mu.Unlock()
	body := strings.ReplaceAll(s.fixtures["demonic/chapter.html"], "/0180/", "/"+n+"/")
	body = strings.ReplaceAll(body, "Chapter 180", "Chapter "+n)
	if count > 0 || private {
		if count == 0 {
			count = 4
		}
		var b strings.Builder
		b.WriteString(`<div class="main-width center-m">` + "\n" + `<img class="imgholder" src="/img/free_ads.jpg" alt="">` + "\n")
		for i := 1; i <= count; i++ {
			src := fmt.Sprintf("https://cdn.demoniclibs.com/mangas/Solo Max-Level Newbie/%s/%02d.jpg?v=3", n, i)
			if private {
				src = fmt.Sprintf("https://127.0.0.1/mangas/%s/%02d.jpg", n, i)
			}
			fmt.Fprintf(&b, "<img class=\"imgholder\" src=\"%s\" alt=\"page %d\">\n", src, i)
		}
		b.WriteString("</div>")
		body = imgholders.ReplaceAllLiteralString(body, b.String())
	}
	return body
}

// novelChapter is lightnovelworld's chapter fixture for chapter n, whose
// text names the chapter; chapter 3 carries markup-looking text, which must
// stay text.
func novelChapter(fixture, n string) string {
	first := "Chapter " + n + " begins. Sunny opened his eyes to darkness."
	if n == "3" {
		first += " He wrote &lt;b&gt;bold&lt;/b&gt; &amp; <i>meant</i> it."
	}
	return strings.Replace(fixture, "Sunny opened his eyes to darkness.", first, 1)
}

// image serves a generated JPEG: page 4 of every chapter is the same image
// (a credits page), so it is stored once; every other page is its own.
func (s *site) image(w http.ResponseWriter, chapter string, page int) {
	b := PageImage(chapter, page)
	s.mu.Lock()
	s.served += int64(len(b))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

var (
	imageMu    sync.Mutex
	imageCache = map[string][]byte{}
)

// PageImage is the generated image of a page: width 60+page, height 90.
func PageImage(chapter string, page int) []byte {
	if page == 4 {
		chapter = "credits"
	}
	key := chapter + "/" + strconv.Itoa(page)
	imageMu.Lock()
	defer imageMu.Unlock()
	if b, ok := imageCache[key]; ok {
		return b
	}
	h := fnv.New32a()
	_, _ = io.WriteString(h, key)
	seed := h.Sum32()
	img := image.NewRGBA(image.Rect(0, 0, 60+page, 90))
	for y := 0; y < 90; y++ {
		for x := 0; x < 60+page; x++ {
			v := seed ^ uint32(x*131+y*7)
			img.Set(x, y, color.RGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		panic(err)
	}
	imageCache[key] = buf.Bytes()
	return buf.Bytes()
}
