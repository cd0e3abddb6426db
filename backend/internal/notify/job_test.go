package notify_test

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// queue starts a real River client with the notify workers on the test
// database, as the server runs them, with a short retry back-off.
func queue(t *testing.T, w *world, s *stub) (*river.Client[pgx.Tx], *notify.Notifier) {
	t.Helper()
	n := &notify.Notifier{
		Store:   w.st,
		Sender:  &notify.Sender{HTTP: s.gate(), BaseURL: base, Box: testBox},
		Backoff: func(int) time.Duration { return 200 * time.Millisecond },
	}
	workers := river.NewWorkers()
	n.AddWorkers(workers)
	rc, err := river.NewClient(riverpgxv5.New(w.st.Pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, rc.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rc.Stop(ctx)
	})
	return rc, n
}

// settle waits until no notify job is waiting or running: whatever the
// queue was going to send has been sent.
func settle(t *testing.T, w *world) {
	t.Helper()
	require.Eventually(t, func() bool {
		return w.count(`SELECT count(*) FROM river_job WHERE kind LIKE 'notify_%'
			AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`) == 0
	}, 30*time.Second, 20*time.Millisecond)
}

func (w *world) target(r store.Reader, kind, u string) store.Target {
	w.t.Helper()
	tg, err := newService(w.st, nil).AddTarget(context.Background(), r.ID, notify.TargetSpec{URL: notify.FromLegacy(kind, u)})
	require.NoError(w.t, err)
	return tg.Target
}

// testBox seals the tests' credentials, as SECRET_KEY does in production.
var testBox = func() *secretbox.Box {
	key, err := secretbox.ParseKey(secretbox.NewKey())
	if err != nil {
		panic(err)
	}
	b, err := secretbox.New(key)
	if err != nil {
		panic(err)
	}
	return b
}()

// newService is the Service as the server builds it with SECRET_KEY set.
func newService(st *store.Store, gate notify.Doer) *notify.Service {
	svc := notify.NewService(st, base, gate)
	svc.Sender.Box = testBox
	return svc
}

