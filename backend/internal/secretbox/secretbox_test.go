package secretbox_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/secretbox"
)

func box(t *testing.T, keys ...string) *secretbox.Box {
	t.Helper()
	var raw [][]byte
	for _, k := range keys {
		b, err := secretbox.ParseKey(k)
		require.NoError(t, err)
		raw = append(raw, b)
	}
	b, err := secretbox.New(raw[0], raw[1:]...)
	require.NoError(t, err)
	return b
}

func TestSealOpens(t *testing.T) {
	t.Parallel()
	b := box(t, secretbox.NewKey())
	sealed := b.Seal([]byte("anilist-access-token"), []byte("reader:7:anilist"))
	require.NotContains(t, string(sealed), "anilist-access-token")
	plain, err := b.Open(sealed, []byte("reader:7:anilist"))
	require.NoError(t, err)
	require.Equal(t, "anilist-access-token", string(plain))
}

// Any altered byte, anywhere in the envelope, and a value moved to another
// row (other additional data) fail to open.
func TestTamperDetected(t *testing.T) {
	t.Parallel()
	b := box(t, secretbox.NewKey())
	sealed := b.Seal([]byte("secret"), []byte("reader:7:anilist"))
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		_, err := b.Open(bad, []byte("reader:7:anilist"))
		require.Error(t, err, "byte %d flipped", i)
	}
	_, err := b.Open(sealed, []byte("reader:8:anilist"))
	require.ErrorIs(t, err, secretbox.ErrCorrupt)
	_, err = b.Open(sealed[:len(sealed)-1], []byte("reader:7:anilist"))
	require.ErrorIs(t, err, secretbox.ErrCorrupt)
	_, err = b.Open(nil, nil)
	require.ErrorIs(t, err, secretbox.ErrCorrupt)
}

func TestWrongKey(t *testing.T) {
	t.Parallel()
	a, other := box(t, secretbox.NewKey()), box(t, secretbox.NewKey())
	sealed := a.Seal([]byte("secret"), nil)
	_, err := other.Open(sealed, nil)
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
}

// A rotated Box seals with the new key and still opens what the old one
// sealed; it says which values want resealing.
func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	old := box(t, oldKey)
	sealed := old.Seal([]byte("secret"), []byte("x"))
	rotated := box(t, newKey, oldKey)
	plain, err := rotated.Open(sealed, []byte("x"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(plain))
	require.True(t, rotated.Rotated(sealed))
	require.False(t, rotated.Rotated(rotated.Seal([]byte("secret"), []byte("x"))))
	_, err = box(t, newKey).Open(sealed, []byte("x"))
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
}

// Every Seal draws a fresh nonce: the same plaintext never seals the same.
func TestNoncesUnique(t *testing.T) {
	t.Parallel()
	b := box(t, secretbox.NewKey())
	seen := map[string]bool{}
	for range 10000 {
		s := b.Seal([]byte("same"), nil)
		nonce := string(s[5:17])
		require.False(t, seen[nonce], "a nonce repeated")
		seen[nonce] = true
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "abc", secretbox.NewKey()[:63], secretbox.NewKey() + "00", "zz" + secretbox.NewKey()[2:]} {
		_, err := secretbox.ParseKey(bad)
		require.Error(t, err, "%q", bad)
	}
	k, err := secretbox.ParseKey("  " + secretbox.NewKey() + "\n")
	require.NoError(t, err)
	require.Len(t, k, secretbox.KeySize)
	_, err = secretbox.New(make([]byte, 16))
	require.Error(t, err)
}
