package web_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// startBrowser launches a fresh headless Chromium and returns its first tab.
func startBrowser(t testing.TB) context.Context {
	t.Helper()
	path := testenv.ChromiumPath(t)
	profile := t.TempDir() // registered first, so removed after the browser exits
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts, chromedp.ExecPath(path), chromedp.UserDataDir(profile))
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "disable-quic", "no-first-run",
		"disable-background-networking", "disable-component-update", "disable-sync"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "start Chromium at %s", path)
	return ctx
}

// browserTab drives one tab against the test server.
type browserTab struct {
	t    testing.TB
	ctx  context.Context
	base string
}

// newTab opens a tab in a fresh browser context (its own cookies) that
// records every CSP violation a page reports.
func newTab(t testing.TB, browser context.Context, base string) *browserTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first run opens the tab and ties it to the context it runs with:
	// that must be ctx itself, not a step's timeout.
	require.NoError(t, chromedp.Do(ctx))
	tab := &browserTab{t: t, ctx: ctx, base: base}
	tab.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`,
		})
		if err != nil {
			return err
		}
		// Headless Chromium reports a light system theme; Cinder is dark
		// first, so the screenshots show what most Readers see.
		_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	tab.viewport(1280, 900, false)
	return tab
}

func (b *browserTab) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, 45*time.Second)
}

func (b *browserTab) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...))
}

// load runs actions that navigate (a Navigate, a click on a submit button)
// and waits for the new page; it returns the final response status.
func (b *browserTab) load(actions ...chromedp.Action[chromedp.Void]) int64 {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	require.NoError(b.t, err)
	b.noCSPViolations()
	return resp.Status
}

func (b *browserTab) open(path string) int64 {
	b.t.Helper()
	return b.load(chromedp.Navigate(b.base + path))
}

func (b *browserTab) click(sel string) int64 {
	b.t.Helper()
	return b.load(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

func eval[T any](b *browserTab, expr string) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, expr)
	return v
}

// waitFor polls a JavaScript condition until it is true.
func (b *browserTab) waitFor(expr string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(b.t, err, "waiting for %s", expr)
}

func (b *browserTab) fill(sel, value string) {
	b.t.Helper()
	b.do(chromedp.SetValue(chromedp.CSS(sel), value, chromedp.NodeVisible))
}

func (b *browserTab) text(sel string) string {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	require.NoError(b.t, err, sel)
	return strings.Join(strings.Fields(s), " ")
}

func (b *browserTab) path() string {
	return eval[string](b, `location.pathname + location.search`)
}

func (b *browserTab) cardTitles() []string {
	return eval[[]string](b, `[...document.querySelectorAll('.card-title')].map(a => a.textContent)`)
}

func (b *browserTab) noCSPViolations() {
	b.t.Helper()
	v := eval[[]string](b, `window.__csp || []`)
	require.Empty(b.t, v, "CSP violations on %s", b.path())
}

func (b *browserTab) viewport(w, h int64, phone bool) {
	b.t.Helper()
	if phone {
		b.do(chromedp.EmulateViewport(w, h, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
		return
	}
	b.do(chromedp.EmulateViewport(w, h))
}

// shoot saves full-page screenshots of the current page at 1280 px and at
// 390 px (a phone), and checks the phone layout does not scroll sideways.
func (b *browserTab) shoot(name string) { b.screenshots(name, true) }

// screenshots is shoot, or with full false only the first screen of a page
// too long for one image.
func (b *browserTab) screenshots(name string, full bool) {
	b.t.Helper()
	dir := testenv.ScreenshotDir(b.t)
	for _, v := range []struct {
		suffix string
		w, h   int64
		phone  bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		b.viewport(v.w, v.h, v.phone)
		// Let the layout settle at the new width before measuring.
		b.waitFor(`document.readyState === 'complete'`)
		if v.phone {
			overflow := eval[float64](b, `document.documentElement.scrollWidth - window.innerWidth`)
			require.LessOrEqual(b.t, overflow, 0.0, "%s: the phone layout scrolls sideways", name)
		}
		ctx, cancel := b.step()
		shot := chromedp.CaptureScreenshot()
		if full {
			shot = chromedp.FullScreenshot(100)
		}
		buf, err := chromedp.Run(ctx, shot)
		cancel()
		require.NoError(b.t, err)
		file := filepath.Join(dir, "web-"+name+"-"+v.suffix+".png")
		require.NoError(b.t, os.WriteFile(file, buf, 0o644))
	}
	b.viewport(1280, 900, false)
}

// coverPNG draws a small Cover: a two-colour gradient with a band, so the
// screenshots show real artwork next to the placeholders.
func coverPNG(t testing.TB, top, bottom color.RGBA) []byte {
	t.Helper()
	const w, h = 160, 224
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		f := float64(y) / h
		c := color.RGBA{
			R: uint8(float64(top.R)*(1-f) + float64(bottom.R)*f),
			G: uint8(float64(top.G)*(1-f) + float64(bottom.G)*f),
			B: uint8(float64(top.B)*(1-f) + float64(bottom.B)*f), A: 255,
		}
		for x := range w {
			if (x+y)/14%5 == 0 {
				img.Set(x, y, color.RGBA{R: c.R / 2, G: c.G / 2, B: c.B / 2, A: 255})
			} else {
				img.Set(x, y, c)
			}
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// storeCover puts PNG bytes in the content-addressed Cover store and points
// the Series at them, as the fetch_cover job does.
func (b *testBundle) storeCover(key string, png []byte) string {
	b.T.Helper()
	addr, err := (&blob.FS{Dir: b.Config.CoverDir}).Put(context.Background(), png, "image/png")
	require.NoError(b.T, err)
	_, err = b.Store.Pool.Exec(context.Background(), `
		UPDATE series SET cover_address = $2, cover_type = 'image/png', cover_size = $3, cover_at = now(), updated_at = now()
		WHERE key = $1`, key, addr, len(png))
	require.NoError(b.T, err)
	return addr
}

func TestBrowserLibraryAndOwnerConsole(t *testing.T) {
	b := setup(t)
	browser := startBrowser(t)
	owner := newTab(t, browser, b.URL)

	// First run: the front door leads to set-up, which creates the Owner.
	require.EqualValues(t, 200, owner.open("/"))
	require.Equal(t, "/setup", owner.path())
	owner.shoot("setup")
	owner.fill("#name", "olive")
	owner.fill("#password", password)
	owner.fill("#confirm", password)
	require.EqualValues(t, 200, owner.click(`[data-testid="setup-form"] button[type="submit"]`))
	require.Equal(t, "/library/manga?msg=welcome", owner.path())
	require.Equal(t, "olive", owner.text(`[data-testid="who"]`))
	require.Contains(t, owner.text(`[data-testid="empty"]`), "Your manga library is empty")
	olive, err := b.Store.ReaderByName(context.Background(), "olive")
	require.NoError(t, err)
	require.True(t, olive.IsOwner)

	// A library with stored Covers, a Cover whose bytes are missing (the
	// route 404s), and Series without a Cover yet.
	now := time.Now()
	type seed struct {
		url, title, read string
		latest           int
		ago              time.Duration
		art              []color.RGBA
	}
	seeds := []seed{
		{soloURL, "Solo Leveling", "Chapter 10", 12, 2 * time.Hour, []color.RGBA{{40, 60, 140, 255}, {180, 80, 200, 255}}},
		{omniURL, "Omniscient Reader", "Chapter 50", 50, 26 * time.Hour, nil},
		{lockURL, "Blue Lock", "Chapter 5", 7, 10 * time.Minute, nil},
		{"https://asurascans.com/comics/nano-machine-5e6f7a8b", "Nano Machine", "Chapter 200", 203, 5 * time.Hour, []color.RGBA{{20, 120, 90, 255}, {230, 200, 90, 255}}},
		{"https://asurascans.com/comics/the-greatest-estate-developer-2b3c4d5e", "The Greatest Estate Developer", "Chapter 150", 150, 72 * time.Hour, []color.RGBA{{160, 40, 40, 255}, {250, 170, 80, 255}}},
		{"https://comix.to/title/r8k2m-return-of-the-mount-hua-sect", "Return of the Mount Hua Sect", "Chapter 88", 90, 40 * time.Minute, []color.RGBA{{30, 30, 40, 255}, {90, 170, 220, 255}}},
		{"https://demonicscans.org/manga/Eleceed", "Eleceed", "Chapter 300", 300, 9 * 24 * time.Hour, nil},
		{"https://asurascans.com/comics/zeta-0a0b0c0d", "", "Chapter 1", 0, 0, nil},
	}
	for _, s := range seeds {
		chapterURL := ""
		if strings.HasPrefix(s.url, "https://asurascans.com/") {
			chapterURL = s.url + "/chapter/" + strings.TrimPrefix(s.read, "Chapter ")
		}
		bm := b.bookmark(olive.ID, s.url, s.title, s.read, chapterURL)
		if s.latest > 0 {
			b.setLatest(bm.Key, fmt.Sprintf("Chapter %d", s.latest), float64(s.latest), s.url+fmt.Sprintf("/chapter/%d", s.latest), now.Add(-s.ago))
		}
		if s.art != nil {
			b.storeCover(bm.Key, coverPNG(t, s.art[0], s.art[1]))
		}
	}
	_, err = b.Store.Pool.Exec(context.Background(),
		`UPDATE series SET cover_address = $2, cover_type = 'image/jpeg' WHERE key = $1`, omniKey, strings.Repeat("0f", 32))
	require.NoError(t, err)
	b.bookmark(olive.ID, slaveURL, "Shadow Slave", "Chapter 100", "")

	require.EqualValues(t, 200, owner.open("/library/manga"))
	require.Len(t, owner.cardTitles(), 8)
	soloImg := `document.querySelector('[data-key="` + soloKey + `"] img[data-cover]')`
	owner.waitFor(soloImg + `?.complete && ` + soloImg + `.naturalWidth === 160`)
	require.Equal(t, b.Config.PublicBaseURL+"/covers/", eval[string](owner, soloImg+`.src`)[:len(b.Config.PublicBaseURL)+8])
	// The Cover whose bytes are gone: its <img> fails and is removed, the
	// monogram shows, as in the panel.
	owner.waitFor(`document.querySelector('[data-key="` + omniKey + `"] img') === null`)
	require.Equal(t, "OR", owner.text(`[data-key="`+omniKey+`"] .placeholder`))
	require.Equal(t, "BL", owner.text(`[data-key="`+lockKey+`"] .placeholder`))
	require.Equal(t, "Z", owner.text(`[data-key="asura:zeta"] .placeholder`))
	bg := eval[string](owner, `getComputedStyle(document.querySelector('[data-key="`+lockKey+`"] .placeholder')).backgroundImage`)
	require.Contains(t, bg, "repeating-linear-gradient", "the hatched tile")
	// The placeholder under a loaded Cover is hidden by it.
	require.True(t, eval[bool](owner, `(() => {
		const img = `+soloImg+`; const r = img.getBoundingClientRect();
		return document.elementFromPoint(r.x + r.width/2, r.y + r.height/2) === img;
	})()`))
	require.Equal(t, []string{"Blue Lock", "Return of the Mount Hua Sect", "Solo Leveling", "Nano Machine",
		"Omniscient Reader", "The Greatest Estate Developer", "Eleceed", "Zeta"}, owner.cardTitles())
	owner.shoot("library")

	// Filter by text, with the form's own button.
	owner.fill(`[data-testid="filter-q"]`, "LEVEL")
	require.EqualValues(t, 200, owner.click(`[data-testid="filter-apply"]`))
	require.Equal(t, []string{"Solo Leveling"}, owner.cardTitles())
	require.Equal(t, "/library/manga?q=LEVEL&site=&sort=unread", owner.path())
	// Changing a menu applies at once (the progressive-enhancement script).
	require.EqualValues(t, 200, owner.open("/library/manga"))
	require.EqualValues(t, 200, owner.load(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { const s = document.querySelector('[data-testid="filter-sort"]');
			s.value = 'title'; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)(ctx, t)
		return err
	})))
	require.Equal(t, []string{"Blue Lock", "Eleceed", "Nano Machine", "Omniscient Reader",
		"Return of the Mount Hua Sect", "Solo Leveling", "The Greatest Estate Developer", "Zeta"}, owner.cardTitles())
	require.EqualValues(t, 200, owner.load(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { const s = document.querySelector('[data-testid="filter-site"]');
			s.value = 'demonic'; s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)(ctx, t)
		return err
	})))
	require.Equal(t, []string{"Blue Lock", "Eleceed"}, owner.cardTitles())
	require.Equal(t, "/library/manga?q=&site=demonic&sort=title", owner.path())

	// Mark caught up from the card.
	require.EqualValues(t, 200, owner.click(`[data-key="`+lockKey+`"] .caught-up`))
	require.Equal(t, "Marked as caught up.", owner.text(`[data-testid="flash"]`))
	require.Equal(t, "Chapter 7", owner.text(`[data-key="`+lockKey+`"] .progress`))

	// Remove asks first (the script names the card's title); dismissing
	// keeps the Bookmark, accepting removes it.
	var questions []string
	dialogs, answered := make(chan string, 2), make(chan struct{})
	require.NoError(t, chromedp.Listen(owner.ctx, func(ev any) {
		if d, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok {
			select {
			case dialogs <- d.Message:
			default:
			}
		}
	}))
	go func() {
		defer close(answered)
		for _, accept := range []bool{false, true} {
			questions = append(questions, <-dialogs)
			_, _ = chromedp.Call(owner.ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: accept})
		}
	}()
	eleceed := `[data-key="demonic:Eleceed"] .remove`
	owner.do(chromedp.Click(chromedp.CSS(eleceed), chromedp.NodeVisible))
	require.Equal(t, []string{"Blue Lock", "Eleceed"}, owner.cardTitles(), "dismissed: nothing removed")
	require.EqualValues(t, 200, owner.click(eleceed))
	<-answered
	require.Equal(t, []string{"Remove “Eleceed” from your library?", "Remove “Eleceed” from your library?"}, questions)
	require.Equal(t, "Bookmark removed.", owner.text(`[data-testid="flash"]`))
	require.Equal(t, []string{"Blue Lock"}, owner.cardTitles())

	// The Series page.
	require.EqualValues(t, 200, owner.open("/series/"+soloKey))
	require.Equal(t, "Solo Leveling", owner.text(`[data-testid="series-title"]`))
	owner.waitFor(`document.querySelector('.cover.large img')?.naturalWidth === 160`)
	owner.shoot("series")

	// Settings: a token is shown once and works on the API.
	require.EqualValues(t, 200, owner.open("/settings"))
	owner.fill("#token-name", "phone Firefox")
	require.EqualValues(t, 200, owner.click(`[data-testid="token-form"] button[type="submit"]`))
	token := owner.text(`[data-testid="new-token-value"]`)
	require.Regexp(t, `^lec_[A-Za-z0-9_-]{43}$`, token)
	require.Equal(t, http.StatusOK, apiStatus(t, b, token))
	owner.shoot("settings-new-token")
	require.EqualValues(t, 200, owner.open("/settings"))
	require.False(t, eval[bool](owner, `document.body.innerHTML.includes(`+fmt.Sprintf("%q", token)+`)`), "shown only once")
	require.Equal(t, 0, eval[int](owner, `document.querySelectorAll('[data-testid="new-token"]').length`))

	// Owner console: create a Reader.
	require.EqualValues(t, 200, owner.click(`[data-testid="nav-owner"]`))
	require.Equal(t, "/owner/readers", owner.path())
	owner.fill("#new-name", "ann")
	owner.fill("#new-password", password)
	require.EqualValues(t, 200, owner.click(`[data-testid="reader-form"] button[type="submit"]`))
	require.Equal(t, "Reader created.", owner.text(`[data-testid="flash"]`))
	require.Equal(t, "ann", owner.text(`[data-testid="reader-row"][data-name="ann"] strong`))
	owner.shoot("owner-readers")
	annRow, err := b.Store.ReaderByName(context.Background(), "ann")
	require.NoError(t, err)
	require.EqualValues(t, 200, owner.open(fmt.Sprintf("/owner/readers/%d/delete", annRow.ID)))
	owner.shoot("owner-reader-delete")

	// The new Reader signs in elsewhere; the Owner console is closed to her.
	ann := newTab(t, browser, b.URL)
	require.EqualValues(t, 200, ann.open("/owner/readers"))
	require.Equal(t, "/login?next=%2Fowner%2Freaders", ann.path())
	ann.shoot("login")
	ann.fill("#name", "ann")
	ann.fill("#password", "not her password")
	require.EqualValues(t, 401, ann.click(`[data-testid="login-form"] button[type="submit"]`))
	require.Equal(t, "Wrong name or password.", ann.text(`[data-testid="form-error"]`))
	ann.fill("#password", password)
	require.EqualValues(t, 403, ann.click(`[data-testid="login-form"] button[type="submit"]`),
		"back to the page she asked for, which is the Owner's")
	require.Contains(t, ann.text(`[data-testid="error-message"]`), "Only the Owner")
	require.Equal(t, 0, eval[int](ann, `document.querySelectorAll('[data-testid="nav-owner"]').length`))
	ann.shoot("forbidden")
	require.EqualValues(t, 200, ann.open("/library/manga"))
	require.Contains(t, ann.text(`[data-testid="empty"]`), "Install the userscript")
	ann.shoot("library-empty")

	// Sign out, and back in through the form.
	require.EqualValues(t, 200, owner.click(`[data-testid="logout"]`))
	require.Equal(t, "/login", owner.path())
	require.EqualValues(t, 200, owner.open("/library/manga"))
	require.True(t, strings.HasPrefix(owner.path(), "/login?next="))
	owner.fill("#name", "olive")
	owner.fill("#password", password)
	require.EqualValues(t, 200, owner.click(`[data-testid="login-form"] button[type="submit"]`))
	require.Equal(t, "/library/manga", owner.path())
	require.Len(t, owner.cardTitles(), 7)

	// The light theme, chosen with the toggle, is kept across pages.
	require.False(t, eval[bool](owner, `document.querySelector('[data-theme-toggle]').hidden`))
	owner.do(chromedp.Click(chromedp.CSS(`[data-theme-toggle]`), chromedp.NodeVisible)) // system → dark
	owner.do(chromedp.Click(chromedp.CSS(`[data-theme-toggle]`), chromedp.NodeVisible)) // dark → light
	require.Equal(t, "light", eval[string](owner, `document.documentElement.dataset.theme`))
	require.EqualValues(t, 200, owner.open("/library/manga"))
	require.Equal(t, "light", eval[string](owner, `document.documentElement.dataset.theme`))
	require.Equal(t, "rgb(244, 243, 239)", eval[string](owner, `getComputedStyle(document.body).backgroundColor`))
	owner.waitFor(soloImg + `?.naturalWidth === 160`)
	owner.shoot("library-light")
}
