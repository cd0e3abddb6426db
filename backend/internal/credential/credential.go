// Package credential holds what proves who a Reader is: password hashes, API
// tokens and web session ids. Secrets leave this package only once, to the
// person they belong to; the store keeps hashes.
package credential

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters: OWASP's minimum (19 MiB, 2 passes), affordable on a
// small VPS where login attempts are rate-limited anyway.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	saltLen      = 16
)

// Password rules, checked before hashing.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

// ErrWeakPassword and ErrMismatch are the two ways a password is refused.
var (
	ErrWeakPassword = fmt.Errorf("a password needs at least %d characters", MinPasswordLen)
	ErrMismatch     = errors.New("wrong name or password")
)

// HashPassword returns a PHC-format argon2id hash of password.
func HashPassword(password string) (string, error) {
	if utf8.RuneCountInString(password) < MinPasswordLen {
		return "", ErrWeakPassword
	}
	if len(password) > MaxPasswordLen {
		return "", fmt.Errorf("a password may have at most %d bytes", MaxPasswordLen)
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var b64 = base64.RawStdEncoding

// CheckPassword compares password with a hash from HashPassword in constant
// time. It returns ErrMismatch for a wrong password.
func CheckPassword(hash, password string) error {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return errors.New("unrecognised password hash")
	}
	var version int
	var mem, iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return errors.New("unrecognised argon2 version")
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil {
		return fmt.Errorf("argon2 parameters: %w", err)
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return fmt.Errorf("argon2 salt: %w", err)
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil {
		return fmt.Errorf("argon2 key: %w", err)
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrMismatch
	}
	return nil
}

// TokenPrefix starts every API token, so a leaked one is recognisable by
// secret scanners and in logs.
const TokenPrefix = "lec_"

// NewToken returns a fresh API token and the hash to store.
func NewToken() (token string, hash []byte, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	return token, HashSecret(token), nil
}

// HashSecret is the SHA-256 stored for a token or session id. A fast hash
// is right here: the secrets are 256 random bits, not guessable passwords.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// NewSecret returns 32 random bytes, URL-safe encoded: session ids, CSRF
// tokens and feed secrets.
func NewSecret() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// ValidName checks a Reader name: 1 to 64 characters, no control characters
// or surrounding spaces, so names render and log unambiguously.
func ValidName(name string) error {
	if name == "" || utf8.RuneCountInString(name) > 64 {
		return errors.New("a name needs 1 to 64 characters")
	}
	if strings.TrimSpace(name) != name {
		return errors.New("a name may not start or end with a space")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return errors.New("a name may not contain control characters")
		}
	}
	return nil
}
