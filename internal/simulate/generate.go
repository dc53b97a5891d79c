package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// GenSpec shapes a generated workload. docs/SIMULATION.md says where each
// default comes from; every one is an approximation chosen here, informed
// by published GPU cluster traces, not a figure copied from them.
type GenSpec struct {
	Sessions int
	Users    int
	Projects int
	Seed     uint64
	// Load is the offered GPU load as a fraction of the cluster's GPUs
	// (mean GPU-seconds asked per second over GPU capacity); Rate, when
	// set, is the mean arrivals per hour instead.
	Load float64
	Rate float64
	// Diurnal is the amplitude of the daily cycle of arrivals, 0 to 1:
	// the rate swings between (1-Diurnal) and (1+Diurnal) times the mean,
	// peaking at 15:00 virtual time.
	Diurnal float64
	// Median and Sigma shape the lognormal run time of a one-GPU
	// session (seconds); larger sessions run longer (see sizeMix).
	Median float64
	Sigma  float64
	// MinRun and MaxRun clamp every run time.
	MinRun, MaxRun float64
	// Failures is the share of sessions that exit non-zero.
	Failures float64
	// Deps is the share of batch sessions that depend on their user's
	// previous batch session, as the steps of a pipeline do.
	Deps float64
	// InteractiveLimit is the time limit of interactive sessions (0: none).
	InteractiveLimit float64
	// LimitMin and LimitMax, when LimitMax is above zero, give every batch
	// and interactive session a time limit of its run time times a factor
	// drawn uniformly between them, as users who overestimate their jobs
	// by 1.2 to 3 times do; it replaces InteractiveLimit.
	LimitMin, LimitMax float64
	// Interactive and Inference are the shares of those session types;
	// the rest are batch.
	Interactive, Inference float64
	// Mix, when set, replaces the size mix: a workload built to show one
	// effect, such as a few big gangs among many one-GPU sessions.
	Mix []sizeClass
}

// DefaultGenSpec is what --generate starts from.
func DefaultGenSpec() GenSpec {
	return GenSpec{Sessions: 1000, Users: 50, Projects: 10, Seed: 1, Load: 0.8, Diurnal: 0.5,
		Median: 900, Sigma: 1.8, MinRun: 30, MaxRun: 7 * 24 * 3600, Failures: 0.1, Deps: 0.02,
		InteractiveLimit: 8 * 3600, Interactive: 0.2, Inference: 0.1}
}

// ParseGenSpec reads "sessions=100000,users=50,seed=1,…" over the defaults.
func ParseGenSpec(s string) (GenSpec, error) {
	g := DefaultGenSpec()
	ints := map[string]*int{"sessions": &g.Sessions, "users": &g.Users, "projects": &g.Projects}
	floats := map[string]*float64{"load": &g.Load, "rate": &g.Rate, "diurnal": &g.Diurnal, "median": &g.Median,
		"sigma": &g.Sigma, "min_run": &g.MinRun, "max_run": &g.MaxRun, "failures": &g.Failures, "deps": &g.Deps,
		"interactive_limit": &g.InteractiveLimit, "limit_min": &g.LimitMin, "limit_max": &g.LimitMax,
		"interactive": &g.Interactive, "inference": &g.Inference}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return g, fmt.Errorf("generate: %q is not key=value", kv)
		}
		switch {
		case k == "mix":
			mix, err := parseMix(v)
			if err != nil {
				return g, err
			}
			g.Mix = mix
		case k == "seed":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return g, fmt.Errorf("generate: seed: %q is not a whole number", v)
			}
			g.Seed = n
		case ints[k] != nil:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return g, fmt.Errorf("generate: %s: %q is not a whole number above zero", k, v)
			}
			*ints[k] = n
		case floats[k] != nil:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 0) || math.IsInf(f, 0) {
				return g, fmt.Errorf("generate: %s: %q is not a non-negative number", k, v)
			}
			*floats[k] = f
		default:
			return g, fmt.Errorf("generate: unknown key %q (known: sessions, users, projects, seed, load, rate, diurnal, "+
				"median, sigma, min_run, max_run, failures, deps, interactive_limit, limit_min, limit_max, interactive, inference, mix)", k)
		}
	}
	switch {
	case g.Diurnal > 1:
		return g, fmt.Errorf("generate: diurnal must be 0 to 1, not %v", g.Diurnal)
	case g.Interactive+g.Inference > 1:
		return g, fmt.Errorf("generate: interactive and inference are shares of sessions and add up to more than 1")
	case g.Failures > 1 || g.Deps > 1:
		return g, fmt.Errorf("generate: failures and deps are shares, 0 to 1")
	case g.MaxRun < g.MinRun:
		return g, fmt.Errorf("generate: max_run %v is below min_run %v", g.MaxRun, g.MinRun)
	case g.Load == 0 && g.Rate == 0:
		return g, fmt.Errorf("generate: load or rate must be above zero")
	case g.LimitMax > 0 && (g.LimitMin < 1 || g.LimitMin > g.LimitMax):
		return g, fmt.Errorf("generate: limit_min must be 1 to limit_max (%v), not %v: a session must not be stopped before its run ends",
			g.LimitMax, g.LimitMin)
	}
	return g, nil
}

