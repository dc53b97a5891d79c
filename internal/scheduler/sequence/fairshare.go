package sequence

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// RoundCharge is how much use a session placed in this round is charged
// as until the history catches up with it: its slots for an hour, the
// history's own granularity. Without it one round would hand every free
// slot to whoever had the least history, since the history moves only
// when the usage rollup runs (Kueue charges an admitted workload at
// admission for the same reason).
const RoundCharge = time.Hour

// Factor is one project and user's fair-share factor and what it is made
// of, SLURM's classic F = 2^(-U/S):
//
//	U = max over slots s of d(a, s) / Σ_b d(b, s)
//	S = (P(p) / Σ active projects P) × (Q(u) / Σ the project's active users Q)
//	F = 2^(-U / S)
//
// d(a, s) is the association's decayed usage of slot s (the history's
// hours weighted 2^(-age / half-life), plus RoundCharge of what it placed
// this round), P and Q the raw shares (1 unless the group sets them), and
// an association is active when it has usage in the group or a PENDING
// session there. U is the dominant share of past use, as DRF's is of
// present holdings; F is 1 for no use and halves each time U grows by S.
type Factor struct {
	Project, User string
	// Usage is U, and Slot the slot it was taken from ("" for none).
	Usage float64
	Slot  string
	// Shares is S.
	Shares float64
	Factor float64
	// Decayed is d per slot name, in slot-seconds of the stored unit.
	Decayed map[string]float64
}

// FairShare serves the project and user with the highest fair-share
// factor next, and recomputes every factor after each placement (the
// placed session is charged RoundCharge of its slots). Within an
// association, sessions go oldest first; equal factors go to the older
// head.
type FairShare struct{}

func (FairShare) Name() string { return domain.FairShareSequencer }

func (FairShare) Queue(st *framework.State, band []int32) framework.Queue {
	order := slices.Clone(band)
	slices.SortFunc(order, func(a, b int32) int { return older(st, a, b) })
	q := &fairQueue{st: st, calc: newFairCalc(st.Snap)}
	at := map[framework.Association]int{}
	for _, i := range order {
		a := assocOf(&st.Sessions[i].Pending.Session)
		k, ok := at[a]
		if !ok {
			k = len(q.heads)
			at[a] = k
			q.heads = append(q.heads, fairHead{assoc: q.calc.index[a]})
		}
		q.heads[k].sessions = append(q.heads[k].sessions, i)
	}
	return q
}

func assocOf(s *domain.Session) framework.Association {
	return framework.Association{Project: s.Owner.Project, User: s.Owner.User}
}

type fairHead struct {
	assoc    int
	sessions []int32
}

type fairQueue struct {
	st    *framework.State
	calc  *fairCalc
	heads []fairHead
	// The ratios are recomputed only after a placement: nothing else
	// moves RoundUse (a gang that does not fit gives back all it took).
	fresh bool
}

// Next scans the associations: there are few next to the sessions, and
// every placement moves every U through the totals.
func (q *fairQueue) Next() (int32, bool) {
	if !q.fresh {
		q.calc.compute(q.st.RoundUse, false)
		q.fresh = true
	}
	r := q.calc.ratio
	best := -1
	for k := range q.heads {
		h := &q.heads[k]
		if len(h.sessions) == 0 {
			continue
		}
		if best < 0 {
			best = k
			continue
		}
		b := &q.heads[best]
		if x, y := r[h.assoc], r[b.assoc]; x < y || (x == y && older(q.st, h.sessions[0], b.sessions[0]) < 0) {
			best = k
		}
	}
	if best < 0 {
		return 0, false
	}
	h := &q.heads[best]
	i := h.sessions[0]
	h.sessions = h.sessions[1:]
	return i, true
}

// Placed marks the factors stale: the round's Commit added the session to
// RoundUse.
func (q *fairQueue) Placed(int32) { q.fresh = false }

// fairCalc holds what does not change during a round: the active
// associations, their history and their shares.
type fairCalc struct {
	reg     *domain.Registry
	assocs  []framework.Association
	index   map[framework.Association]int
	decayed [][]float64
	shares  []float64
	// eff and total are compute's buffers, ratio its result for the
	// queue: U/S per association, lower first (F = 2^(-U/S) falls as it
	// grows, so the order is F's without an exponential per placement).
	// rows are RoundUse's vectors by association, as of seen entries.
	eff, total, ratio []float64
	rows              []domain.Vec
	seen              int
}

func newFairCalc(snap *framework.Snapshot) *fairCalc {
	c := &fairCalc{reg: snap.Slots, index: map[framework.Association]int{}}
	n := snap.Slots.Len()
	add := func(a framework.Association) int {
		if k, ok := c.index[a]; ok {
			return k
		}
		c.index[a] = len(c.assocs)
		c.assocs = append(c.assocs, a)
		c.decayed = append(c.decayed, make([]float64, n))
		return len(c.assocs) - 1
	}
	for _, d := range snap.Decayed {
		row := c.decayed[add(framework.Association{Project: d.Project, User: d.User})]
		for s, v := range d.Slots {
			if s < n {
				row[s] += v
			}
		}
	}
	for i := range snap.Pending {
		add(assocOf(&snap.Pending[i].Session))
	}
	c.sort()
	c.shares = normalisedShares(c.assocs, snap.Group.FairShare)
	return c
}

