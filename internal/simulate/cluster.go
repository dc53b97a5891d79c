package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler"
)

// GroupName is the one resource group a simulation runs.
const GroupName = "default"

// Pool is a number of identical agents.
type Pool struct {
	Count     int               `json:"count"`
	Resources map[string]string `json:"resources"`
	// MaxKernels caps the kernels per agent; 0 means no cap.
	MaxKernels int `json:"max_kernels,omitempty"`
}

// Cluster is the agents of a simulation.
type Cluster struct {
	Pools []Pool `json:"pools"`
}

// ParseCluster reads "agents=1000,cpu=64,mem=256g,cuda.shares=8" (one pool;
// max_kernels=N caps kernels per agent), or JSON — inline when it starts
// with '{', else the name of a file — as {"pools": [{"count": …,
// "resources": {…}, "max_kernels": …}]}.
func ParseCluster(spec string, reg *domain.Registry) (Cluster, error) {
	var cl Cluster
	spec = strings.TrimSpace(spec)
	switch {
	case strings.HasPrefix(spec, "{"), !strings.Contains(spec, "="):
		data := []byte(spec)
		if !strings.HasPrefix(spec, "{") {
			var err error
			if data, err = os.ReadFile(spec); err != nil {
				return cl, fmt.Errorf("cluster: %w", err)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cl); err != nil {
			return cl, fmt.Errorf("cluster: %w", err)
		}
	default:
		p := Pool{Resources: map[string]string{}}
		for _, kv := range splitList(spec) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return cl, fmt.Errorf("cluster: %q is not key=value", kv)
			}
			switch k {
			case "agents", "max_kernels":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return cl, fmt.Errorf("cluster: %s: %q is not a whole number", k, v)
				}
				if k == "agents" {
					p.Count = n
				} else {
					p.MaxKernels = n
				}
			default:
				p.Resources[k] = v
			}
		}
		cl.Pools = []Pool{p}
	}
	return cl, cl.validate(reg)
}

func (cl Cluster) validate(reg *domain.Registry) error {
	if len(cl.Pools) == 0 {
		return fmt.Errorf("cluster: no agents")
	}
	for i, p := range cl.Pools {
		if p.Count < 1 {
			return fmt.Errorf("cluster: pool %d: count must be at least 1", i+1)
		}
		if p.MaxKernels < 0 {
			return fmt.Errorf("cluster: pool %d: max_kernels must not be negative", i+1)
		}
		if _, err := reg.ParseSlots(p.Resources); err != nil {
			return fmt.Errorf("cluster: pool %d: %w", i+1, err)
		}
	}
	return nil
}

// Agents counts the agents.
func (cl Cluster) Agents() int {
	n := 0
	for _, p := range cl.Pools {
		n += p.Count
	}
	return n
}

// agentID names the cluster's nth agent (from 1), in pool order.
func agentID(n int) domain.AgentID { return domain.AgentID(fmt.Sprintf("agent-%05d", n)) }

// capacity sums every agent's slots.
func (cl Cluster) capacity(reg *domain.Registry) domain.Vec {
	out := reg.NewVec()
	for _, p := range cl.Pools {
		v, _ := reg.ParseSlots(p.Resources) // validated
		out.Add(v.Scale(p.Count))
	}
	return out
}

// gpuSlot is the accelerator slot the cluster has: cuda.shares, else
// cuda.device, else cuda.shares (a CPU cluster).
func (cl Cluster) gpuSlot(reg *domain.Registry) domain.SlotID {
	shares, _ := reg.Lookup("cuda.shares")
	if dev, ok := reg.Lookup("cuda.device"); ok {
		c := cl.capacity(reg)
		if c.At(shares) == 0 && c.At(dev) > 0 {
			return dev
		}
	}
	return shares
}

func (cl Cluster) total(reg *domain.Registry, slot domain.SlotID) float64 {
	return units(reg, slot, cl.capacity(reg).At(slot))
}

