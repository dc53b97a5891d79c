package simulate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// SlowdownThreshold is the bounded slowdown's floor on run time: a session
// shorter than this counts as this long, so a 1-second job that waited a
// minute does not dominate the mean (Feitelson's bounded slowdown).
const SlowdownThreshold = 10 * time.Second

// Report is what `sokovan simulate` writes: the inputs' shape and one
// Variant per setting combination, all on the same workload.
type Report struct {
	Workload WorkloadSummary `json:"workload"`
	Cluster  ClusterSummary  `json:"cluster"`
	Variants []Variant       `json:"variants"`
}

// WorkloadSummary describes the workload run.
type WorkloadSummary struct {
	Source   string  `json:"source"`
	Sessions int     `json:"sessions"`
	SpanS    float64 `json:"submission_span_s"`
}

// ClusterSummary describes the cluster run.
type ClusterSummary struct {
	Agents   int               `json:"agents"`
	Capacity map[string]string `json:"capacity"`
}

// Variant is one run's measurements. Times are seconds of virtual time.
type Variant struct {
	Name     string   `json:"name"`
	Settings []string `json:"settings"`
	// Status counts sessions by how they ended: the store's terminal
	// statuses, REJECTED (refused at submit by the API's admission, as the
	// API would with 400, 409 or 429), UNFINISHED (still live when the run stopped) and
	// NOT_SUBMITTED (after the horizon).
	Status      map[string]int `json:"status"`
	TimeLimited int            `json:"time_limited"`
	// Preempted counts preemptions (a requeued session may be preempted
	// again) and WorkLostS the run time they threw away.
	Preempted int     `json:"preempted"`
	WorkLostS float64 `json:"work_lost_s"`
	MakespanS float64 `json:"makespan_s"`
	// Cycles is how many coordinator cycles the run took.
	Cycles      int         `json:"cycles"`
	Classes     []Class     `json:"classes"`
	Utilisation Utilisation `json:"utilisation"`
	// Fragmentation is the share of free GPUs no waiting session could
	// use, over time; nil on a cluster without GPUs.
	Fragmentation *Fragmentation `json:"gpu_fragmentation,omitempty"`
	Fairness      Fairness       `json:"fairness"`
	Slowdown      Slowdown       `json:"bounded_slowdown"`
	BiggestGang   *Gang          `json:"biggest_gang,omitempty"`
	// Biggest is the sessions asking the most GPUs in all.
	Biggest *Biggest `json:"biggest,omitempty"`
	// Priorities is the wait of each priority, highest first, when the
	// workload has more than one (a requeued session's wait is to its
	// first start).
	Priorities []Class `json:"priorities,omitempty"`
	// Windows is who got what of the main slot in each Options.Window of
	// the run; absent without one.
	Windows []Window `json:"windows,omitempty"`
	// Partial says why the run stopped before its end (a timeout, an
	// interrupt) and at what virtual time; empty for a whole run. The
	// figures are then of what had happened by then: sessions still live
	// are UNFINISHED, those not yet due NOT_SUBMITTED.
	Partial string `json:"partial,omitempty"`
	// Rejected is why the first session refused at submit was refused
	// (status REJECTED), so that a run whose cluster cannot take the
	// workload says so rather than reporting empty waits.
	Rejected string `json:"rejected,omitempty"`
	// Sessions is each session's result, for --sessions; not in the
	// report's JSON, which summarises.
	Sessions []SessionResult `json:"-"`
}

// Class is the wait (submit to RUNNING) of one size class.
type Class struct {
	Name     string      `json:"name"`
	Sessions int         `json:"sessions"`
	Started  int         `json:"started"`
	Wait     Percentiles `json:"wait_s"`
	// CDF is the wait distribution of started sessions, at most 101
	// points (wait, fraction at or below it).
	CDF [][2]float64 `json:"wait_cdf"`
}