// sort puts the associations in (project, user) order, so that sums over
// them, and so ties between factors, do not depend on input order.
func (c *fairCalc) sort() {
	perm := make([]int, len(c.assocs))
	for i := range perm {
		perm[i] = i
	}
	slices.SortFunc(perm, func(x, y int) int {
		a, b := c.assocs[x], c.assocs[y]
		if d := strings.Compare(a.Project, b.Project); d != 0 {
			return d
		}
		return strings.Compare(a.User, b.User)
	})
	assocs, decayed := make([]framework.Association, len(perm)), make([][]float64, len(perm))
	for k, i := range perm {
		assocs[k], decayed[k] = c.assocs[i], c.decayed[i]
		c.index[assocs[k]] = k
	}
	c.assocs, c.decayed = assocs, decayed
}

// normalisedShares is S per association; the sums run in sorted order so
// the result does not depend on the input's.
func normalisedShares(assocs []framework.Association, fs domain.FairShare) []float64 {
	projects := map[string]bool{}
	users := map[string]map[string]bool{}
	for _, a := range assocs {
		projects[a.Project] = true
		if users[a.Project] == nil {
			users[a.Project] = map[string]bool{}
		}
		users[a.Project][a.User] = true
	}
	var projectSum float64
	for _, p := range slices.Sorted(keysOf(projects)) {
		projectSum += fs.ProjectShare(p)
	}
	userSum := map[string]float64{}
	for p, us := range users {
		for _, u := range slices.Sorted(keysOf(us)) {
			userSum[p] += fs.UserShare(u)
		}
	}
	out := make([]float64, len(assocs))
	for i, a := range assocs {
		out[i] = fs.ProjectShare(a.Project) / projectSum * fs.UserShare(a.User) / userSum[a.Project]
	}
	return out
}

func keysOf(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// compute returns every association's factor with round's placements
// charged; detail fills in Decayed, which only Factors shows.
func (c *fairCalc) compute(round map[framework.Association]domain.Vec, detail bool) []Factor {
	n := c.reg.Len()
	// The buffers are reused: a round recomputes after every placement.
	if len(c.eff) != len(c.assocs)*n {
		c.eff, c.total, c.ratio = make([]float64, len(c.assocs)*n), make([]float64, n), make([]float64, len(c.assocs))
	}
	eff := func(k int) []float64 { return c.eff[k*n : (k+1)*n] }
	for k := range c.assocs {
		copy(eff(k), c.decayed[k])
	}
	// RoundUse only gains entries, and each keeps its vector: the rows are
	// looked up again only when an association places for the first time.
	if len(round) != c.seen {
		c.rows = make([]domain.Vec, len(c.assocs))
		for a, r := range round {
			if k, ok := c.index[a]; ok {
				c.rows[k] = r
			}
		}
		c.seen = len(round)
	}
	charge := RoundCharge.Seconds()
	for k, r := range c.rows {
		row := eff(k)
		for s := range min(n, len(r)) {
			row[s] += float64(r[s]) * charge
		}
	}
	// Totals in association order, which is fixed per snapshot.
	clear(c.total)
	for k := range c.assocs {
		for s, v := range eff(k) {
			c.total[s] += v
		}
	}
	for k := range c.assocs {
		var u float64
		for s, v := range eff(k) {
			if t := c.total[s]; t > 0 {
				u = max(u, v/t)
			}
		}
		c.ratio[k] = u / c.shares[k]
	}
	if !detail {
		return nil
	}
	out := make([]Factor, len(c.assocs))
	for k, a := range c.assocs {
		f := Factor{Project: a.Project, User: a.User, Shares: c.shares[k], Decayed: map[string]float64{}}
		for s, v := range eff(k) {
			if v > 0 {
				f.Decayed[c.reg.Type(domain.SlotID(s)).Name] = v
			}
			if t := c.total[s]; t > 0 && v/t > f.Usage {
				f.Usage, f.Slot = v/t, c.reg.Type(domain.SlotID(s)).Name
			}
		}
		f.Factor = Classic(f.Usage, f.Shares)
		out[k] = f
	}
	return out
}

// Classic is SLURM's classic fair-share factor, 2^(-U/S).
func Classic(usage, shares float64) float64 {
	if shares <= 0 {
		return 0
	}
	return math.Exp2(-usage / shares)
}

// Factors is every active association's factor before the round places
// anything, by project then user: what why and queue show.
func Factors(snap *framework.Snapshot) []Factor {
	return newFairCalc(snap).compute(nil, true)
}
