-- Adaptive polling (docs/adr/0013-adaptive-polling.md): why each Series is
-- polled when it is, the release rhythm learned from its Latest Chapter
-- history, and how far ahead each Site's polls are planned.

-- next_poll_reason says why next_poll_at is what it is ("expected release
-- window", "safety check", "reader hint", "not enough history", "site paused
-- until ...", "over budget", "owner request", "fixed interval"); '' while the
-- next poll is being planned. rhythm is the schedule.Rhythm estimated at
-- rhythm_at (JSON), refreshed when a release is stored and at least daily.
-- None of them is a Series fact: updated_at does not move with them.
ALTER TABLE series
    ADD COLUMN next_poll_reason text NOT NULL DEFAULT '',
    ADD COLUMN rhythm           jsonb,
    ADD COLUMN rhythm_at        timestamptz;

-- The end of the last horizon the adaptive plan handed out for a Site:
-- horizons are claimed back to back under the row lock, so two plans (a
-- new leader, an Owner's resume) never hand out the same budget slots.
ALTER TABLE site_state
    ADD COLUMN planned_until timestamptz;

-- The per-Site schedule lists of the Owner console and API.
CREATE INDEX series_site_next_poll ON series (site, next_poll_at) WHERE readers > 0;