func (w *world) deliveries(targetID int64) map[string]int {
	w.t.Helper()
	rows, err := w.st.Pool.Query(context.Background(), `SELECT status, count(*) FROM notify_deliveries WHERE target_id = $1 GROUP BY status`, targetID)
	require.NoError(w.t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(w.t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(w.t, rows.Err())
	return out
}

type ntfyBody struct {
	Topic   string   `json:"topic"`
	Title   string   `json:"title"`
	Message string   `json:"message"`
	Click   string   `json:"click"`
	Tags    []string `json:"tags"`
}

// Each Reader hears of each new Latest Chapter once, through the gate's
// injected seam: batched when several arrive together, retried after a 500
// with the same delivery id, and never again however often the scan runs.
func TestEachNewChapterIsSentOncePerReader(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	rc, n := queue(t, w, s)
	ctx := context.Background()

	alice, bob, carol, dave := w.reader("alice"), w.reader("bob"), w.reader("carol"), w.reader("dave")
	solo := w.hold(alice, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Chapter 10")
	peak := w.hold(alice, "https://demonicscans.org/manga/Martial-Peak", "")
	w.hold(bob, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "")
	w.hold(carol, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Chapter 11") // read elsewhere already
	w.hold(dave, "https://novelfull.com/reverend-insanity.html", "")

	ta := w.target(alice, notify.KindNtfy, "https://ntfy.test/alice-chapters?auth=tk_secret")
	tb := w.target(bob, notify.KindWebhook, "https://hooks.test/bob")
	tc := w.target(carol, notify.KindWebhook, "https://hooks.test/carol")
	td := w.target(dave, notify.KindWebhook, "https://hooks.test/dave")

	// Acquisitions: first sightings, not news.
	w.poll(solo, "Solo Leveling", "Chapter 10", 10, false)
	w.poll(peak, "Martial Peak", "Chapter 3800", 3800, false)
	_, err := n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)
	require.Empty(t, s.requests(""))

	// Two changes arrive together; Bob's webhook fails once with a 500.
	s.failNext("/bob", 1, http.StatusInternalServerError)
	w.poll(solo, "Solo Leveling", "Chapter 11", 11, false)
	w.poll(peak, "Martial Peak", "Chapter 3801", 3801, false)
	queued, err := n.Scan(ctx, rc)
	require.NoError(t, err)
	require.Equal(t, 3, queued, "alice ×2, bob ×1; carol has read it, dave does not hold it")
	require.Eventually(t, func() bool { return len(s.requests("/bob")) == 2 && len(s.requests("/")) == 1 }, 30*time.Second, 20*time.Millisecond)
	settle(t, w)

	// More scans (another replica, the next minute) send nothing again.
	for range 3 {
		_, err := n.Scan(ctx, rc)
		require.NoError(t, err)
	}
	settle(t, w)

	// Alice: one ntfy message listing both chapters, published as JSON to
	// the server's root with her topic, the auth query kept.
	got := s.requests("/")
	require.Len(t, got, 1)
	msg := decode[ntfyBody](t, got[0].Body)
	require.Equal(t, "alice-chapters", msg.Topic)
	require.Equal(t, "2 new chapters", msg.Title)
	require.Equal(t, "Solo Leveling: Chapter 11\nMartial Peak: Chapter 3801", msg.Message)
	require.Equal(t, "application/json", got[0].Header.Get("Content-Type"))
	require.Equal(t, map[string]int{"sent": 2}, w.deliveries(ta.ID))

	// Bob: the 500, then the same batch again, then nothing.
	bobs := s.requests("/bob")
	require.Len(t, bobs, 2)
	require.Equal(t, http.StatusInternalServerError, bobs[0].Status)
	require.Equal(t, http.StatusOK, bobs[1].Status)
	require.Equal(t, bobs[0].Header.Get("Idempotency-Key"), bobs[1].Header.Get("Idempotency-Key"), "a retry is the same delivery")
	hook := decode[notify.WebhookBody](t, bobs[1].Body)
	require.Equal(t, 1, hook.Version)
	require.Equal(t, "new_chapters", hook.Type)
	require.Equal(t, "bob", hook.Reader)
	require.Len(t, hook.Chapters, 1)
	require.Equal(t, "asura:solo-leveling", hook.Chapters[0].Key)
	require.Equal(t, "Chapter 11", hook.Chapters[0].Chapter)
	require.Equal(t, 11.0, *hook.Chapters[0].ChapterNumber)
	require.Equal(t, "https://asurascans.com/comics/solo-leveling/chapter/11", hook.Chapters[0].ChapterURL)
	require.Equal(t, hook.ID, bobs[1].Header.Get("Idempotency-Key"))
	require.Equal(t, map[string]int{"sent": 1}, w.deliveries(tb.ID))
	var attempts int
	require.NoError(t, w.st.Pool.QueryRow(ctx, `SELECT attempts FROM notify_deliveries WHERE target_id = $1`, tb.ID).Scan(&attempts))
	require.Equal(t, 2, attempts)

	require.Empty(t, s.requests("/carol"))
	require.Empty(t, s.requests("/dave"))
	require.Empty(t, w.deliveries(tc.ID))
	require.Empty(t, w.deliveries(td.ID))

	// A later chapter is news again, once.
	w.poll(solo, "Solo Leveling", "Chapter 12", 12, false)
	_, err = n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)
	require.Len(t, s.requests("/"), 2)
	require.Len(t, s.requests("/bob"), 3)
	require.Len(t, s.requests("/carol"), 1, "Carol had read 11, not 12")
	require.Equal(t, "Solo Leveling: Chapter 12", decode[ntfyBody](t, s.requests("/")[1].Body).Title)
}

// In a normal configuration (no AllowAddrs) a target whose name resolves to
// the Owner's network is refused by the gate: no connection is made,
// nothing arrives, and the delivery is recorded as failed with the reason.
func TestNoSendToAPrivateAddress(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	rc, n := queue(t, w, s)
	ctx := context.Background()
	s.resolve("internal.test", netip.MustParseAddr("10.0.0.7"))
	s.resolve("loop.test", netip.MustParseAddr("127.0.0.1"))

	erin := w.reader("erin")
	key := w.hold(erin, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "")
	private := w.target(erin, notify.KindWebhook, "https://internal.test/hook")
	loop := w.target(erin, notify.KindNtfy, "https://loop.test/topic")
	w.poll(key, "Solo Leveling", "Chapter 1", 1, false)
	w.poll(key, "Solo Leveling", "Chapter 2", 2, false)

	_, err := n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)

	require.Empty(t, s.requests(""), "nothing arrived")
	require.Empty(t, s.dialed(), "no connection was even attempted")
	for _, tc := range []struct {
		target store.Target
		class  string
	}{{private, gate.ClassPrivate}, {loop, gate.ClassLoopback}} {
		require.Equal(t, map[string]int{"failed": 1}, w.deliveries(tc.target.ID))
		got, err := w.st.TargetByID(ctx, erin.ID, tc.target.ID)
		require.NoError(t, err)
		require.Contains(t, got.LastError, "destination refused ("+tc.class+")")
	}
	require.Equal(t, 2, w.count(`SELECT count(*) FROM river_job WHERE kind = 'notify_send' AND state = 'cancelled'`),
		"a refusal is not retried")
}

// A receiver that says the request is wrong (4xx) is not hammered: the
// delivery fails at once, with the status as the reason.
func TestClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	rc, n := queue(t, w, s)
	ctx := context.Background()
	fay := w.reader("fay")
	key := w.hold(fay, "https://demonicscans.org/manga/Martial-Peak", "")
	tg := w.target(fay, notify.KindWebhook, "https://hooks.test/gone")
	s.failNext("/gone", 100, http.StatusNotFound)
	w.poll(key, "Martial Peak", "Chapter 1", 1, false)
	w.poll(key, "Martial Peak", "Chapter 2", 2, false)
	_, err := n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)
	require.Len(t, s.requests("/gone"), 1)
	require.Equal(t, map[string]int{"failed": 1}, w.deliveries(tg.ID))
	got, err := w.st.TargetByID(ctx, fay.ID, tg.ID)
	require.NoError(t, err)
	require.Contains(t, got.LastError, "404")
}

