package latest

import "testing"

// A key that is not UTF-8 text, or carries a NUL, is no Series key: every
// surface that reads a {key} from a path (API, web library, archive, Owner
// controls) refuses it before it reaches Postgres, which would fail the
// query (a 500; found by FuzzRouter, seed testdata/fuzz/FuzzRouter/665b493e75dfd349
// in backend/internal/server).
func TestSplitKeyRefusesWhatNoKeyIs(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"asura:solo-leveling": true,
		"comix:5551985":       true,
		"0:\xb5":              false,
		"asura:b\x00":         false,
		"asura:":              false,
		":x":                  false,
		"nokey":               false,
	} {
		if _, _, ok := SplitKey(key); ok != want {
			t.Errorf("SplitKey(%q) ok = %v, want %v", key, ok, want)
		}
	}
}
