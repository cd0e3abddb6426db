package server

import (
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/notify"
)

// notifyGate is the destination gate push notifications go through: the
// production gate with push limits and the replica's User-Agent; tests
// reach loopback receivers through Seams like every other fetch.
func notifyGate(d Deps) *gate.Client {
	seams := d.Seams
	if seams == nil {
		seams = &Seams{}
	}
	return notify.NewGate(gate.Options{
		UserAgent: d.Config.UserAgent,
		Resolver:  seams.Resolver, Dial: seams.Dial, RootCAs: seams.RootCAs,
	})
}

// newNotifyService is what the web UI asks of notifications: the feed
// secret, the targets and their "send test".
func newNotifyService(d Deps) *notify.Service {
	return notify.NewService(d.Store, d.Config.PublicBaseURL, notifyGate(d))
}

// addNotifyJobs runs notifications on the replica's one River client: it
// registers the notify_scan and notify_send workers and the periodic scan.
// newJobs calls it on a working replica, after the Poll's periodic jobs are
// set and before the client is built, so the scan and the sends share the
// Poll's queue and never hold a poll up.
func addNotifyJobs(d Deps, workers *river.Workers, rc *river.Config) *notify.Notifier {
	n := &notify.Notifier{
		Store:  d.Store,
		Sender: &notify.Sender{HTTP: notifyGate(d), BaseURL: d.Config.PublicBaseURL},
		Logger: d.Logger,
	}
	n.AddWorkers(workers)
	rc.PeriodicJobs = append(rc.PeriodicJobs, notify.PeriodicScan(notify.ScanInterval))
	return n
}
