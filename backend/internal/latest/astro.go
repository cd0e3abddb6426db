package latest

import (
	"encoding/json"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// Astro pages (asura since 2026) carry their data in the props attribute of
// <astro-island> elements: JSON in which every value is wrapped as a
// [type, value] pair (0 plain value or object, 1 array, others dates, maps
// and the like). The HTML parser has already unescaped the attribute.

// astroIsland is one island: its component name and its raw props.
type astroIsland struct {
	node *html.Node
}

// astroIslands returns the page's islands in document order.
func astroIslands(doc *goquery.Document) []astroIsland {
	var out []astroIsland
	doc.Find("astro-island").Each(func(_ int, s *goquery.Selection) {
		out = append(out, astroIsland{node: s.Nodes[0]})
	})
	return out
}

// is reports whether the island renders the named component, by its opts
// name or by its component file (/_astro/Name.hash.js).
func (a astroIsland) is(name string) bool {
	if opts, ok := attr(a.node, "opts"); ok {
		if m := jsonObject(opts); m != nil && stringOf(m["name"]) == name {
			return true
		}
	}
	if u, ok := attr(a.node, "component-url"); ok {
		base := u[strings.LastIndexByte(u, '/')+1:]
		if base == name || strings.HasPrefix(base, name+".") {
			return true
		}
	}
	return false
}

// props decodes the island's props, unwrapped into plain JSON values; nil
// when they are not a JSON object.
func (a astroIsland) props() map[string]any {
	raw, ok := attr(a.node, "props")
	if !ok {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil
	}
	return astroObject(m)
}

func astroObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = astroValue(v)
	}
	return out
}

// astroValue unwraps one serialised value. A value that is not a pair is
// taken as it is, so a page that stops wrapping still reads.
func astroValue(v any) any {
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return v
	}
	t, ok := pair[0].(float64)
	if !ok {
		return v
	}
	switch t {
	case 0:
		if m, ok := pair[1].(map[string]any); ok {
			return astroObject(m)
		}
		return pair[1]
	case 1:
		l := listOf(pair[1])
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = astroValue(e)
		}
		return out
	default:
		return pair[1]
	}
}
