package web

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The placeholder must read the same as the userscript panel's: these cases
// mirror monogram() in userscripts/src/core/bookmarks.js.
func TestMonogramMatchesThePanel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ title, key, want string }{
		{"Solo Leveling", "asura:solo-leveling", "SL"},
		{"solo leveling: ragnarok", "", "SL"},
		{"  Omniscient   Reader's Viewpoint ", "", "OR"},
		{"Blue", "", "B"},
		{"“The” [Greatest] Estate", "", "TG"},
		{"86 -Eighty Six-", "", "8E"},
		{"나 혼자만 레벨업", "", "나혼"},
		{"Ωmega élan", "", "ΩÉ"},
		{"", "demonic:Blue-Lock", "BL"},
		{"", "novelfull:shadow_slave", "SS"},
		{"", "kagane:0199a4c2-7d1e", "07"},
		{"!!! ???", "asura:x", "?"},
		{"", "", "?"},
		{"", "nokey", "?"},
		{"<img src=x onerror=alert(1)>", "", "IS"},
	} {
		require.Equal(t, tc.want, monogram(tc.title, tc.key), "%q %q", tc.title, tc.key)
	}
}

func TestCSRFMasking(t *testing.T) {
	t.Parallel()
	raw := "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	a, b := maskToken(raw), maskToken(raw)
	require.NotEqual(t, a, b, "a fresh pad per response")
	require.NotContains(t, a, raw)
	require.True(t, tokenMatches(a, raw))
	require.True(t, tokenMatches(b, raw))
	require.False(t, tokenMatches(a, raw[:len(raw)-1]+"H"))
	require.False(t, tokenMatches(raw, raw), "the raw token is not accepted in place of a masked one")
	require.False(t, tokenMatches("", raw))
	require.False(t, tokenMatches(a, ""))
	require.False(t, tokenMatches("%%%", raw))
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/library/manga?q=x":    "/library/manga?q=x",
		"/settings":             "/settings",
		"":                      "/fb",
		"library":               "/fb",
		"//evil.example/":       "/fb",
		"/\\evil.example":       "/fb",
		"https://evil.example/": "/fb",
		"/x\r\nSet-Cookie: a=b": "/fb",
		"javascript:alert(1)":   "/fb",
	} {
		require.Equal(t, want, localPath(in, "/fb"), in)
	}
}
