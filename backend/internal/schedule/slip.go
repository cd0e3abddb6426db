package schedule

import "time"

// A day-late chapter. Some Sites slip a weekly Series' chapter to the next
// day now and then (bursty: a tenth of its drops); a Series' own history
// holds too few slips to place a second slot, so after a missed window its
// next release came at the next day's drop with no window open, and was
// found by a safety poll hours later (ADR 0034: a fifth of bursty's
// slowest tenth). Pooled over the Site's weekly Series the slips show:
// slipRate is the share of the Site's weekly occurrences that came a day
// late. After a window that closed with nothing seen, the model expects
// the occurrence again a day later with that share divided by the chance
// of a miss. Where Sites do not slip (the generator's off-schedule
// chapters fall within half a day of the slot) the share is about zero and
// nothing changes. The price leaves these windows out: they open only
// after a miss, and the headroom the price keeps (utilization) absorbs
// them (bursty at 0.25: 0.222 → 0.223 requests per Series-hour at 95%).
const (
	// slipPrior is occurrences of pseudo-evidence that nothing slips, so a
	// Site with a short history does not expect slips from a chance few.
	slipPrior = 50
	// slipMin: a Site that slips less often than this does not slip.
	// Counted by the rhythms, the generator, which never slips, stays
	// below 0.5% on seeds 2 and 3 and touches 0.8% in 5% of seed 1's
	// plans (moved rhythms, double releases); the traces' Sites, which
	// slip, reach 5–7%. Lower, the day-late windows cost the generator
	// more polls than they found; at 2% the traces' Sites lose them while
	// their history is short (bursty p90 at 0.25: 102.5 → 105.0 minutes).
	slipMin = 0.0075
	// slipMax bounds a day-late occurrence's hit rate after a miss.
	slipMax = 0.9
)

// slipRate pools the Site's weekly Series (rh: the planned and the queued,
// as sitePrice read them): the releases their rhythms counted a day after
// a slot's window and in none (Rhythm.Slips), over the slot occurrences of
// the spans they observed. It reads the rhythms only, not the Series'
// releases: the Poll's plan tick gives the planner each Series' last
// release alone (ADR 0033), and the simulator must decide as the Poll
// does.
func slipRate(now time.Time, rh []*Rhythm) float64 {
	slips, occ := 0.0, 0.0
	for _, r := range rh {
		if r.Period != week || len(r.Slots) == 0 || !r.From.Before(now) {
			continue
		}
		span := min(now.Sub(r.From), lookBack)
		occ += float64(len(r.Slots)) * float64(span) / float64(week)
		slips += float64(r.Slips)
	}
	rate := slips / (occ + slipPrior)
	if rate < slipMin {
		return 0
	}
	return rate
}

// slips counts the events that came a day after one of the rhythm's slot
// windows and in none: a weekly Series' day-late chapters.
func (r *Rhythm) slips(events []event) int {
	k := 0
	for _, e := range events {
		if !r.explains(e.mid) && r.explains(e.mid.Add(-day)) {
			k++
		}
	}
	return k
}

// explains reports whether a release at t falls in one of the rhythm's
// slot windows.
func (r *Rhythm) explains(t time.Time) bool {
	if r.Period <= 0 {
		return false
	}
	period := int64(r.Period)
	pos := t.UnixNano() - refMonday.UnixNano()
	for _, sl := range r.Slots {
		// The offset from the nearest occurrence, on the period's circle.
		d := ((pos-int64(sl.Offset))%period + period + period/2) % period
		d -= period / 2
		if d >= -int64(windowBefore(sl.Spread)) && d <= int64(windowAfter(sl.Spread)) {
			return true
		}
	}
	return false
}
