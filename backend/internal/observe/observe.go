// Package observe is the log context that puts a request ID, a Series key and
// its Site on every line, and keeps secrets out of the log.
package observe

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
)

type logAttrsKey struct{}

// WithLogAttrs returns a context whose log lines carry attrs as well as those
// ctx already carries: the HTTP middleware adds request_id, the job
// middleware adds the job and, for a job about a Series, "series" and "site".
// Lines reach them when they are written with a *Context method of a logger
// whose handler is wrapped by LogHandler.
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	if len(attrs) == 0 {
		return ctx
	}
	old, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	merged := make([]slog.Attr, 0, len(old)+len(attrs))
	for _, a := range old {
		if !slices.ContainsFunc(attrs, func(b slog.Attr) bool { return b.Key == a.Key }) {
			merged = append(merged, a)
		}
	}
	return context.WithValue(ctx, logAttrsKey{}, append(merged, attrs...))
}

// LogAttrs returns the attributes ctx carries for log lines.
func LogAttrs(ctx context.Context) []slog.Attr {
	a, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	return a
}

// LogHandler wraps h so that a record written with a context carries that
// context's attributes (a request ID, a Series key and its Site), and so
// that no secret reaches the log even when a caller passes one by mistake:
// attributes named like a credential are replaced, and anything shaped like
// a Lectern API token is masked wherever it appears in a string. Wrapping an
// already wrapped handler returns it unchanged.
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*logHandler); ok {
		return h
	}
	return &logHandler{inner: h}
}

type logHandler struct {
	inner slog.Handler
	// keys set with WithAttrs at the top level, so the context does not
	// repeat a key the logger already carries.
	keys []string
	// grouped: after WithGroup, context attributes would land inside the
	// group, so they are added before it instead (see WithGroup).
	grouped bool
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	var ctxAttrs []slog.Attr
	if ctx != nil && !h.grouped {
		ctxAttrs = LogAttrs(ctx)
	}
	// Most lines hold nothing to mask: they keep their attributes as they
	// are, and only the context's are added.
	clean := !needsRedaction(r.Message)
	seen := make([]string, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		seen = append(seen, a.Key)
		if clean && attrNeedsRedaction(a) {
			clean = false
		}
		return true
	})
	var out slog.Record
	if clean {
		out = r.Clone()
	} else {
		out = slog.NewRecord(r.Time, r.Level, redactString(r.Message), r.PC)
		r.Attrs(func(a slog.Attr) bool {
			out.AddAttrs(redact(a))
			return true
		})
	}
	for _, a := range ctxAttrs {
		if !slices.Contains(seen, a.Key) && !slices.Contains(h.keys, a.Key) {
			out.AddAttrs(redact(a))
		}
	}
	return h.inner.Handle(ctx, out)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	keys := slices.Clone(h.keys)
	for i, a := range attrs {
		red[i] = redact(a)
		if !h.grouped {
			keys = append(keys, a.Key)
		}
	}
	return &logHandler{inner: h.inner.WithAttrs(red), keys: keys, grouped: h.grouped}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &logHandler{inner: h.inner.WithGroup(name), keys: h.keys, grouped: true}
}

// secretWords in an attribute's name mark it as holding a credential.
// "verifier" is an OAuth PKCE code verifier; "token" already covers a
// tracker's access, refresh and session tokens.
var secretWords = []string{"password", "passwd", "secret", "token", "authorization", "cookie", "credential", "apikey", "api_key", "api-key", "verifier"}

// secretKeys caches the verdict per attribute name: names come from code,
// so the set stays small.
var secretKeys sync.Map

func isSecretKey(k string) bool {
	if v, ok := secretKeys.Load(k); ok {
		return v.(bool)
	}
	lower := strings.ToLower(k)
	secret := false
	for _, w := range secretWords {
		if strings.Contains(lower, w) {
			secret = true
			break
		}
	}
	// Names that contain a secret word but hold no secret: a token's id or
	// display name, a count.
	if strings.HasSuffix(lower, "_id") || strings.HasSuffix(lower, "_name") || strings.HasSuffix(lower, "_count") {
		secret = false
	}
	secretKeys.Store(k, secret)
	return secret
}

// tokenShape is a Lectern API token (credential.TokenPrefix and 43 base64url
// characters), a bearer credential in a header value, or a JWT (AniList's
// access tokens are JWTs), wherever one lands in a message.
var tokenShape = regexp.MustCompile(`lec_[A-Za-z0-9_-]{20,}|(?i:bearer)\s+[A-Za-z0-9._~+/-]{8,}=*|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)

const redacted = "[redacted]"

func attrNeedsRedaction(a slog.Attr) bool {
	if isSecretKey(a.Key) {
		return true
	}
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		return needsRedaction(v.String())
	case slog.KindGroup:
		for _, b := range v.Group() {
			if attrNeedsRedaction(b) {
				return true
			}
		}
		return false
	case slog.KindLogValuer, slog.KindAny:
		// Resolved and stringified by redact; rare enough not to inspect here.
		return true
	}
	return false
}

func redact(a slog.Attr) slog.Attr {
	if isSecretKey(a.Key) {
		return slog.String(a.Key, redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redactString(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, b := range g {
			out[i] = redact(b)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redactString(err.Error()))
		}
		if s, ok := v.Any().(fmt.Stringer); ok {
			return slog.String(a.Key, redactString(s.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// needsRedaction is the cheap test before the regular expression: a token
// starts with "lec_", a header credential with "bearer" in any case, a JWT
// with "eyJ" (a JSON header in base64url).
func needsRedaction(s string) bool {
	return strings.Contains(s, "lec_") || containsFold(s, "bearer") || strings.Contains(s, "eyJ")
}

// containsFold reports whether s contains word (lower case ASCII) in any case.
func containsFold(s, word string) bool {
	first, upper := word[0], word[0]-'a'+'A'
	for i := 0; i+len(word) <= len(s); i++ {
		if (s[i] == first || s[i] == upper) && strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

func redactString(s string) string {
	if !needsRedaction(s) {
		return s
	}
	return tokenShape.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case strings.HasPrefix(m, "lec_"):
			return "lec_" + redacted
		case strings.HasPrefix(m, "eyJ"):
			return redacted
		}
		return "Bearer " + redacted
	})
}
