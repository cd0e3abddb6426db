package latest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Bodies grown to a target size for the linearity test and the benchmarks:
// a fixture with noise of the kind its page really carries (other Series'
// blocks with their own chapters and images, scripts, ads, comments)
// inserted where the page carries it, so extraction walks past all of it.

// realisticNoise is one block of a Site's page furniture.
var realisticNoise = map[string]string{
	"asura": `<astro-island uid="ZpadX" component-url="/_astro/RelatedSeries.BQx7d2Lk.js" component-export="default" props="{&quot;series&quot;:[1,[[0,{&quot;title&quot;:[0,&quot;Nano Machine&quot;],&quot;coverUrl&quot;:[0,&quot;https://cdn.asurascans.com/asura-images/covers/nano-machine.webp&quot;],&quot;seriesSlug&quot;:[0,&quot;nano-machine-9a8b7c6d&quot;],&quot;chapters&quot;:[1,[[0,{&quot;number&quot;:[0,230]}],[0,{&quot;number&quot;:[0,229]}]]]}]]]}" ssr client="visible" opts="{&quot;name&quot;:&quot;RelatedSeries&quot;,&quot;value&quot;:true}"></astro-island>
<div class="card"><a href="/comics/nano-machine-9a8b7c6d"><img src="https://cdn.asurascans.com/asura-images/covers/nano-machine.webp" alt="Nano Machine"></a><a href="/comics/nano-machine-9a8b7c6d/chapter/230">Chapter 230</a><span class="time">2 hours ago</span></div>
<script>window.dataLayer=window.dataLayer||[];dataLayer.push({"event":"impression","slug":"nano-machine-9a8b7c6d","pos":3});</script>
`,
	"demonic": `<div class="popular-item"><a href="/manga/Nano-Machine"><img src="https://readermc.org/images/thumbnails/Nano Machine.webp" alt="Nano Machine"></a>
<a class="chplinks" href="/chaptered.php?manga=977&amp;chapter=230">Chapter 230 <span>2026-11-01</span></a><div class="genres-list"><li>Action</li><li>Martial Arts</li></div></div>
<script>var popular_ids = [977, 1304, 4812, 5521, 6012, 7781];</script>
`,
	"comix": `<section class="recommended"><a href="/title/x9q1z-nano-machine"><img src="https://static.comix.to/x9q1z/poster-small.webp" alt="Nano Machine"></a>
<a href="/title/x9q1z-nano-machine/6001230-chapter-230">Chapter 230</a><span>3 days ago</span></section>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"ComicSeries","name":"Nano Machine","image":"https://static.comix.to/x9q1z/poster-large.webp"}</script>
`,
	"kagane": `<div class="series-card"><a href="/series/0199b000-1111-7222-8333-444455556666"><img src="https://kagane.to/api/v2/image/0199b001-aaaa-7bbb-8ccc-dddddddddddd" alt="Another Climb"></a><span>Chapter 99</span></div>
<script>self.__next_f.push([1,"9:[\"$\",\"$La\",null,{\"series_id\":\"0199b000-1111-7222-8333-444455556666\",\"title\":\"Another Climb\"}]\n"])</script>
`,
	"lightnovelworld": `<li class="novel-item"><a href="/novel/lord-of-the-mysteries"><figure class="novel-cover"><img class="lazyload" data-src="https://static.lightnovelworld.com/bookcover/158x210/lord-of-the-mysteries.jpg" alt="Lord of the Mysteries"></figure><h4 class="novel-title">Lord of the Mysteries</h4></a>
<ul class="chapter-list"><li><a href="/novel/lord-of-the-mysteries/chapter-1432"><span class="chapter-no">1432</span><strong class="chapter-title">Chapter 1432: Fool</strong></a></li></ul></li>
<div class="adsbox"><ins class="adsbygoogle" data-ad-slot="1111"></ins><script>(adsbygoogle = window.adsbygoogle || []).push({});</script></div>
<div class="comment-item"><p>Great chapter, thanks for the translation!</p><span class="time">2 days ago</span></div>
`,
	"royalroad": `<div class="fiction-list-item row"><figure><a href="/fiction/99003/the-salt-road"><img data-type="cover" src="https://www.royalroadcdn.com/public/covers-large/99003-the-salt-road.jpg?time=1690000000" alt="The Salt Road"></a></figure>
<h2 class="fiction-title"><a href="/fiction/99003/the-salt-road">The Salt Road</a></h2><table class="chapters-of-other"><tr class="chapter-row"><td><a href="/fiction/99003/the-salt-road/chapter/910001/chapter-12-tide">Chapter 12: Tide</a></td></tr></table>
<style>.rr-other-warning{display:none}</style><div class="portlet comment"><p>Loved this one.</p></div></div>
`,
	"webtoons": `<div class="detail_rcmd"><ul><li><a href="https://www.webtoons.com/en/romance/tide-and-tea/list?title_no=8801"><img src="https://swebtoon-phinf.pstatic.net/20250101_1/8801_share.jpg" alt="Tide and Tea"><p class="subj">Tide and Tea</p></a>
<a href="https://www.webtoons.com/en/romance/tide-and-tea/episode-90/viewer?title_no=8801&amp;episode_no=90">Ep. 90</a><span class="ico_fastpass">Fast Pass</span></li></ul></div>
<script>window.__ga=window.__ga||{};__ga.impressions=[{"titleNo":8801,"episodeNo":90},{"titleNo":9912,"episodeNo":12}];</script>
`,
	"novelfull": `<div class="row"><a href="/martial-peak.html" title="Martial Peak"><img src="/uploads/thumbs/martial-peak.jpg" alt="Martial Peak"></a>
<a href="/martial-peak/chapter-6009.html" title="Chapter 6009">Chapter 6009</a><ul class="l-chapters"><li><a href="/martial-peak/chapter-6008.html">Chapter 6008</a></li></ul></div>
<div class="ads ads-holder"><ins class="adsbygoogle"></ins><script>(adsbygoogle = window.adsbygoogle || []).push({});</script></div>
`,
}