// Many changes at once go out in messages of BatchSize, each change once.
func TestLargeBatchesAreSplit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	rc, n := queue(t, w, s)
	ctx := context.Background()
	gus := w.reader("gus")
	tg := w.target(gus, notify.KindWebhook, "https://hooks.test/gus")
	total := notify.BatchSize + 7
	for i := range total {
		key := w.hold(gus, "https://asurascans.com/comics/series-"+strings.Repeat("x", i+1)+"-a1b2c3d4", "")
		w.poll(key, "", "Chapter 1", 1, false)
		w.poll(key, "", "Chapter 2", 2, false)
	}
	_, err := n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)
	got := s.requests("/gus")
	require.Len(t, got, 2)
	seen := map[int64]bool{}
	for _, r := range got {
		for _, c := range decode[notify.WebhookBody](t, r.Body).Chapters {
			require.False(t, seen[c.ID], "change %d sent twice", c.ID)
			seen[c.ID] = true
		}
	}
	require.Len(t, seen, total)
	require.Equal(t, map[string]int{"sent": total}, w.deliveries(tg.ID))
}

func TestSendTest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	ctx := context.Background()
	hal := w.reader("hal")
	svc := newService(w.st, s.gate())
	tg, err := svc.AddTarget(ctx, hal.ID, notify.TargetSpec{URL: "jsons://hooks.test/hal"})
	require.NoError(t, err)
	reply, err := svc.SendTest(ctx, hal, tg.ID)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, reply.Status, "the service's answer is returned")
	got := s.requests("/hal")
	require.Len(t, got, 1)
	body := decode[notify.WebhookBody](t, got[0].Body)
	require.Equal(t, "test", body.Type)
	require.Empty(t, body.Chapters)
	require.Equal(t, "Lectern test", body.Title)

	other := w.reader("ivy")
	_, err = svc.SendTest(ctx, other, tg.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "another Reader's target is not theirs to test")

	s.failNext("/hal", 1, http.StatusServiceUnavailable)
	reply, err = svc.SendTest(ctx, hal, tg.ID)
	require.ErrorContains(t, err, "503")
	require.Equal(t, http.StatusServiceUnavailable, reply.Status)
	require.NotErrorIs(t, err, notify.ErrPermanent)

	nt, err := svc.AddTarget(ctx, hal.ID, notify.TargetSpec{URL: "ntfys://ntfy.test/hal?auth=tk_topsecret"})
	require.NoError(t, err)
	require.NotContains(t, nt.URL, "tk_topsecret", "the token is masked once saved")
	s.resolve("ntfy.test", netip.MustParseAddr("192.168.1.2"))
	_, err = svc.SendTest(ctx, hal, nt.ID)
	require.ErrorIs(t, err, notify.ErrPermanent)
	require.Equal(t, gate.ClassPrivate, gate.Class(err))
	require.NotContains(t, err.Error(), "tk_topsecret", "the ntfy token never reaches a message or a log")
}

