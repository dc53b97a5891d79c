package simulate

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Fragmentation is the share of the cluster's free GPUs that no waiting
// session could use, as the openb trace's paper measures it (Weng et al.,
// "Beware of Fragmentation", USENIX ATC 2023): at an instant, the free
// GPUs of every agent on which no kernel of a session waiting for GPUs
// fits (all of its slots, not the GPUs alone, and within the agent's
// kernel cap), over all free GPUs. It is sampled at the middle of each
// utilisation interval.
type Fragmentation struct {
	// Mean is over the instants that have a figure.
	Mean      float64 `json:"mean"`
	IntervalS float64 `json:"interval_s"`
	// Instants counts the samples that have a figure.
	Instants int `json:"instants"`
	// Series has one point per interval; null where no session waited
	// for a GPU or no GPU was free, where the share means nothing.
	Series []*float64 `json:"series"`
	// Expected is the paper's own form: the target is not the queue but
	// the whole workload, each GPU request shape weighted by its share of
	// the workload's GPU sessions; a point is the expected share of free
	// GPUs on agents where a request drawn from it would not fit. It
	// stays informative where the queue-based figure cannot: a
	// work-conserving scheduler leaves waiting only what fits nowhere.
	// Null where no GPU was free; the mean is over the other points.
	ExpectedMean   float64    `json:"expected_mean"`
	ExpectedSeries []*float64 `json:"expected_series"`
}

// fragNode is one agent during the fragmentation pass.
type fragNode struct {
	free    domain.Vec
	kernels int
	max     int // kernel cap, 0 for none
}

// waitShape is a per-kernel request some of the workload's GPU sessions
// share: how many of them wait at the instant, and how many there are.
type waitShape struct {
	req     domain.Vec
	waiting int
	all     int
}

// waitMark is a session starting (+1) or stopping (-1) to wait.
type waitMark struct {
	at    time.Duration
	shape int
	delta int
}

// fragmentation replays the kernels' holdings per agent beside the
// queue of sessions waiting for GPUs; nil when the cluster has no GPUs.
func (r *runner) fragmentation(cl Cluster, gpu domain.SlotID, end time.Duration) *Fragmentation {
	if cl.capacity(r.reg).At(gpu) == 0 {
		return nil
	}
	nodes, byID := r.fragNodes(cl)
	shapes, marks := r.waiting(gpu)
	samples, width := r.sampling(end)
	f := &Fragmentation{IntervalS: round3(width.Seconds()), Series: make([]*float64, samples),
		ExpectedSeries: make([]*float64, samples)}
	hi, mi := 0, 0
	sum, esum, en := 0.0, 0.0, 0
	for b := range samples {
		at := width/2 + time.Duration(b)*width
		// A change at the instant itself is after it, as for utilisation.
		for ; hi < len(r.tr.holds) && r.tr.holds[hi].at < at; hi++ {
			h := r.tr.holds[hi]
			if n, ok := byID[h.agent]; ok {
				req := r.tr.recs[h.sess].req
				if h.delta > 0 {
					n.free.Sub(req)
				} else {
					n.free.Add(req)
				}
				n.kernels += int(h.delta)
			}
		}
		for ; mi < len(marks) && marks[mi].at <= at; mi++ {
			shapes[marks[mi].shape].waiting += marks[mi].delta
		}
		if x, ok := fragmented(nodes, shapes, gpu); ok {
			f.Series[b] = &x
			sum += x
			f.Instants++
		}
		if x, ok := expectedFragmentation(nodes, shapes, gpu); ok {
			f.ExpectedSeries[b] = &x
			esum += x
			en++
		}
	}
	if f.Instants > 0 {
		f.Mean = round4(sum / float64(f.Instants))
	}
	if en > 0 {
		f.ExpectedMean = round4(esum / float64(en))
	}
	return f
}