// growHTML inserts noise before </body> until the body reaches size.
func growHTML(body []byte, noise string, size int) []byte {
	at := bytes.LastIndex(body, []byte("</body>"))
	if at < 0 {
		at = len(body)
	}
	var pad bytes.Buffer
	for len(body)+pad.Len() < size {
		pad.WriteString(noise)
	}
	out := make([]byte, 0, len(body)+pad.Len())
	out = append(out, body[:at]...)
	out = append(out, pad.Bytes()...)
	return append(out, body[at:]...)
}

// growKagane adds other Series to the API answer's related_series.
func growKagane(t testing.TB, body []byte, size int) []byte {
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	related := listOf(m["related_series"])
	one, err := json.Marshal(related[0])
	require.NoError(t, err)
	for {
		out, err := json.Marshal(m)
		require.NoError(t, err)
		if len(out) >= size {
			return out
		}
		for range max(1, (size-len(out))/(len(one)+1)) {
			related = append(related, related[0])
		}
		m["related_series"] = related
	}
}

// growComix adds noise to the page and other Series' queries to initial-data.
func growComix(body []byte, size int) []byte {
	var q strings.Builder
	for i := 0; q.Len() < size/2; i++ {
		fmt.Fprintf(&q, `"[\"title\",\"recommended\",\"pad%d\"]": {"data": [{"hid": "x9q1z", "title": "Nano Machine", "poster": {"medium": "https://static.comix.to/x9q1z/poster-medium.webp"}, "latestChapter": {"number": 230}}]},`, i)
	}
	body = bytes.Replace(body, []byte(`"queries": {`), []byte(`"queries": {`+q.String()), 1)
	return growHTML(body, realisticNoise["comix"], size)
}

