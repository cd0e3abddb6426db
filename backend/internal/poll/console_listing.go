package poll

import (
	"time"

	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The listing states the Owner sees beside the stored ones (store.Listing*).
const (
	// ListingOff: the Site has a listing, and POLL_LISTINGS (or the interval
	// policy) leaves it unused.
	ListingOff = "off"
)

// ListingStatus is a Site's listing as the Owner sees it: its state (new,
// healthy, failing, overflowed, off), why it is not used when it is not,
// and what it measured.
type ListingStatus struct {
	URL     string
	State   string
	Problem string
	// InUse: the Site is planned around its listing now; otherwise its
	// Series are planned one by one.
	InUse          bool
	ReadAt, NextAt *time.Time
	Entries        int
	RatePerHour    float64
}

func (c *Console) listingStatus(site *latest.Site, st store.SiteListing) *ListingStatus {
	u, ok := site.ListingURL()
	if !ok {
		return nil
	}
	out := &ListingStatus{URL: u, State: st.State, Problem: st.Problem, ReadAt: st.ReadAt, NextAt: st.NextAt, Entries: st.Entries, RatePerHour: st.Rate}
	if out.State == "" {
		out.State = store.ListingNew
	}
	if !c.Listings || c.PolicyName() != PolicyAdaptive {
		out.State, out.Problem, out.NextAt = ListingOff, "POLL_LISTINGS is off or POLL_POLICY is interval: Series are planned one by one", nil
		return out
	}
	now := c.now()
	out.InUse = st.State == store.ListingHealthy && (st.FallbackUntil == nil || !now.Before(*st.FallbackUntil))
	if st.State == store.ListingNew && out.Problem == "" {
		out.Problem = "not trusted yet: two good reads measure it first"
	}
	return out
}
