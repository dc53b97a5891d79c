package simulate

import (
	"maps"
	"slices"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Window is what each user got of one slot over one stretch of the run
// (Options.Window wide, from virtual time zero): the measure of fair share
// over time, where the whole-run figures hide who got what when.
type Window struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	Slot  string  `json:"slot"`
	// Hours is each user's slot-hours in the window (GPU-hours for a
	// device slot); Share each one's fraction of the window's total.
	Hours map[string]float64 `json:"hours"`
	Share map[string]float64 `json:"share"`
	// Cumulative is each user's fraction of all slot-hours from the
	// start of the run to the window's end.
	Cumulative map[string]float64 `json:"cumulative_share"`
	// Jain is Jain's index over the slot-hours of the users with a
	// session live (pending or running) in the window; 0 when none is.
	Jain float64 `json:"jain"`
	// Util is the window's slot-hours over its capacity-hours.
	Util float64 `json:"util"`
}

// windowSlot is the slot windows measure: the first of the devices, then
// cpu, that the cluster offers.
func windowSlot(reg *domain.Registry, capacity domain.Vec) (domain.SlotID, bool) {
	for _, name := range []string{"cuda.device", "cuda.shares", "cpu"} {
		if id, ok := reg.Lookup(name); ok && capacity.At(id) > 0 {
			return id, true
		}
	}
	return 0, false
}

// windows measures each window of the run up to end.
func (r *runner) windows(capacity domain.Vec, end time.Duration) []Window {
	width := r.opt.Window
	slot, ok := windowSlot(r.reg, capacity)
	if width <= 0 || end <= 0 || !ok {
		return nil
	}
	n := int((end + width - 1) / width)
	hours := make([]map[string]float64, n)
	for i := range hours {
		hours[i] = map[string]float64{}
	}
	// Integrate each user's holding of the slot between hold changes,
	// split at the window edges.
	held := map[string]float64{}
	t := time.Duration(0)
	advance := func(to time.Duration) {
		for t < to {
			w := int(t / width)
			edge := min(time.Duration(w+1)*width, to)
			if w < n {
				for u, q := range held {
					if q != 0 {
						hours[w][u] += q * (edge - t).Hours()
					}
				}
			}
			t = edge
		}
	}
	for _, h := range r.tr.holds {
		advance(min(h.at, end))
		s := r.w.Sessions[h.sess]
		held[s.User] += units(r.reg, slot, r.tr.recs[h.sess].req.At(slot)) * float64(h.delta)
	}
	advance(end)
	return r.summariseWindows(hours, width, end, slot, units(r.reg, slot, capacity.At(slot)))
}

func (r *runner) summariseWindows(hours []map[string]float64, width, end time.Duration, slot domain.SlotID, capUnits float64) []Window {
	out := make([]Window, len(hours))
	cum := map[string]float64{}
	for i, h := range hours {
		from, to := time.Duration(i)*width, min(time.Duration(i+1)*width, end)
		w := Window{FromS: from.Seconds(), ToS: to.Seconds(), Slot: r.reg.Type(slot).Name, Hours: map[string]float64{},
			Share: map[string]float64{}, Cumulative: map[string]float64{}}
		// Summed in user order: floating-point addition in map order
		// could move a rounded figure from one run of the same workload
		// to the next.
		var total, cumTotal float64
		for _, u := range slices.Sorted(maps.Keys(h)) {
			v := h[u]
			w.Hours[u] = round3(v)
			total += v
			cum[u] += v
		}
		for _, u := range slices.Sorted(maps.Keys(cum)) {
			cumTotal += cum[u]
		}
		for u, v := range h {
			if total > 0 {
				w.Share[u] = round4(v / total)
			}
		}
		for u, v := range cum {
			if cumTotal > 0 {
				w.Cumulative[u] = round4(v / cumTotal)
			}
		}
		var xs []float64
		for _, u := range r.liveUsers(from, to) {
			xs = append(xs, h[u])
		}
		if j, ok := jain(xs); ok {
			w.Jain = round4(j)
		}
		if c := capUnits * (to - from).Hours(); c > 0 {
			w.Util = round4(total / c)
		}
		out[i] = w
	}
	return out
}

// liveUsers are the users with a session submitted before to that had
// not ended by from, sorted.
func (r *runner) liveUsers(from, to time.Duration) []string {
	seen := map[string]bool{}
	for i, rec := range r.tr.recs {
		if !rec.submitted || rec.rejected != "" {
			continue
		}
		s := r.w.Sessions[i]
		if seconds(s.Submit) < to && (rec.end < 0 || rec.end > from) {
			seen[s.User] = true
		}
	}
	out := make([]string, 0, len(seen))
	for u := range seen {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}