// growMangadex adds what a MangaDex answer really grows by: other
// manga's relationships on a record (related works, authors), other manga's
// chapters and other languages' uploads in a feed.
func growMangadex(t testing.TB, body []byte, size int) []byte {
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	var grow func(i int) any
	var list []any
	var put func([]any)
	if data := listOf(m["data"]); data != nil {
		list = data
		grow = func(i int) any {
			return map[string]any{"id": fmt.Sprintf("d0000000-0000-4000-8000-%012d", i), "type": "chapter",
				"attributes": map[string]any{"chapter": fmt.Sprint(i), "title": "Elsewhere", "translatedLanguage": "fr", "externalUrl": nil,
					"publishAt": "2026-01-01T00:00:00+00:00", "pages": 9},
				"relationships": []any{map[string]any{"id": "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9", "type": "manga"}}}
		}
		put = func(l []any) { m["data"] = l }
	} else {
		data := mapOf(m["data"])
		list = listOf(data["relationships"])
		grow = func(i int) any {
			return map[string]any{"id": fmt.Sprintf("e0000000-0000-4000-8000-%012d", i), "type": "manga", "related": "side_story",
				"attributes": map[string]any{"title": map[string]any{"en": "Another Lantern"}}}
		}
		put = func(l []any) { data["relationships"] = l }
	}
	for i := 0; ; {
		put(list)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		if len(out) >= size {
			return out
		}
		for range max(1, (size-len(out))/300) {
			list = append(list, grow(i))
			i++
		}
	}
}

// grownBody is a Site's fixture grown to size with realistic noise.
func grownBody(t testing.TB, site, file string, size int) []byte {
	body := readFixture(t, site, file)
	switch site {
	case "kagane":
		if strings.HasSuffix(file, ".json") && bytes.Contains(body, []byte("related_series")) {
			return growKagane(t, body, size)
		}
		return growHTML(body, realisticNoise["kagane"], size)
	case "comix":
		return growComix(body, size)
	case "mangadex":
		return growMangadex(t, body, size)
	}
	return growHTML(body, realisticNoise[site], size)
}

// hostileNoise is noise shaped to make a careless extractor super-linear:
// deep nesting, many candidate blocks, markers the extractors search for.
var hostileNoise = map[string]string{
	"generic":         strings.Repeat("<div><span>", 200) + "x" + strings.Repeat("</span></div>", 200),
	"attributes":      `<img class="imgholder chplinks chapter-list" data-src="` + strings.Repeat("a", 2000) + `" title="` + strings.Repeat("Chapter 1 ", 200) + `">`,
	"asura-islands":   `<astro-island component-url="/_astro/ChapterListReact.x.js" opts="{&quot;name&quot;:&quot;ChapterListReact&quot;}" props="{&quot;seriesSlug&quot;:[0,&quot;other-1a2b3c4d&quot;],&quot;chapters&quot;:[1,[[0,{&quot;number&quot;:[0,1]}]]]}"></astro-island>`,
	"asura-next":      `<script>self.__next_f.push([1,"\"pages\":[{\"order\":1}],\"pages\":["])</script>`,
	"lists":           `<div id="chapters-list"><a class="chplinks" href="/chaptered.php?manga=1&amp;chapter=1">Chapter 1</a></div><ul class="chapter-list"><li><a href="/novel/x/chapter-1">Chapter 1</a></li></ul><div id="list-chapter"><ul class="list-chapter"><li><a href="/x/chapter-1.html">Chapter 1</a></li></ul></div>`,
	"comment-markers": `<div class="comment-list"><p>c</p></div><section id="comments"></section>`,
}