// The https URLs targets were saved with before Apprise URLs read as their
// Apprise forms, with the same checks.
func TestLegacyTargetURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, url, want string }{
		{notify.KindNtfy, "https://ntfy.sh/my-topic", "ntfys://ntfy.sh/my-topic"},
		{notify.KindNtfy, "https://push.example.net/ntfy/my_topic?auth=abc", "ntfys://push.example.net/ntfy/my_topic?auth=abc"},
		{notify.KindWebhook, " https://hooks.example.com/x/y?token=1 ", "jsons://hooks.example.com/x/y?token=1"},
		{notify.KindWebhook, "https://hooks.example.com:443/x", "jsons://hooks.example.com:443/x"},
		{notify.KindWebhook, "https://93.184.216.34/x", "jsons://93.184.216.34/x"},
	} {
		e, err := notify.ParseApprise(notify.FromLegacy(tc.kind, tc.url))
		require.NoError(t, err, tc.url)
		require.Equal(t, tc.want, e.String())
	}
	for _, tc := range []struct{ kind, url, why string }{
		{notify.KindWebhook, "http://hooks.example.com/x", "plain http"},
		{notify.KindWebhook, "https://hooks.example.com:8443/x", "port 443"},
		{notify.KindWebhook, "https://127.0.0.1/x", "not a public address"},
		{notify.KindWebhook, "https://10.0.0.1/x", "not a public address"},
		{notify.KindWebhook, "https://[::ffff:192.168.0.1]/x", "not a public address"},
		{notify.KindWebhook, "https://169.254.169.254/latest/meta-data", "not a public address"},
		{notify.KindWebhook, "https://100.64.1.1/x", "not a public address"},
		{notify.KindWebhook, "https://localhost/x", "not a public host name"},
		{notify.KindWebhook, "https://router/x", "not a public host name"},
		{notify.KindWebhook, "", "required"},
		{notify.KindNtfy, "https://ntfy.sh/", "topic"},
		{notify.KindNtfy, "https://ntfy.sh/bad topic!", "malformed"},
		{"email", "https://ntfy.sh/x", "Apprise URL"},
	} {
		_, err := notify.ParseApprise(notify.FromLegacy(tc.kind, tc.url))
		require.ErrorIs(t, err, notify.ErrInvalidTarget, tc.url)
		require.ErrorContains(t, err, tc.why, tc.url)
	}
}

func TestTargetLimitAndDuplicates(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	jo := w.reader("jo")
	svc := newService(w.st, nil)
	for i := range notify.MaxTargets {
		_, err := svc.AddTarget(ctx, jo.ID, notify.TargetSpec{URL: "jsons://hooks.example.com/" + strings.Repeat("a", i+1)})
		require.NoError(t, err)
	}
	_, err := svc.AddTarget(ctx, jo.ID, notify.TargetSpec{URL: "jsons://hooks.example.com/more"})
	require.ErrorIs(t, err, notify.ErrTooManyTargets)
	kim := w.reader("kim")
	_, err = svc.AddTarget(ctx, kim.ID, notify.TargetSpec{URL: "ntfy://kim"})
	require.NoError(t, err)
	_, err = svc.AddTarget(ctx, kim.ID, notify.TargetSpec{URL: "ntfys://ntfy.sh/kim"})
	require.ErrorIs(t, err, store.ErrConflict)
}

// Finished ledger rows of changes older than LedgerKeep are pruned; newer
// ones and pending ones stay, so nothing the scan can still see is resent.
func TestLedgerIsPrunedBeyondTheScanWindow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	rc, n := queue(t, w, s)
	ctx := context.Background()
	lu := w.reader("lu")
	key := w.hold(lu, "https://demonicscans.org/manga/Martial-Peak", "")
	tg := w.target(lu, notify.KindWebhook, "https://hooks.test/lu")
	w.poll(key, "Martial Peak", "Chapter 1", 1, false)
	w.poll(key, "Martial Peak", "Chapter 2", 2, false)
	w.poll(key, "Martial Peak", "Chapter 3", 3, false)
	_, err := n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)
	require.Equal(t, map[string]int{"sent": 2}, w.deliveries(tg.ID))
	require.Len(t, s.requests("/lu"), 1)

	_, err = w.st.Pool.Exec(ctx, `UPDATE latest_chapter_history SET first_seen_at = now() - interval '31 days' WHERE label = 'Chapter 2'`)
	require.NoError(t, err)
	_, err = n.Scan(ctx, rc)
	require.NoError(t, err)
	settle(t, w)
	require.Equal(t, map[string]int{"sent": 1}, w.deliveries(tg.ID), "the old change's row is gone, the recent one stays")
	require.Len(t, s.requests("/lu"), 1, "and nothing was sent again")
}