// expectedFragmentation weighs each shape by how many of the workload's
// GPU sessions ask for it (shape.all); false when no GPU is free.
func expectedFragmentation(nodes []*fragNode, shapes []waitShape, gpu domain.SlotID) (float64, bool) {
	total := 0
	for _, s := range shapes {
		total += s.all
	}
	var free, stuck float64
	for _, n := range nodes {
		g := n.free.At(gpu)
		if g <= 0 {
			continue
		}
		free += float64(g)
		capped := n.max > 0 && n.kernels >= n.max
		for _, s := range shapes {
			if capped || !fits(s.req, n.free) {
				stuck += float64(g) * float64(s.all) / float64(total)
			}
		}
	}
	if free == 0 || total == 0 {
		return 0, false
	}
	return round4(stuck / free), true
}

// fragmented is the share of free GPUs on nodes where no waiting shape
// fits; false when none is free or nothing waits.
func fragmented(nodes []*fragNode, shapes []waitShape, gpu domain.SlotID) (float64, bool) {
	var free, stuck domain.Quantity
	anyWaiting := false
	for _, s := range shapes {
		anyWaiting = anyWaiting || s.waiting > 0
	}
	if !anyWaiting {
		return 0, false
	}
	for _, n := range nodes {
		g := n.free.At(gpu)
		if g <= 0 {
			continue
		}
		free += g
		if !fitsAny(n, shapes) {
			stuck += g
		}
	}
	if free == 0 {
		return 0, false
	}
	x := round4(float64(stuck) / float64(free))
	return x, true
}

func fitsAny(n *fragNode, shapes []waitShape) bool {
	if n.max > 0 && n.kernels >= n.max {
		return false
	}
	for _, s := range shapes {
		if s.waiting > 0 && fits(s.req, n.free) {
			return true
		}
	}
	return false
}

func fits(req, free domain.Vec) bool {
	for i, q := range req {
		if q > free.At(domain.SlotID(i)) {
			return false
		}
	}
	return true
}

// fragNodes is every agent of the cluster, free as registered.
func (r *runner) fragNodes(cl Cluster) ([]*fragNode, map[domain.AgentID]*fragNode) {
	var nodes []*fragNode
	byID := map[domain.AgentID]*fragNode{}
	for _, p := range cl.Pools {
		capacity, _ := r.reg.ParseSlots(p.Resources) // validated
		for range p.Count {
			n := &fragNode{free: r.reg.NewVec(), max: p.MaxKernels}
			n.free.Add(capacity)
			nodes = append(nodes, n)
			byID[agentID(len(nodes))] = n
		}
	}
	return nodes, byID
}

// waiting lists, in time order, when each session asking for GPUs starts
// and stops waiting: from its submission to its first start, or to its
// end if it never started (a cancel), or for the rest of the run.
func (r *runner) waiting(gpu domain.SlotID) ([]waitShape, []waitMark) {
	var shapes []waitShape
	index := map[string]int{}
	var marks []waitMark
	for i := range r.tr.recs {
		rec := &r.tr.recs[i]
		if !rec.submitted || rec.rejected != "" || rec.req.At(gpu) == 0 {
			continue
		}
		key := vecKey(rec.req)
		si, ok := index[key]
		if !ok {
			si = len(shapes)
			index[key] = si
			shapes = append(shapes, waitShape{req: rec.req})
		}
		shapes[si].all++
		marks = append(marks, waitMark{at: seconds(r.w.Sessions[i].Submit), shape: si, delta: 1})
		switch {
		case rec.start >= 0:
			marks = append(marks, waitMark{at: rec.start, shape: si, delta: -1})
		case rec.end >= 0:
			marks = append(marks, waitMark{at: rec.end, shape: si, delta: -1})
		}
	}
	slices.SortStableFunc(marks, func(a, b waitMark) int { return cmpDur(a.at, b.at) })
	return shapes, marks
}

func vecKey(v domain.Vec) string {
	var b strings.Builder
	for _, q := range v {
		b.WriteString(strconv.FormatInt(int64(q), 10))
		b.WriteByte(',')
	}
	return b.String()
}

// sampling is the utilisation series' intervals over [0, end).
func (r *runner) sampling(end time.Duration) (int, time.Duration) {
	samples := r.opt.Samples
	if samples <= 0 {
		samples = 200
	}
	if end <= 0 {
		end = time.Second
	}
	width := end / time.Duration(samples)
	if width <= 0 {
		width = 1
	}
	return samples, width
}