// longList is a series page of a Site whose own chapter list has n
// chapters, and the page's URL: the legitimate way a body grows large.
func longList(t testing.TB, site string, n int) ([]byte, string) {
	var b strings.Builder
	switch site {
	case "asura":
		const slug = "omniscient-readers-viewpoint-7f3k9a2b"
		var items []string
		for i := 1; i <= n; i++ {
			items = append(items, fmt.Sprintf(`[0,{"number":[0,%d],"title":[0,"Part %d"],"is_premium":[0,false],"series_slug":[0,"%s"]}]`, i, i, slug))
		}
		props := `{"chapters":[1,[` + strings.Join(items, ",") + `]],"seriesSlug":[0,"` + slug + `"]}`
		fmt.Fprintf(&b, `<html><body><astro-island component-url="/_astro/ChapterListReact.x.js" opts="{&quot;name&quot;:&quot;ChapterListReact&quot;}" props="%s"></astro-island></body></html>`, html.EscapeString(props))
		return []byte(b.String()), orv
	case "demonic":
		b.WriteString(`<html><body><div id="manga-info-container"><h1 class="big-fat-titles">T</h1></div><div id="chapters-list">`)
		for i := n; i >= 1; i-- {
			fmt.Fprintf(&b, `<a class="chplinks" href="/chaptered.php?manga=4812&amp;chapter=%d">Chapter %d <span>2026-01-01</span></a>`, i, i)
		}
		b.WriteString(`</div></body></html>`)
		return []byte(b.String()), smln
	case "comix":
		var items []string
		for i := 1; i <= n; i++ {
			items = append(items, fmt.Sprintf(`{"chapterId":%d,"number":%d,"name":"","createdAt":"%d days ago"}`, 5000000+i, i, n-i))
		}
		fmt.Fprintf(&b, `<html><body><script id="initial-data" type="application/json">{"queries":{"[\"title\",\"detail\",\"r8k2m\"]":{"data":{"hid":"r8k2m","url":"/title/r8k2m-the-greatest-estate-developer"}},"[\"title\",\"chapters\",\"r8k2m\"]":{"data":{"items":[%s]}}}}</script></body></html>`, strings.Join(items, ","))
		return []byte(b.String()), tged
	case "kagane":
		var books []string
		for i := 1; i <= n; i++ {
			books = append(books, fmt.Sprintf(`{"book_id":"b%d","title":"Chapter %d","chapter_no":"%d","sort_no":%d}`, i, i, i, i))
		}
		fmt.Fprintf(&b, `{"series_id":"%s","title":"T","series_covers":[{"image_id":"c1"}],"series_books":[%s]}`, towerID, strings.Join(books, ","))
		return []byte(b.String()), tower
	case "lightnovelworld":
		b.WriteString(`<html><body><h1 class="novel-title">T</h1><ul class="chapter-list">`)
		for i := n; i >= 1; i-- {
			fmt.Fprintf(&b, `<li><a href="/novel/shadow-slave/chapter-%d"><span class="chapter-no">%d</span><strong class="chapter-title">Chapter %d</strong></a></li>`, i, i, i)
		}
		b.WriteString(`</ul></body></html>`)
		return []byte(b.String()), shadow
	case "novelfull":
		b.WriteString(`<html><body><h3 class="title">T</h3><div id="list-chapter"><ul class="list-chapter">`)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, `<li><a href="/the-legendary-mechanic/chapter-%d.html" title="Chapter %d">Chapter %d</a></li>`, i, i, i)
		}
		b.WriteString(`</ul></div></body></html>`)
		return []byte(b.String()), mechanic + ".html"
	case "webtoons":
		b.WriteString(`<html><body><h1 class="subj">T</h1><ul id="_listUl">`)
		for i := n; i >= 1; i-- {
			fmt.Fprintf(&b, `<li class="_episodeItem"><a href="%s/episode-%d/viewer?title_no=7710&amp;episode_no=%d"><span class="subj"><span>Ep. %d</span></span></a></li>`, salt, i, i, i)
		}
		b.WriteString(`</ul></body></html>`)
		return []byte(b.String()), saltList
	case "royalroad":
		b.WriteString(`<html><body><div class="fic-title"><h1>T</h1></div><table id="chapters"><tbody>`)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, `<tr class="chapter-row"><td><a href="/fiction/48112/the-lamplighters-ledger/chapter/%d/chapter-%d">Chapter %d</a></td></tr>`, 800000+i, i, i)
		}
		b.WriteString(`</tbody></table></body></html>`)
		return []byte(b.String()), lamp
	case "mangadex":
		var data []string
		for i := 1; i <= n; i++ {
			data = append(data, fmt.Sprintf(`{"id":"c0000000-0000-4000-8000-%012d","type":"chapter","attributes":{"chapter":"%d","title":"Part %d","translatedLanguage":"en","externalUrl":null,"publishAt":"2026-01-01T00:00:00+00:00","pages":12},"relationships":[{"id":"%s","type":"manga"}]}`, i, i, i, mdID))
		}
		fmt.Fprintf(&b, `{"result":"ok","response":"collection","data":[%s],"limit":%d,"offset":0,"total":%d}`, strings.Join(data, ","), n, n)
		return []byte(b.String()), mdFeed
	}
	t.Fatalf("no long list for %s", site)
	return nil, ""
}