func (cl Cluster) maxPerAgent(reg *domain.Registry, slot domain.SlotID) float64 {
	m := 0.0
	for _, p := range cl.Pools {
		v, _ := reg.ParseSlots(p.Resources)
		m = max(m, units(reg, slot, v.At(slot)))
	}
	return m
}

// units reads a quantity in the unit people write: whole CPUs and GPUs,
// bytes.
func units(reg *domain.Registry, slot domain.SlotID, q domain.Quantity) float64 {
	if reg.Type(slot).Kind == domain.KindBytes {
		return float64(q)
	}
	return float64(q) / 1000
}

// Setting is one --set key=value.
type Setting struct {
	Key, Value string
}

func (s Setting) String() string { return s.Key + "=" + s.Value }

// ParseSetting reads key=value.
func ParseSetting(s string) (Setting, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return Setting{}, fmt.Errorf("set: %q is not key=value", s)
	}
	return Setting{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}, nil
}

// setup is the group and policies a variant runs with.
type setup struct {
	group    domain.ResourceGroup
	policies []domain.Policy
}

// baseGroup is a new group as `sokovan rg set` makes it.
func baseGroup() domain.ResourceGroup {
	return domain.ResourceGroup{Name: GroupName, State: domain.GroupActive, Sequencer: "fifo", Selector: "concentrated",
		HeadOfLine: domain.DefaultHeadOfLine, ReservationDepth: domain.DefaultReservationDepth, MaxRetries: 3,
		Timeouts: domain.DefaultTimeouts()}
}

// newSetup applies settings over the defaults. Policy settings
// (user.*, project.*) give every user or project of the workload the same
// policy, which is how a site sets a uniform quota.
func newSetup(settings []Setting, w Workload, reg *domain.Registry) (setup, error) {
	g := baseGroup()
	scopes := map[domain.PolicyScope]*domain.Policy{}
	for _, s := range settings {
		scope, rest, _ := strings.Cut(s.Key, ".")
		var err error
		switch scope {
		case "group":
			err = setGroup(&g, rest, s.Value, reg)
		case string(domain.ScopeUser), string(domain.ScopeProject), string(domain.ScopeDomain):
			ps := domain.PolicyScope(scope)
			if scopes[ps] == nil {
				scopes[ps] = &domain.Policy{Scope: ps, MaxSlots: domain.Unlimited(reg.Len())}
			}
			err = setPolicy(scopes[ps], rest, s.Value, reg)
		default:
			err = fmt.Errorf("unknown key (want group.*, user.*, project.* or domain.*)")
		}
		if err != nil {
			return setup{}, fmt.Errorf("set %s: %w", s, err)
		}
	}
	if err := scheduler.NewRegistry().CheckGroup(g); err != nil {
		return setup{}, fmt.Errorf("set: %w", err)
	}
	if field, err := g.Preemption.Validate(); err != nil {
		return setup{}, fmt.Errorf("set: %s: %w", field, err)
	}
	out := setup{group: g}
	names := map[domain.PolicyScope][]string{domain.ScopeDomain: {"default"}}
	for _, s := range w.Sessions {
		names[domain.ScopeUser] = append(names[domain.ScopeUser], s.User)
		names[domain.ScopeProject] = append(names[domain.ScopeProject], s.Project)
	}
	for _, scope := range []domain.PolicyScope{domain.ScopeUser, domain.ScopeProject, domain.ScopeDomain} {
		p := scopes[scope]
		if p == nil {
			continue
		}
		ns := names[scope]
		slices.Sort(ns)
		for _, n := range slices.Compact(ns) {
			q := *p
			q.Name = n
			q.MaxSlots = p.MaxSlots.Clone()
			out.policies = append(out.policies, q)
		}
	}
	return out, nil
}