// Percentiles summarise a distribution.
type Percentiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Utilisation is the share of each slot held by kernels (reserved on an
// agent: SCHEDULED through TERMINATING), averaged over each interval.
type Utilisation struct {
	IntervalS float64      `json:"interval_s"`
	Slots     []SlotSeries `json:"slots"`
}

// SlotSeries is one slot's utilisation over time, 0 to 1.
type SlotSeries struct {
	Slot     string    `json:"slot"`
	Capacity string    `json:"capacity"`
	Mean     float64   `json:"mean"`
	Series   []float64 `json:"series"`
}

// Fairness is Jain's index, (Σx)²/(n·Σx²), over users' dominant shares
// (a user's largest share of any slot of the cluster): 1 when all are
// equal, 1/n when one user has everything.
type Fairness struct {
	// Overall takes each user's dominant share of the whole run's
	// slot-seconds, over every user who submitted.
	Overall float64 `json:"jain_overall"`
	// OverTime averages, over the sample instants, the index among the
	// users with a session live (pending or running) then.
	OverTime float64 `json:"jain_over_time"`
	Users    int     `json:"users"`
}

// Slowdown is bounded slowdown, max(1, (wait+run)/max(run, threshold)),
// over sessions that ran.
type Slowdown struct {
	ThresholdS float64 `json:"threshold_s"`
	Percentiles
}

// Gang is how the largest multi-node sessions fared.
type Gang struct {
	ClusterSize int     `json:"cluster_size"`
	Sessions    int     `json:"sessions"`
	Started     int     `json:"started"`
	WorstWaitS  float64 `json:"worst_wait_s"`
}

// waitClass names sessions by the GPUs they ask for in all, up to max
// inclusive.
type waitClass struct {
	name string
	max  float64
}

// DefaultClasses are the size classes' upper bounds in GPUs when Options
// gives none: cpu-only, <=1, 2-4, 5-8 and >8 GPUs.
var DefaultClasses = []float64{0, 1, 4, 8}

// sizeClasses names the classes bounded by bounds (ascending GPUs), and
// one more above the last.
func sizeClasses(bounds []float64) []waitClass {
	if len(bounds) == 0 {
		bounds = DefaultClasses
	}
	out := make([]waitClass, 0, len(bounds)+1)
	prev := -1.0
	for _, b := range bounds {
		var name string
		switch {
		case b == 0:
			name = "cpu-only"
		case prev <= 0:
			name = fmt.Sprintf("<=%g GPU", b)
			if b > 1 {
				name += "s"
			}
		case prev == math.Trunc(prev) && b == math.Trunc(b) && prev+1 == b:
			name = fmt.Sprintf("%g GPUs", b)
		case prev == math.Trunc(prev) && b == math.Trunc(b):
			name = fmt.Sprintf("%g-%g GPUs", prev+1, b)
		default:
			name = fmt.Sprintf(">%g-%g GPUs", prev, b)
		}
		out = append(out, waitClass{name: name, max: b})
		prev = b
	}
	return append(out, waitClass{name: fmt.Sprintf(">%g GPUs", prev), max: math.Inf(1)})
}

// ParseClasses reads --classes: ascending GPU bounds, comma-separated.
func ParseClasses(spec string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(spec, ",") {
		b, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || b < 0 || math.IsInf(b, 0) || len(out) > 0 && b <= out[len(out)-1] {
			return nil, fmt.Errorf("--classes %q: want ascending GPU counts of 0 or more, such as 0,1,4,8", spec)
		}
		out = append(out, b)
	}
	return out, nil
}

// Biggest is the wait of the sessions asking the most GPUs in all,
// whatever their kernel count: an 8-GPU single-node session is as big as
// a gang of eight one-GPU kernels.
type Biggest struct {
	GPUs       float64 `json:"gpus"`
	Sessions   int     `json:"sessions"`
	Started    int     `json:"started"`
	WorstWaitS float64 `json:"worst_wait_s"`
}

func (r *runner) report(cl Cluster, settings []Setting) Variant {
	v := Variant{Name: variantName(settings), Settings: []string{}, Status: map[string]int{}, Cycles: r.cycles}
	for _, s := range settings {
		v.Settings = append(v.Settings, s.String())
	}
	gpu := cl.gpuSlot(r.reg)
	capacity := cl.capacity(r.reg)
	end := r.clock.Now().Sub(r.origin)

	sizes := sizeClasses(r.opt.Classes)
	classWaits := make([][]float64, len(sizes))
	classes := make([]Class, len(sizes))
	for i, c := range sizes {
		classes[i].Name = c.name
	}
	biggest := Biggest{}
	var slow []float64
	var first, last time.Duration = -1, 0
	gang := Gang{}
	byPrio := map[int][]float64{}
	v.Preempted, v.WorkLostS = r.tr.preempted, r.tr.workLost.Seconds()
	for i, rec := range r.tr.recs {
		s := r.w.Sessions[i]
		switch {
		case !rec.submitted:
			v.Status["NOT_SUBMITTED"]++
			continue
		case rec.rejected != "":
			v.Status["REJECTED"]++
			v.Rejected = cmp.Or(v.Rejected, rec.rejected) // the first refusal's
			continue
		case rec.end < 0:
			v.Status["UNFINISHED"]++
		default:
			v.Status[rec.status]++
			last = max(last, rec.end)
		}
		if rec.limitHit {
			v.TimeLimited++
		}
		submit := seconds(s.Submit)
		if first < 0 {
			first = submit
		}
		gpus := units(r.reg, gpu, rec.total.At(gpu))
		ci := classOf(sizes, gpus)
		classes[ci].Sessions++
		if gpus > 0 && gpus >= biggest.GPUs {
			if gpus > biggest.GPUs {
				biggest = Biggest{GPUs: gpus}
			}
			biggest.Sessions++
		}
		if s.ClusterSize > 1 && s.ClusterSize >= gang.ClusterSize {
			if s.ClusterSize > gang.ClusterSize {
				gang = Gang{ClusterSize: s.ClusterSize}
			}
			gang.Sessions++
		}
		if rec.start < 0 {
			continue
		}
		wait := (rec.start - submit).Seconds()
		byPrio[*s.Priority] = append(byPrio[*s.Priority], wait)
		classes[ci].Started++
		classWaits[ci] = append(classWaits[ci], wait)
		if s.ClusterSize == gang.ClusterSize && s.ClusterSize > 1 {
			gang.Started++
			gang.WorstWaitS = max(gang.WorstWaitS, wait)
		}
		if gpus > 0 && gpus == biggest.GPUs {
			biggest.Started++
			biggest.WorstWaitS = max(biggest.WorstWaitS, wait)
		}
		if rec.end >= 0 {
			run := rec.end - rec.start
			slow = append(slow, max(1, (rec.start-submit+run).Seconds()/max(run, SlowdownThreshold).Seconds()))
		}
	}
	for i := range classes {
		classes[i].Wait = percentiles(classWaits[i])
		classes[i].CDF = cdf(classWaits[i])
	}
	var all []float64
	for _, w := range classWaits {
		all = append(all, w...)
	}
	allClass := Class{Name: "all", Started: len(all), Wait: percentiles(all), CDF: cdf(all)}
	for _, c := range classes {
		allClass.Sessions += c.Sessions
	}
	v.Classes = append([]Class{allClass}, slices.DeleteFunc(classes, func(c Class) bool { return c.Sessions == 0 })...)
	if first >= 0 && last > 0 {
		v.MakespanS = round3((last - first).Seconds())
	}
	v.Slowdown = Slowdown{ThresholdS: SlowdownThreshold.Seconds(), Percentiles: percentiles(slow)}
	if gang.ClusterSize > 1 {
		gang.WorstWaitS = round3(gang.WorstWaitS)
		v.BiggestGang = &gang
	}
	if biggest.GPUs > 0 {
		biggest.WorstWaitS = round3(biggest.WorstWaitS)
		v.Biggest = &biggest
	}
	if len(byPrio) > 1 {
		prios := slices.Sorted(maps.Keys(byPrio))
		slices.Reverse(prios)
		for _, p := range prios {
			w := byPrio[p]
			v.Priorities = append(v.Priorities, Class{Name: fmt.Sprintf("priority %d", p), Sessions: len(w),
				Started: len(w), Wait: percentiles(w), CDF: cdf(w)})
		}
	}
	v.Utilisation, v.Fairness = r.timeSeries(capacity, end)
	v.Windows = r.windows(capacity, end)
	v.Fragmentation = r.fragmentation(cl, gpu, end)
	v.Sessions = r.sessionResults(v.Name, end)
	return v
}

func classOf(sizes []waitClass, gpus float64) int {
	for i, c := range sizes {
		if gpus <= c.max {
			return i
		}
	}
	return len(sizes) - 1
}

// timeSeries integrates the kernels' holdings over time: utilisation per
// interval, and the fairness indexes.
func (r *runner) timeSeries(capacity domain.Vec, end time.Duration) (Utilisation, Fairness) {
	if end <= 0 {
		end = time.Second
	}
	ts := r.newHoldSweep(capacity, end)
	for _, h := range r.tr.holds {
		ts.advance(h.at)
		s := r.w.Sessions[h.sess]
		u := ts.userIdx[s.User]
		req := r.tr.recs[h.sess].req
		for k := range ts.nslots {
			q := units(r.reg, domain.SlotID(k), req.At(domain.SlotID(k))) * float64(h.delta)
			ts.held[k] += q
			ts.userHeld[u][k] += q
		}
	}
	ts.advance(end)
	return ts.utilisation(), ts.fairness()
}

// holdSweep is timeSeries under way: the area each slot and each user has
// held per interval, swept in time order.
type holdSweep struct {
	r        *runner
	capacity domain.Vec
	samples  int
	width    time.Duration
	nslots   int
	area     [][]float64 // slot, interval
	held     []float64   // slot, now
	userIdx  map[string]int
	users    []string
	userHeld [][]float64 // user, slot, now
	userArea [][]float64 // user, slot, over the whole run
	// lives are when each user's sessions go live and end, in time
	// order; live counts each user's live sessions up to lives[li].
	lives []liveChange
	live  []int
	li    int
	// jainSum and jainN add up the fairness index of every sample.
	jainSum    float64
	jainN      int
	t          time.Duration
	nextSample time.Duration
}

// liveChange is a user's session going live (delta 1) or ending (-1).
type liveChange struct {
	at    time.Duration
	user  int
	delta int
}

func (r *runner) newHoldSweep(capacity domain.Vec, end time.Duration) *holdSweep {
	samples := r.opt.Samples
	if samples <= 0 {
		samples = 200
	}
	width := end / time.Duration(samples)
	if width <= 0 {
		width = 1
	}
	ts := &holdSweep{r: r, capacity: capacity, samples: samples, width: width, nslots: r.reg.Len(),
		userIdx:    map[string]int{},
		nextSample: width / 2, // the middle of each interval
	}
	ts.area = make([][]float64, ts.nslots)
	for i := range ts.area {
		ts.area[i] = make([]float64, samples+1)
	}
	ts.held = make([]float64, ts.nslots)
	for _, s := range r.w.Sessions {
		if _, ok := ts.userIdx[s.User]; !ok {
			ts.userIdx[s.User] = len(ts.users)
			ts.users = append(ts.users, s.User)
		}
	}
	ts.userHeld = make([][]float64, len(ts.users))
	ts.userArea = make([][]float64, len(ts.users))
	for i := range ts.users {
		ts.userHeld[i] = make([]float64, ts.nslots)
		ts.userArea[i] = make([]float64, ts.nslots)
	}
	// Live sessions per user, from submission to end, for OverTime.
	for i, rec := range r.tr.recs {
		if !rec.submitted || rec.rejected != "" {
			continue
		}
		u := ts.userIdx[r.w.Sessions[i].User]
		ts.lives = append(ts.lives, liveChange{at: seconds(r.w.Sessions[i].Submit), user: u, delta: 1})
		if rec.end >= 0 {
			ts.lives = append(ts.lives, liveChange{at: rec.end, user: u, delta: -1})
		}
	}
	slices.SortStableFunc(ts.lives, func(a, b liveChange) int { return cmpDur(a.at, b.at) })
	ts.live = make([]int, len(ts.users))
	return ts
}

// sample adds the fairness index among the users live at time at.
func (ts *holdSweep) sample(at time.Duration) {
	for ts.li < len(ts.lives) && ts.lives[ts.li].at <= at {
		ts.live[ts.lives[ts.li].user] += ts.lives[ts.li].delta
		ts.li++
	}
	var xs []float64
	for u := range ts.users {
		if ts.live[u] > 0 {
			xs = append(xs, dominant(ts.userHeld[u], ts.capacity, ts.r.reg))
		}
	}
	if j, ok := jain(xs); ok {
		ts.jainSum += j
		ts.jainN++
	}
}

// advance integrates what is held up to time to, sampling at the middle
// of each interval on the way.
func (ts *holdSweep) advance(to time.Duration) {
	for ts.t < to {
		if ts.nextSample <= to && ts.nextSample >= ts.t {
			ts.r.integrate(ts.area, ts.held, ts.userArea, ts.userHeld, ts.t, ts.nextSample, ts.width, ts.samples)
			ts.t = ts.nextSample
			ts.sample(ts.t)
			ts.nextSample += ts.width
			continue
		}
		ts.r.integrate(ts.area, ts.held, ts.userArea, ts.userHeld, ts.t, to, ts.width, ts.samples)
		ts.t = to
	}
}

// utilisation is each slot's share of its capacity held per interval.
func (ts *holdSweep) utilisation() Utilisation {
	reg, capacity, width := ts.r.reg, ts.capacity, ts.width
	var util Utilisation
	util.IntervalS = round3(width.Seconds())
	for k := range ts.nslots {
		c := units(reg, domain.SlotID(k), capacity.At(domain.SlotID(k)))
		if c <= 0 {
			continue
		}
		ser := SlotSeries{Slot: reg.Type(domain.SlotID(k)).Name, Capacity: reg.Format(domain.SlotID(k), capacity.At(domain.SlotID(k)))}
		total := 0.0
		for b := range ts.samples {
			x := ts.area[k][b] / (width.Seconds() * c)
			ser.Series = append(ser.Series, round4(x))
			total += ts.area[k][b]
		}
		ser.Mean = round4(total / (float64(ts.samples) * width.Seconds() * c))
		util.Slots = append(util.Slots, ser)
	}
	return util
}

// fairness is Jain's index over the users' dominant shares of the whole
// run, and its mean over the samples.
func (ts *holdSweep) fairness() Fairness {
	reg, capacity := ts.r.reg, ts.capacity
	var xs []float64
	span := float64(ts.samples) * ts.width.Seconds()
	for u := range ts.users {
		d := 0.0
		for k := range ts.nslots {
			if c := units(reg, domain.SlotID(k), capacity.At(domain.SlotID(k))); c > 0 {
				d = max(d, ts.userArea[u][k]/(c*span))
			}
		}
		xs = append(xs, d)
	}
	f := Fairness{Users: len(ts.users)}
	if j, ok := jain(xs); ok {
		f.Overall = round4(j)
	}
	if ts.jainN > 0 {
		f.OverTime = round4(ts.jainSum / float64(ts.jainN))
	}
	return f
}

// integrate adds holdings × time over [from, to) to the interval areas.
func (r *runner) integrate(area [][]float64, held []float64, userArea, userHeld [][]float64, from, to, width time.Duration, samples int) {
	if to <= from {
		return
	}
	for from < to {
		b := int(from / width)
		segEnd := min(to, time.Duration(b+1)*width)
		if b >= samples {
			b, segEnd = samples, to // past the last interval: kept out of the series
		}
		d := (segEnd - from).Seconds()
		for k, h := range held {
			if h != 0 {
				area[k][b] += h * d
			}
		}
		for u := range userHeld {
			for k, h := range userHeld[u] {
				if h != 0 {
					userArea[u][k] += h * d
				}
			}
		}
		from = segEnd
	}
}

func dominant(held []float64, capacity domain.Vec, reg *domain.Registry) float64 {
	d := 0.0
	for k, h := range held {
		if c := units(reg, domain.SlotID(k), capacity.At(domain.SlotID(k))); c > 0 {
			d = max(d, h/c)
		}
	}
	return d
}

// jain is Jain's fairness index; false when it is undefined (nobody holds
// anything).
func jain(xs []float64) (float64, bool) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return 0, false
	}
	return sum * sum / (float64(len(xs)) * sq), true
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Percentiles{Mean: round3(sum / float64(len(s))), P50: round3(quantile(s, 0.5)), P95: round3(quantile(s, 0.95)),
		P99: round3(quantile(s, 0.99)), Max: round3(s[len(s)-1])}
}

