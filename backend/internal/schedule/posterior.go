package schedule

import (
	"math"
	"time"
)

// A slot's window from its releases (docs/adr/0034, step 8). Each release
// of a slot is its centre mu plus a Gaussian jitter sigma; a release is
// known as a point (a window's polls found it within fineHalf) or as the
// interval between the poll before it and the one that saw it. The window
// is the posterior's prediction of the next release: its mean centre, and
// the spread sqrt(E[sigma²] + Var(mu)), widened by tailAllowance.
//
// summarize's robust centre and spread still decide which clusters are
// slots; only a slot's window comes from here. The two differ where the
// intervals say more than their middles: a weekly release seen by a poller
// every 4 hours lands in the same interval every week, which leaves mu
// anywhere in it (a window at least as wide as summarize's), but releases
// that straddle two intervals (12-16 h some weeks, 16-20 h others) place
// mu near 16 h, and a window's first fine release places it within
// minutes, while summarize's middle stays with the coarse majority for
// weeks.

// sigmaGrid is the jitters the posterior weighs, in minutes.
var sigmaGrid = [...]float64{8, 12, 18, 27, 40, 60, 90, 135}

const (
	// postSteps is the grid's steps of mu over the releases' span, which
	// reaches muMargin minutes past them.
	postSteps = 60
	muMargin  = 60
	// priorWeight is how many pseudo-releases at priorSpread from the
	// centre the prior on sigma counts, as summarize's shrinkage does: a
	// few fine releases close together by chance do not make a narrow
	// window.
	priorWeight = 2
	// offSlotShare of a slot's coarse releases may be off the slot (an
	// interval that joined the cluster by touching it).
	offSlotShare = 0.05
	// tailAllowance widens the posterior's spread by up to 30%, in
	// proportion to the jitter the fine releases show (up to priorSpread;
	// in full while fewer than three). Measured, not derived: with the
	// posterior's own spread, bursty's drop Series (chapters up over the
	// hour and a half after a drop) had releases at the edge of what their
	// few fine ones showed come after the window's last polls, to be found
	// by a safety poll hours later (its p90 at 0.25: 102.5 before step 8,
	// 106.5 without the allowance, 102.1 with it). A Series that is always
	// on the minute shows no jitter and gets none.
	tailAllowance = 1.3
	// outlierSpread: a fine release this many robust deviations (and at
	// least an hour) from the fine median is left out: a second chapter or
	// an off-schedule one that joined the cluster is not the slot's jitter.
	outlierSpread = 4
)

// posteriorSlot returns the centre (on vals' line, not reduced to the
// period) and spread of a slot's window; vals are sorted by position.
func posteriorSlot(vals []placed) (center, spread time.Duration) {
	type interval struct{ a, b, m float64 } // minutes from lo; m releases
	// mu's grid reaches muMargin past the releases: cut at the first
	// release, the posterior of a few fine ones with a wide sigma would be
	// pushed inwards.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo = math.Min(lo, (v.pos-v.half).Minutes()-muMargin)
		hi = math.Max(hi, (v.pos+v.half).Minutes()+muMargin)
	}
	var coarse []interval
	var fine, fineVar []float64
	for _, v := range vals {
		x, h := v.pos.Minutes()-lo, v.half.Minutes()
		if v.half <= fineHalf {
			fine = append(fine, x)
			fineVar = append(fineVar, h*h/3)
			continue
		}
		// A poller at a fixed phase sees a weekly slot in the same
		// interval every week: one term, counted m times.
		if k := len(coarse) - 1; k >= 0 && coarse[k].a == x-h && coarse[k].b == x+h {
			coarse[k].m++
			continue
		}
		coarse = append(coarse, interval{x - h, x + h, 1})
	}
	fine, fineVar = trimFine(fine, fineVar)
	allowance := tailAllowance
	if len(fine) >= minEvents {
		_, sd := robust(fine)
		allowance = 1 + (tailAllowance-1)*math.Min(1, sd/priorSpread.Minutes())
	}

	span := hi - lo
	steps := int(math.Min(postSteps, math.Max(1, span)))
	step := span / float64(steps)
	cells := steps + 1
	offDensity := offSlotShare / math.Max(span, 60)
	prior := priorSpread.Minutes()
	ll := make([]float64, cells*len(sigmaGrid))
	best := math.Inf(-1)
	for si, sg := range sigmaGrid {
		// The fine releases' log-likelihood is a quadratic in mu.
		var qa, qb, qc, norm float64
		for i, x := range fine {
			v := sg*sg + fineVar[i]
			w := 1 / (2 * v)
			qa += w
			qb += w * x
			qc += w * x * x
			norm -= 0.5 * math.Log(2*math.Pi*v)
		}
		lp := -priorWeight*math.Log(sg) - priorWeight*prior*prior/(2*sg*sg) + norm
		for j := range cells {
			mu := float64(j) * step
			l := lp - (qa*mu*mu - 2*qb*mu + qc)
			for _, c := range coarse {
				in := (phi((c.b-mu)/sg) - phi((c.a-mu)/sg)) / (c.b - c.a)
				l += c.m * math.Log((1-offSlotShare)*in+offDensity)
			}
			ll[si*cells+j] = l
			best = math.Max(best, l)
		}
	}
	var w, m1, m2, s2 float64
	for si, sg := range sigmaGrid {
		for j := range cells {
			e := math.Exp(ll[si*cells+j] - best)
			mu := float64(j) * step
			w += e
			m1 += e * mu
			m2 += e * mu * mu
			s2 += e * sg * sg
		}
	}
	m1 /= w
	sd := allowance * math.Sqrt(s2/w+math.Max(0, m2/w-m1*m1))
	return time.Duration((lo + m1) * float64(time.Minute)), max(time.Duration(sd*float64(time.Minute)), minSpread)
}

// trimFine leaves out the fine releases more than outlierSpread robust
// deviations (and an hour) from their median, once there are three.
func trimFine(fine, variance []float64) ([]float64, []float64) {
	if len(fine) < 3 {
		return fine, variance
	}
	med, sd := robust(fine)
	cut := math.Max(outlierSpread*sd, 60)
	k := 0
	for i, x := range fine {
		if math.Abs(x-med) <= cut {
			fine[k], variance[k] = x, variance[i]
			k++
		}
	}
	return fine[:k], variance[:k]
}

// phiTable is the standard normal CDF on [-phiEdge, phiEdge] in steps of
// 1/phiRes, read with linear interpolation (error under 1e-5): the
// posterior evaluates it for every coarse release at every cell of its
// grid, and math.Erfc there tripled the simulator's run time.
const (
	phiEdge = 9
	phiRes  = 64
)

var phiTable = func() []float64 {
	t := make([]float64, 2*phiEdge*phiRes+1)
	for i := range t {
		z := float64(i)/phiRes - phiEdge
		t[i] = 0.5 * math.Erfc(-z/math.Sqrt2)
	}
	return t
}()

func phi(z float64) float64 {
	if !(z > -phiEdge) {
		return 0
	}
	x := (z + phiEdge) * phiRes
	i := int(x)
	if i >= len(phiTable)-1 {
		return 1
	}
	f := x - float64(i)
	return phiTable[i]*(1-f) + phiTable[i+1]*f
}