// sizeClass is one entry of the size mix: how many GPUs a session asks for
// in all, its share of sessions, and how much longer than a one-GPU
// session its median run is.
type sizeClass struct {
	gpus   float64 // 0: CPU only
	share  float64
	length float64
}

// sizeMix is the approximation docs/SIMULATION.md explains: most sessions
// use one GPU or less (Philly, Helios; PAI's GPU sharing gives the half
// GPU), few use eight or more, and those run longer.
var sizeMix = []sizeClass{
	{gpus: 0, share: 0.10, length: 0.5},
	{gpus: 0.5, share: 0.15, length: 1},
	{gpus: 1, share: 0.45, length: 1},
	{gpus: 2, share: 0.10, length: 1.5},
	{gpus: 4, share: 0.08, length: 2},
	{gpus: 8, share: 0.07, length: 3},
	{gpus: 16, share: 0.03, length: 4},
	{gpus: 32, share: 0.015, length: 4},
	{gpus: 64, share: 0.005, length: 4},
}

// Generate draws a workload for a cluster. The same spec and cluster give
// the same workload.
func Generate(g GenSpec, cl Cluster, reg *domain.Registry) (Workload, error) {
	rng := rand.New(rand.NewPCG(g.Seed, 0x67656e6572617465))
	mix := sizeMix
	if g.Mix != nil {
		mix = g.Mix
	}
	gpuSlot := cl.gpuSlot(reg)
	perAgent := cl.maxPerAgent(reg, gpuSlot)
	rate := g.Rate / 3600
	if rate == 0 {
		// Mean GPU-seconds per session: the lognormal's mean is
		// median·exp(σ²/2) (before clamping, which the load ignores).
		mean := 0.0
		for _, c := range mix {
			gpus := c.gpus
			if gpus == 0 {
				gpus = 0.1 // a CPU session weighs something, not nothing
			}
			mean += c.share * gpus * g.Median * c.length * math.Exp(g.Sigma*g.Sigma/2)
		}
		capacity := cl.total(reg, gpuSlot)
		if capacity <= 0 {
			return Workload{}, fmt.Errorf("generate: the cluster has no %s to load; give rate= instead", reg.Type(gpuSlot).Name)
		}
		rate = g.Load * capacity / mean
	}
	weights := make([]float64, g.Users)
	totalW := 0.0
	for i := range weights {
		// A few users submit most sessions, as in every trace above.
		weights[i] = 1 / math.Pow(float64(i+1), 0.8)
		totalW += weights[i]
	}
	lastBatch := make([]string, g.Users)
	peak := rate * (1 + g.Diurnal)
	t := 0.0
	out := make([]Session, 0, g.Sessions)
	for len(out) < g.Sessions {
		// Thinning (Lewis and Shedler): candidates at the peak rate, each
		// kept with the current rate's share of it.
		t += rng.ExpFloat64() / peak
		day := 2 * math.Pi * (t/86400 - 0.375) // peak at 15:00
		if rng.Float64()*peak > rate*(1+g.Diurnal*math.Sin(day)) {
			continue
		}
		user := pick(rng, weights, totalW)
		class := mix[pickClass(rng, mix)]
		s := Session{ID: fmt.Sprintf("s%06d", len(out)+1), Submit: math.Round(t*1000) / 1000,
			User: fmt.Sprintf("u%03d", user+1), Project: fmt.Sprintf("p%02d", user%g.Projects+1), Type: "batch"}
		switch x := rng.Float64(); {
		case x < g.Interactive:
			s.Type = "interactive"
			if g.InteractiveLimit > 0 {
				s.TimeLimit = g.InteractiveLimit
			}
		case x < g.Interactive+g.Inference:
			s.Type = "inference"
		}
		run := g.Median * class.length * math.Exp(g.Sigma*rng.NormFloat64())
		s.Duration = math.Round(min(max(run, g.MinRun), g.MaxRun)*1000) / 1000
		if rng.Float64() < g.Failures {
			s.ExitCode = 1
		}
		s.Resources, s.ClusterSize = shape(class.gpus, perAgent, reg.Type(gpuSlot).Name)
		// Drawn only when asked for, so workloads without limits stay as
		// they were for every seed.
		if g.LimitMax > 0 && s.Type != "inference" {
			f := g.LimitMin + (g.LimitMax-g.LimitMin)*rng.Float64()
			s.TimeLimit = math.Ceil(s.Duration * f)
		}
		if s.Type == "batch" {
			if prev := lastBatch[user]; prev != "" && rng.Float64() < g.Deps {
				s.DependsOn = []string{prev}
			}
			lastBatch[user] = s.ID
		}
		out = append(out, s)
	}
	return NewWorkload(out, reg)
}

