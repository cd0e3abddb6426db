package notify_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// weekOfReleases is a simulated week for a Reader with 300 Series: 200
// weekly manga, 60 web novels releasing daily and 40 series every other
// week (half of which release this week), each chapter found by a poll at
// a random minute. The seed is fixed: the figures are reproducible.
func weekOfReleases(start time.Time) []time.Time {
	r := rand.New(rand.NewPCG(24, 300))
	minute := func(day int) time.Time {
		return start.Add(time.Duration(day)*24*time.Hour + time.Duration(r.IntN(24*60))*time.Minute)
	}
	var out []time.Time
	for range 200 {
		out = append(out, minute(r.IntN(7)))
	}
	for range 60 {
		for d := range 7 {
			out = append(out, minute(d))
		}
	}
	for i := range 40 {
		if i%2 == 0 {
			out = append(out, minute(r.IntN(7)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// simulate runs a week minute by minute as the scan does: each minute the
// chapters found enter the queue, and a target whose terms say Due sends
// what waits, BatchSize (or DigestBatch) chapters a message. The Reader
// reads nothing all week: the worst case for every mode.
func simulate(terms store.TargetTerms, releases []time.Time, start time.Time) (messages int, maxWait time.Duration) {
	var pending []time.Time
	next := 0
	for now := start; now.Before(start.Add(7 * 24 * time.Hour)); now = now.Add(time.Minute) {
		for next < len(releases) && !releases[next].After(now) {
			pending = append(pending, releases[next])
			next++
		}
		if !notify.Due(terms, len(pending), firstOr(pending), now) {
			continue
		}
		batch := notify.BatchSize
		if terms.Mode == notify.ModeDigest {
			batch = notify.DigestBatch
			sent := now
			terms.LastDigestAt = &sent
		}
		messages += (len(pending) + batch - 1) / batch
		for _, p := range pending {
			maxWait = max(maxWait, now.Sub(p))
		}
		pending = pending[:0]
	}
	return messages, maxWait
}

func firstOr(ts []time.Time) time.Time {
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[0]
}

// The closing note's first figure: messages a Reader with 300 Series gets
// over a week of releases in each mode, from the one decision (Due) the
// notifier makes.
func TestFigureMessagesPerWeek(t *testing.T) {
	t.Parallel()
	start := at("2026-11-30T00:00:00Z") // a Monday
	releases := weekOfReleases(start)
	each, eachWait := simulate(store.TargetTerms{Mode: notify.ModeEach}, releases, start)
	th, thWait := simulate(store.TargetTerms{Mode: notify.ModeThreshold, Threshold: 3}, releases, start)
	dg, dgWait := simulate(store.TargetTerms{Mode: notify.ModeDigest, Digest: notify.DigestDaily, DigestHour: 9, TimeZone: "Europe/Berlin"}, releases, start)
	t.Logf("300 Series, %d chapters in the week: each %d messages (longest wait %s), threshold-3 %d (%s), daily digest %d (%s)",
		len(releases), each, eachWait, th, thWait, dg, dgWait)
	require.LessOrEqual(t, dg, 7, "a daily digest is at most one message a day")
	require.Less(t, th, each)
	require.LessOrEqual(t, th, len(releases)/3+1)
	require.Less(t, eachWait, time.Minute, "each chapter leaves the minute it is found")
}

// The closing note's second figure: from the Poll recording a new chapter
// to the message having reached the receiver: the scan's ledger insert,
// the send job's claim, the message through the destination gate (TLS to
// a loopback receiver), the recorded outcome. In production the scan runs
// every ScanInterval, which adds up to that much before this starts. The
// reference, measured in the same run, is one bare request through the
// same gate to the same receiver.
func BenchmarkPollToMessage(b *testing.B) {
	ctx := context.Background()
	bw := newWorld(b)
	s := newStub(b)
	g := s.gate()
	n := &notify.Notifier{Store: bw.st, Sender: &notify.Sender{HTTP: g, BaseURL: base, Box: testBox}}
	r := bw.reader("bench")
	key := bw.hold(r, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "")
	tg, err := newService(bw.st, nil).AddTarget(ctx, r.ID, notify.TargetSpec{URL: "jsons://hooks.test/bench"})
	require.NoError(b, err)
	bw.poll(key, "Solo Leveling", "Chapter 1", 1, false)

	b.Run("reference_gate_request", func(b *testing.B) {
		for b.Loop() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://hooks.test/ref", nil)
			resp, err := g.Do(req)
			require.NoError(b, err)
			resp.Body.Close()
		}
	})
	b.Run("poll_to_message", func(b *testing.B) {
		ch := 2.0
		for b.Loop() {
			before := len(s.requests("/bench"))
			bw.poll(key, "Solo Leveling", fmt.Sprintf("Chapter %g", ch), ch, false)
			ch++
			_, _, err := bw.st.QueueDeliveries(ctx, notify.ScanWindow)
			require.NoError(b, err)
			require.NoError(b, n.Deliver(ctx, tg.ID, false))
			require.Len(b, s.requests("/bench"), before+1)
		}
	})
}
