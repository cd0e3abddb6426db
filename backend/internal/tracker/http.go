package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds what a tracker's answer may be: a whole list of a few
// thousand entries fits well within it.
const maxBody = 16 << 20

// api is what every client shares: one HTTP client, the User-Agent, and
// the reading of an answer into a value or an *Error.
type api struct {
	tracker   string
	http      *http.Client
	userAgent string
}

func newAPI(tracker string, hc *http.Client, userAgent string) api {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return api{tracker: tracker, http: hc, userAgent: userAgent}
}

// call sends one request and decodes a 2xx JSON answer into out (nil
// ignores the body). A non-2xx answer is an *Error whose Kind says what to
// do: the body is read for the tracker's message only, never stored whole.
func (a api) call(ctx context.Context, method, rawURL, bearer, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return &Error{Tracker: a.tracker, Kind: Permanent, Msg: "bad request: " + err.Error()}
	}
	if body == nil {
		req.Body = http.NoBody
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if a.userAgent != "" {
		req.Header.Set("User-Agent", a.userAgent)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		// The URL is the Owner's configuration and carries no token, but
		// the error is recorded: keep only what happened.
		var ue interface{ Timeout() bool }
		msg := "not reachable"
		if errors.As(err, &ue) && ue.Timeout() {
			msg = "timed out"
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Tracker: a.tracker, Kind: Transient, Msg: msg}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return &Error{Tracker: a.tracker, Kind: Transient, Status: resp.StatusCode, Msg: "the answer broke off"}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return a.refusal(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{Tracker: a.tracker, Kind: Transient, Status: resp.StatusCode, Msg: "an answer that is not the JSON expected"}
	}
	return nil
}

// refusal turns a non-2xx answer into an *Error.
func (a api) refusal(resp *http.Response, body []byte) *Error {
	e := &Error{Tracker: a.tracker, Status: resp.StatusCode, Msg: message(body, resp.Status)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.Kind, e.RetryAfter = Limited, retryAfter(resp.Header, time.Now())
		e.Msg = "rate limited"
	case resp.StatusCode == http.StatusUnauthorized:
		e.Kind = Refused
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		e.Kind = Transient
	default:
		e.Kind = Permanent
	}
	return e
}

// message is the tracker's own words for a refusal, shortened: GraphQL's
// errors[0].message, MAL's "message"/"error", MangaUpdates' "reason".
func message(body []byte, status string) string {
	var m struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
		Message string `json:"message"`
		Error   string `json:"error"`
		Reason  string `json:"reason"`
	}
	if json.Unmarshal(body, &m) == nil {
		for _, s := range []string{firstMessage(m.Errors), m.Message, m.Reason, m.Error} {
			if s = strings.TrimSpace(s); s != "" {
				return shorten(s)
			}
		}
	}
	return status
}

func firstMessage(list []struct {
	Message string `json:"message"`
}) string {
	if len(list) == 0 {
		return ""
	}
	return list[0].Message
}

// retryAfter reads Retry-After (seconds or an HTTP date), else AniList's
// X-RateLimit-Reset (a Unix time); 0 when neither says.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return max(time.Unix(n, 0).Sub(now), 0)
		}
	}
	return 0
}

func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tracker: marshal request: %v", err)) // only our own fixed shapes are marshalled
	}
	return b
}