func setGroup(g *domain.ResourceGroup, key, v string, reg *domain.Registry) error {
	if strings.HasPrefix(key, "fair_share") {
		return setFairShare(&g.FairShare, key, v)
	}
	switch {
	case key == "sequencer":
		g.Sequencer = v
	case key == "selector":
		g.Selector = v
	case key == "head_of_line":
		h, err := domain.ParseHeadOfLine(v)
		if err != nil {
			return err
		}
		g.HeadOfLine = h
	case key == "reservation_depth":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return fmt.Errorf("%q is not a whole number from 0 to 100", v)
		}
		g.ReservationDepth = n
	case key == "preemption":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		g.Preemption.Enabled = b
	case key == "preempt_budget":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number", v)
		}
		g.Preemption.Budget = n
	case key == "preempt_min_runtime", key == "preempt_window":
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration", v)
		}
		if key == "preempt_window" {
			g.Preemption.Window = d
		} else {
			g.Preemption.MinRuntime = d
		}
	case key == "max_retries":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number", v)
		}
		g.MaxRetries = n
	case key == "allowed_types":
		// '|' separates, since ',' separates --compare's variants.
		g.AllowedTypes = nil
		for _, t := range strings.Split(v, "|") {
			st, err := domain.ParseSessionType(strings.TrimSpace(t))
			if err != nil {
				return err
			}
			g.AllowedTypes = append(g.AllowedTypes, st)
		}
	case strings.HasPrefix(key, "timeout."):
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration", v)
		}
		phase := strings.TrimPrefix(key, "timeout.")
		ptr := map[string]*time.Duration{"pending": &g.Timeouts.Pending, "scheduled": &g.Timeouts.Scheduled,
			"preparing": &g.Timeouts.Preparing, "prepared": &g.Timeouts.Prepared, "creating": &g.Timeouts.Creating,
			"terminating": &g.Timeouts.Terminating}[phase]
		if ptr == nil {
			return fmt.Errorf("unknown phase %q", phase)
		}
		*ptr = d
	case strings.HasPrefix(key, "default."), strings.HasPrefix(key, "min."):
		which, slot, _ := strings.Cut(key, ".")
		id, q, err := reg.Parse(slot, v)
		if err != nil {
			return err
		}
		vec := &g.DefaultSlots
		if which == "min" {
			vec = &g.MinSlots
		}
		if *vec == nil {
			*vec = reg.NewVec()
		}
		(*vec)[id] = q
	default:
		return fmt.Errorf("unknown group setting %q (sequencer, selector, head_of_line, max_retries, allowed_types, "+
			"timeout.PHASE, default.SLOT, min.SLOT, preemption, preempt_min_runtime, preempt_budget, preempt_window)", key)
	}
	return nil
}

func setPolicy(p *domain.Policy, key, v string, reg *domain.Registry) error {
	switch {
	case key == "max_concurrent_sessions", key == "max_pending_sessions":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number", v)
		}
		if key == "max_concurrent_sessions" {
			p.MaxConcurrentSessions = n
		} else {
			p.MaxPendingSessions = n
		}
	case strings.HasPrefix(key, "max_slots."):
		id, q, err := reg.Parse(strings.TrimPrefix(key, "max_slots."), v)
		if err != nil {
			return err
		}
		p.MaxSlots[id] = q
	default:
		return fmt.Errorf("unknown policy setting %q (max_slots.SLOT, max_concurrent_sessions, max_pending_sessions)", key)
	}
	return nil
}

// setFairShare reads group.fair_share_half_life=D and
// group.fair_share.user:NAME=N / group.fair_share.project:NAME=N.
func setFairShare(f *domain.FairShare, key, v string) error {
	next := domain.FairShare{HalfLife: f.HalfLife, Shares: maps.Clone(f.Shares)}
	switch {
	case key == "fair_share_half_life":
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration", v)
		}
		next.HalfLife = d
	case strings.HasPrefix(key, "fair_share."):
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if next.Shares == nil {
			next.Shares = map[string]float64{}
		}
		next.Shares[strings.TrimPrefix(key, "fair_share.")] = n
	default:
		return fmt.Errorf("unknown setting group.%s (fair_share_half_life, fair_share.user:NAME, fair_share.project:NAME)", key)
	}
	if _, err := next.Validate(); err != nil {
		return err
	}
	*f = next
	return nil
}
