package web_test

import (
	"context"
	"image/color"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Works in a real Chromium: a suggestion accepted with a click becomes one
// card, the Series page shows the Work, and the move page moves only what
// is ticked; every page without a CSP violation, the phone layout without
// sideways scrolling (shoot), screenshots under LECTERN_SCREENSHOT_DIR.
func TestBrowserWorks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	seedStory(t, b, ann.ID)
	b.storeCover(orvDemonicKey, coverPNG(t, color.RGBA{40, 160, 120, 255}, color.RGBA{30, 30, 90, 255}))
	b.put(ann.ID, lockURL, "Blue Lock", "Chapter 5", 5, "")
	b.put(ann.ID, "https://asurascans.com/comics/blue-lock-0a1b2c3d", "Blue Lock", "Chapter 3", 3, "")
	b.put(ann.ID, soloURL, "Solo Leveling", "Chapter 10", 10, "")

	browser := startBrowser(t)
	tab := newTab(t, browser, b.URL)
	require.EqualValues(t, 200, tab.open("/login"))
	tab.fill("#name", "ann")
	tab.fill("#password", password)
	require.EqualValues(t, 200, tab.click(`[data-testid="login-form"] button[type="submit"]`))
	require.Equal(t, "/library/manga", tab.path())
	require.Equal(t, 2, eval[int](tab, `document.querySelectorAll('[data-testid="work-suggestion"]').length`))
	tab.shoot("works-suggestions")

	require.EqualValues(t, 200, tab.click(`[data-keys="`+orvAsuraKey+` `+orvDemonicKey+`"] [data-testid="suggestion-accept"]`))
	require.Equal(t, "/library/manga?msg=linked", tab.path())
	require.Equal(t, []string{"Blue Lock", "Blue Lock", orvTitle, "Solo Leveling"}, sorted(tab.cardTitles()))
	require.Equal(t, "Chapter 250 on asura", tab.text(`[data-work] .progress`))
	require.Equal(t, "Chapter 251 on demonic", tab.text(`[data-work] .latest`))
	require.True(t, eval[bool](tab, `(() => { const i = document.querySelector('[data-work] img'); return !!i && i.complete && i.naturalWidth > 0; })()`),
		"the Work's card shows the Cover of the member that has one")
	tab.shoot("works-library")

	require.EqualValues(t, 200, tab.click(`[data-work] .card-title`))
	require.Equal(t, "One story on 2 Sites. Progress: Chapter 250 on asura · newest: Chapter 251 on demonic", tab.text(`[data-testid="work-summary"]`))
	tab.shoot("works-series")

	require.EqualValues(t, 200, tab.open("/works/move?site=demonic"))
	tab.shoot("works-move")
	require.EqualValues(t, 400, tab.click(`[data-testid="move-confirm"]`), "nothing ticked: nothing moves")
	require.EqualValues(t, 200, tab.open("/works/move?site=demonic"))
	tab.do(chromedp.Click(chromedp.CSS(`[data-testid="move-row"][data-key="`+lockKey+`"] [data-testid="move-target"]`), chromedp.NodeVisible))
	require.EqualValues(t, 200, tab.click(`[data-testid="move-confirm"]`))
	require.Equal(t, "/works/move?msg=moved&site=demonic", tab.path())
	moved, err := b.lib.Get(context.Background(), ann.ID, "asura:blue-lock")
	require.NoError(t, err)
	require.Equal(t, "Chapter 5", moved.Chapter)
	require.NotEmpty(t, moved.Work)
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
