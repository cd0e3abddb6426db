// Package secretbox keeps small secrets at rest (tracker tokens, and later
// notification credentials): AES-256-GCM under the deployment's SECRET_KEY,
// with a versioned envelope so the key can be rotated without a flag day.
//
// A sealed value is
//
//	version (1 byte, 1) | key id (4 bytes) | nonce (12 bytes) | ciphertext and tag
//
// The key id is the first four bytes of SHA-256 of the key, so Open finds
// the key a value was sealed with among the current and the previous ones
// (a rotation seals with the new key and still opens with the old until every
// row has been rewritten). Each Seal draws a fresh random nonce: 96 random
// bits are safe for far more values than a deployment ever seals under one
// key. The additional data binds a value to where it is stored (a Reader and
// a tracker), so a ciphertext copied into another row does not open there.
package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// version is the envelope this package writes.
const version byte = 1

const (
	idSize    = 4
	nonceSize = 12
	header    = 1 + idSize + nonceSize
)

// Errors of Open. A value that fails to open says only which of these it
// is: never anything about the plaintext.
var (
	// ErrUnknownKey: the value was sealed with a key this Box does not hold.
	ErrUnknownKey = errors.New("sealed with a key this deployment does not have")
	// ErrCorrupt: the value is not a sealed value of a known version, or it
	// was altered (or moved to another place: the additional data differs).
	ErrCorrupt = errors.New("sealed value is corrupt or was altered")
)

// ParseKey reads a key written as 64 hexadecimal characters (SECRET_KEY).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) != 2*KeySize {
		return nil, fmt.Errorf("a key is %d hexadecimal characters (%d random bytes), not %d characters", 2*KeySize, KeySize, len(s))
	}
	k, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("a key is written in hexadecimal: %w", err)
	}
	return k, nil
}

// NewKey returns a fresh random key as 64 hexadecimal characters, the way
// SECRET_KEY is written.
func NewKey() string {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(k)
}

type sealer struct {
	id   [idSize]byte
	aead cipher.AEAD
}

// Box seals with its current key and opens with any key it holds.
type Box struct {
	current sealer
	all     []sealer
}

// New returns a Box that seals with current and opens values sealed with
// current or any of previous.
func New(current []byte, previous ...[]byte) (*Box, error) {
	b := &Box{}
	for i, k := range append([][]byte{current}, previous...) {
		s, err := newSealer(k)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			b.current = s
		}
		b.all = append(b.all, s)
	}
	return b, nil
}

func newSealer(key []byte) (sealer, error) {
	if len(key) != KeySize {
		return sealer{}, fmt.Errorf("secretbox: a key is %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return sealer{}, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, fmt.Errorf("secretbox: %w", err)
	}
	sum := sha256.Sum256(key)
	var s sealer
	copy(s.id[:], sum[:idSize])
	s.aead = aead
	return s, nil
}

// Seal encrypts plaintext bound to aad (where the value is stored).
func (b *Box) Seal(plaintext, aad []byte) []byte {
	out := make([]byte, header, header+len(plaintext)+b.current.aead.Overhead())
	out[0] = version
	copy(out[1:], b.current.id[:])
	_, _ = rand.Read(out[1+idSize : header])
	return b.current.aead.Seal(out, out[1+idSize:header], plaintext, append(out[:1+idSize:1+idSize], aad...))
}

// Open decrypts a value Seal made with the same aad.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < header+b.current.aead.Overhead() || sealed[0] != version {
		return nil, ErrCorrupt
	}
	id := sealed[1 : 1+idSize]
	for _, s := range b.all {
		if !bytes.Equal(s.id[:], id) {
			continue
		}
		// The version and key id are authenticated too: a value cannot be
		// relabelled to another key or envelope.
		plain, err := s.aead.Open(nil, sealed[1+idSize:header], sealed[header:], append(sealed[:1+idSize:1+idSize], aad...))
		if err != nil {
			return nil, ErrCorrupt
		}
		return plain, nil
	}
	return nil, ErrUnknownKey
}

// Rotated reports whether a sealed value was sealed with an older key than
// the current one, so a caller can reseal it.
func (b *Box) Rotated(sealed []byte) bool {
	return len(sealed) >= header && !bytes.Equal(sealed[1:1+idSize], b.current.id[:])
}
