package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Target modes: when a target sends its pending chapters.
const (
	ModeEach      = "each"      // a message as soon as chapters are found
	ModeThreshold = "threshold" // once Threshold unread chapters are waiting
	ModeDigest    = "digest"    // one message a day or a week, at DigestHour
)

// Digest periods.
const (
	DigestDaily  = "daily"
	DigestWeekly = "weekly"
)

// DigestWeekday is the day a weekly digest leaves: the start of the week in
// most of the world, and the end of the weekend's releases.
const DigestWeekday = time.Monday

// MaxThreshold bounds the threshold: a Reader waiting for more than this
// many chapters wants a digest.
const MaxThreshold = 1000

// TargetSpec is a target as a Reader asks for it (the API's and the web
// form's fields).
type TargetSpec struct {
	URL        string `json:"url"`
	Name       string `json:"name"`
	Mode       string `json:"mode"`
	Threshold  int    `json:"threshold"`
	Digest     string `json:"digest"`
	DigestHour *int   `json:"digest_hour"`
	TimeZone   string `json:"time_zone"`
}

// terms validates a spec's terms, filling in the defaults: each chapter,
// a threshold of 3 in threshold mode, a daily digest at 9 in UTC.
func (sp TargetSpec) terms() (store.TargetTerms, error) {
	bad := func(format string, args ...any) (store.TargetTerms, error) {
		return store.TargetTerms{}, fmt.Errorf("%w: %s", ErrInvalidTarget, fmt.Sprintf(format, args...))
	}
	t := store.TargetTerms{Name: strings.TrimSpace(sp.Name), Mode: sp.Mode, Threshold: 1, Digest: DigestDaily, DigestHour: 9, TimeZone: "UTC"}
	if len([]rune(t.Name)) > 100 {
		return bad("the name is longer than 100 characters")
	}
	switch t.Mode {
	case "":
		t.Mode = ModeEach
	case ModeEach, ModeDigest:
	case ModeThreshold:
		t.Threshold = 3
	default:
		return bad("mode is each, threshold or digest, not %q", sp.Mode)
	}
	if sp.Threshold != 0 {
		if sp.Threshold < 1 || sp.Threshold > MaxThreshold {
			return bad("threshold is a number of chapters from 1 to %d, not %d", MaxThreshold, sp.Threshold)
		}
		t.Threshold = sp.Threshold
	}
	switch sp.Digest {
	case "":
	case DigestDaily, DigestWeekly:
		t.Digest = sp.Digest
	default:
		return bad("digest is daily or weekly, not %q", sp.Digest)
	}
	if sp.DigestHour != nil {
		if *sp.DigestHour < 0 || *sp.DigestHour > 23 {
			return bad("digest_hour is an hour from 0 to 23, not %d", *sp.DigestHour)
		}
		t.DigestHour = *sp.DigestHour
	}
	if sp.TimeZone != "" {
		if _, err := time.LoadLocation(sp.TimeZone); err != nil || len(sp.TimeZone) > 64 || sp.TimeZone == "Local" {
			return bad("time_zone %q is not an IANA time zone such as Europe/Berlin", sp.TimeZone)
		}
		t.TimeZone = sp.TimeZone
	}
	return t, nil
}

// LastDigestSlot is the latest digest time at or before now: the digest
// hour of today (or of the latest DigestWeekday) in the target's zone.
func LastDigestSlot(t store.TargetTerms, now time.Time) time.Time {
	loc, err := time.LoadLocation(t.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	local := now.In(loc)
	slot := time.Date(local.Year(), local.Month(), local.Day(), t.DigestHour, 0, 0, 0, loc)
	for slot.After(now) || (t.Digest == DigestWeekly && slot.Weekday() != DigestWeekday) {
		d := slot.AddDate(0, 0, -1)
		slot = time.Date(d.Year(), d.Month(), d.Day(), t.DigestHour, 0, 0, 0, loc)
	}
	return slot
}

// Due decides whether a target sends what it has pending now, given how
// many unread chapters wait and since when the oldest has waited: the one
// place the Reader's terms are read.
//
// A digest sends at the first digest slot after its oldest chapter entered
// the queue, once per slot: a chapter found after today's hour waits for the
// next one, even when no digest left today.
func Due(t store.TargetTerms, pending int, oldest, now time.Time) bool {
	if pending == 0 {
		return false
	}
	switch t.Mode {
	case ModeThreshold:
		return pending >= t.Threshold
	case ModeDigest:
		slot := LastDigestSlot(t, now)
		return !oldest.After(slot) && (t.LastDigestAt == nil || t.LastDigestAt.Before(slot))
	}
	return true
}
