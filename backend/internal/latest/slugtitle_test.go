package latest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlugTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b": "Omniscient Readers Viewpoint",
		"https://www.lightnovelworld.com/novel/shadow-slave":                  "Shadow Slave",
		"https://comix.to/title/r8k2m-the-greatest-estate-developer":          "The Greatest Estate Developer",
		"https://demonicscans.org/manga/Solo-Max-Level-Newbie":                "Solo Max Level Newbie",
		"https://novelfull.com/level-99-hero.html/":                           "Level 99 Hero",
		"https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3":       "",
		"https://example.com/": "",
		"::not a url":          "",
		"https://asurascans.com/comics/the-99th-regression-3b8c9d0e": "The 99th Regression",
	} {
		require.Equal(t, want, SlugTitle(in), in)
	}
}