// shape splits a GPU count into kernels of at most perAgent GPUs each, with
// four CPUs and 16 GiB per GPU (one CPU and 4 GiB at least).
func shape(gpus, perAgent float64, gpuName string) (map[string]string, int) {
	if gpus == 0 {
		return map[string]string{"cpu": "2", "mem": "8g"}, 1
	}
	size := 1
	if perAgent > 0 && gpus > perAgent {
		size = int(math.Ceil(gpus / perAgent))
	}
	per := gpus / float64(size)
	cpu := max(1, 4*per)
	return map[string]string{
		gpuName: strconv.FormatFloat(per, 'f', -1, 64),
		"cpu":   strconv.FormatFloat(cpu, 'f', -1, 64),
		"mem":   strconv.FormatFloat(max(4, 16*per), 'f', -1, 64) + "g",
	}, size
}

func pick(rng *rand.Rand, w []float64, total float64) int {
	x := rng.Float64() * total
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}

func pickClass(rng *rand.Rand, mix []sizeClass) int {
	x := rng.Float64()
	for i, c := range mix {
		if x < c.share {
			return i
		}
		x -= c.share
	}
	return len(mix) - 1
}

// parseMix reads "GPUS:SHARE[:LENGTH]|…" ('|' separates, as ',' separates
// the generator's keys): the shares are normalised to add up to 1, and
// LENGTH, the median run time relative to a one-GPU session, defaults
// to 1.
func parseMix(v string) ([]sizeClass, error) {
	var out []sizeClass
	total := 0.0
	for _, part := range strings.Split(v, "|") {
		fields := strings.Split(strings.TrimSpace(part), ":")
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("generate: mix: %q is not GPUS:SHARE[:LENGTH]", part)
		}
		var nums [3]float64
		nums[2] = 1
		for i, f := range fields {
			n, err := strconv.ParseFloat(f, 64)
			if err != nil || !(n >= 0) || math.IsInf(n, 0) {
				return nil, fmt.Errorf("generate: mix: %q in %q is not a non-negative number", f, part)
			}
			nums[i] = n
		}
		if nums[2] == 0 {
			return nil, fmt.Errorf("generate: mix: %q has a zero length", part)
		}
		out = append(out, sizeClass{gpus: nums[0], share: nums[1], length: nums[2]})
		total += nums[1]
	}
	if total <= 0 {
		return nil, fmt.Errorf("generate: mix: the shares add up to zero")
	}
	for i := range out {
		out[i].share /= total
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
