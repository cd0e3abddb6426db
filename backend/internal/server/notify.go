package server

import (
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
)

// notifyGate is the destination gate push notifications go through: the
// production gate with push limits and the replica's User-Agent; tests
// reach loopback receivers through Seams like every other fetch.
func notifyGate(d Deps) *gate.Client {
	seams := d.seams()
	return notify.NewGate(gate.Options{
		UserAgent: d.Config.UserAgent,
		Resolver:  seams.Resolver, Dial: seams.Dial, RootCAs: seams.RootCAs,
	})
}

// newNotifyService is what the web UI asks of notifications: the feed
// secret, the targets and their "send test".
// box is SECRET_KEY's box (the trackers' one), nil without the key.
func newNotifyService(d Deps, box *secretbox.Box) *notify.Service {
	s := notify.NewService(d.Store, d.Config.PublicBaseURL, notifyGate(d))
	s.Sender.Box = box
	return s
}

// newNotifier runs notifications on the replica's one River client: its
// notify_scan and notify_send workers share the Poll's queue and never hold
// a poll up; the periodic scan is set with the Poll's periodic plan.
func newNotifier(d Deps, box *secretbox.Box) *notify.Notifier {
	return &notify.Notifier{
		Store:  d.Store,
		Sender: &notify.Sender{HTTP: notifyGate(d), BaseURL: d.Config.PublicBaseURL, Box: box},
		Logger: d.Logger,
	}
}

// newWatch is the Owner alerts' watch: the Sites' polls, their back-off,
// the queue and the volumes of DATA_DIR and the stores under it, told to
// the Owner's own targets.
func newWatch(d Deps, box *secretbox.Box) *notify.Watch {
	cfg := d.Config
	var disks []notify.Disk
	seen := map[string]bool{}
	for _, dir := range []struct{ name, path string }{{"DATA_DIR", cfg.DataDir}, {"COVER_DIR", cfg.CoverDir}, {"ARCHIVE_DIR", cfg.ArchiveDir}} {
		if dir.path != "" && !seen[dir.path] {
			seen[dir.path] = true
			disks = append(disks, notify.Disk{Name: dir.name, Path: dir.path})
		}
	}
	return &notify.Watch{
		Store:  d.Store,
		Sender: &notify.Sender{HTTP: notifyGate(d), BaseURL: cfg.PublicBaseURL, Box: box},
		Logger: d.Logger,
		Disks:  disks,
	}
}
