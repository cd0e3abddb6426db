// Package schedule decides when each Series is polled: it learns a Series'
// release rhythm from its Latest Chapter history, polls densely around the
// next expected release and sparsely otherwise, keeps every Site within its
// request budget by dropping the least valuable polls first, and says why
// each Series is checked when it is.
//
// The package is pure: it reads no clock and does no I/O. Every function is
// given the time it plans for, so the Poll's scheduler calls it with facts
// from Postgres, and `lectern simulate` replays weeks of synthetic releases
// through the same code with a fake clock (Simulate).
//
// # Use by the Poll's scheduler
//
// Once per Horizon (3 minutes by default) and per Site, on one replica:
//
//   - read every held Series of the Site: Readers, first poll (Since), the
//     Latest Chapter history as Releases (each change's first-seen time and
//     the poll before it), the last poll that reached the Site, whether a
//     Reader's Progress passed the stored Latest Chapter since that poll
//     (Hint), whether the Owner asked for a poll (OwnerRequest), and the
//     Rhythm cached from the last Estimate;
//   - call Planner.Plan(now, site, series);
//   - enqueue a poll_series job scheduled at At for every Decision that is
//     Due, and store every Decision's At and Reason as the Series'
//     next_poll_at and its reason for the Series page and the Owner console.
//
// Plans of one Site must cover disjoint horizons ([now, now+Horizon), then
// from now+Horizon): each Due Decision holds a slot of the Site's budget,
// and slots are spaced so no hour ever holds more than Site.PerHour.
//
// # The policy
//
// Estimate places a Series' releases on a daily or weekly circle and looks
// for tight clusters (slots: weekday and hour, spread, share of weeks
// hit; a slot's window is placed where its releases can have been, each
// known as a point or as the interval between two polls); releases outside
// slots make the off-schedule rate. Together they
// give a release hazard: for each expected release not seen yet, a
// Gaussian window around the slot, conditioned on nothing having been seen
// by the last poll; plus the off-schedule rate; plus a short burst after a
// release for double chapters. Polls are spaced by the square-root rule
// (every c/sqrt(Readers*hazard) hours, which minimises the Reader-weighted
// mean detection delay for a number of polls), with Readers weighed a
// little more (Readers^0.7) because the goal is the median and p90, not
// the mean; c is set so the Site's projected polls fill 98% of its
// budget. In a window that means a poll
// every few minutes; outside, a safety poll hours apart; for a Series that
// releases at random, a steady rate that grows with its Readers.
package schedule