// quantile is the nearest-rank quantile of sorted s.
func quantile(s []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func cdf(xs []float64) [][2]float64 {
	out := [][2]float64{}
	if len(xs) == 0 {
		return out
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	for i := 0; i <= 100; i++ {
		p := float64(i) / 100
		out = append(out, [2]float64{round3(quantile(s, max(p, 1/float64(len(s))))), p})
	}
	return out
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

func variantName(settings []Setting) string {
	if len(settings) == 0 {
		return "defaults"
	}
	parts := make([]string, len(settings))
	for i, s := range settings {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// WriteJSON writes the report, indented; the same report gives the same
// bytes.
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable prints the variants side by side.
func (rep Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tutil\tfrag\twait p50\tp95\tp99\tmax\tjain\tjain(t)\tbsld mean\tgang worst\tmakespan\tended\trejected\tunfinished\tpreempted\twork lost\t")
	for _, v := range rep.Variants {
		util := "-"
		for _, s := range v.Utilisation.Slots {
			if strings.HasPrefix(s.Slot, "cuda.") {
				util = fmt.Sprintf("%.1f%%", 100*s.Mean)
			}
		}
		if util == "-" && len(v.Utilisation.Slots) > 0 {
			util = fmt.Sprintf("%.1f%% %s", 100*v.Utilisation.Slots[0].Mean, v.Utilisation.Slots[0].Slot)
		}
		frag := "-"
		if f := v.Fragmentation; f != nil && f.Instants > 0 {
			frag = fmt.Sprintf("%.1f%%", 100*f.Mean)
		}
		all := v.Classes[0].Wait
		gang := "-"
		if v.BiggestGang != nil {
			gang = fmtSeconds(v.BiggestGang.WorstWaitS)
		}
		ended := 0
		for k, n := range v.Status {
			if k != "UNFINISHED" && k != "NOT_SUBMITTED" && k != "REJECTED" {
				ended += n
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.2f\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", v.Name, util, frag,
			fmtSeconds(all.P50), fmtSeconds(all.P95), fmtSeconds(all.P99), fmtSeconds(all.Max),
			v.Fairness.Overall, v.Fairness.OverTime, v.Slowdown.Mean, gang, fmtSeconds(v.MakespanS),
			ended, v.Status["REJECTED"], v.Status["UNFINISHED"]+v.Status["NOT_SUBMITTED"], v.Preempted, fmtSeconds(v.WorkLostS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range rep.Variants {
		if v.Partial != "" {
			fmt.Fprintf(w, "PARTIAL %s: %s\n", v.Name, v.Partial)
		}
		if n := v.Status["REJECTED"]; n > 0 {
			fmt.Fprintf(w, "REJECTED %s: %d session(s) refused at submit, the first because: %s\n", v.Name, n, v.Rejected)
		}
	}
	return rep.writeWindows(w)
}

// writeWindows prints each variant's windows: every user's share of the
// window's slot-hours and of all of them so far, Jain and utilisation.
func (rep Report) writeWindows(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	any := false
	for _, v := range rep.Variants {
		for _, win := range v.Windows {
			if !any {
				fmt.Fprintln(tw, "variant\twindow\tslot-hours share (user=share/cumulative)\tjain\tutil\t")
				any = true
			}
			var parts []string
			for _, u := range slices.Sorted(maps.Keys(win.Cumulative)) {
				parts = append(parts, fmt.Sprintf("%s=%.2f/%.2f", u, win.Share[u], win.Cumulative[u]))
			}
			fmt.Fprintf(tw, "%s\t%s–%s\t%s\t%.3f\t%.1f%%\t\n", v.Name, fmtSeconds(win.FromS), fmtSeconds(win.ToS),
				strings.Join(parts, " "), win.Jain, 100*win.Util)
		}
	}
	return tw.Flush()
}

// fmtSeconds prints a span of seconds compactly: 0.5s, 42s, 3.2m, 5.1h, 2.3d.
func fmtSeconds(s float64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%.3gs", s)
	case s < 3600:
		return fmt.Sprintf("%.1fm", s/60)
	case s < 86400:
		return fmt.Sprintf("%.1fh", s/3600)
	}
	return fmt.Sprintf("%.1fd", s/86400)
}

// NewReport puts variants run on w and cl together with the inputs' shape.
func NewReport(source string, w Workload, cl Cluster, variants []Variant) Report {
	reg := domain.DefaultRegistry()
	capacity := map[string]string{}
	c := cl.capacity(reg)
	for k := range reg.Len() {
		if q := c.At(domain.SlotID(k)); q > 0 {
			capacity[reg.Type(domain.SlotID(k)).Name] = reg.Format(domain.SlotID(k), q)
		}
	}
	span := 0.0
	if n := len(w.Sessions); n > 0 {
		span = w.Sessions[n-1].Submit - w.Sessions[0].Submit
	}
	return Report{Workload: WorkloadSummary{Source: source, Sessions: len(w.Sessions), SpanS: round3(span)},
		Cluster: ClusterSummary{Agents: cl.Agents(), Capacity: capacity}, Variants: variants}
}
