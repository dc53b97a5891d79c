package admit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// ParseSlots reads a slot name → quantity map given at field. A slot not
// named is zero, or with unlimited, unlimited: a policy's max_slots reads
// this way. The API reads groups' and policies' slots with it too, so a
// quantity is refused in one wording wherever it is written.
func ParseSlots(reg *domain.Registry, field string, m map[string]string, unlimited bool) (domain.Vec, *Error) {
	v := reg.NewVec()
	if unlimited {
		v = domain.Unlimited(reg.Len())
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		f := field + "." + name
		id, ok := reg.Lookup(name)
		if !ok {
			var known []string
			for _, t := range reg.Types() {
				known = append(known, t.Name)
			}
			return nil, invalid(f, "unknown slot type %q (known: %s)", name, strings.Join(known, ", "))
		}
		q, err := domain.ParseQuantity(reg.Type(id).Kind, m[name])
		if err != nil {
			return nil, invalid(f, "%v", err)
		}
		v[id] = q
	}
	return v, nil
}

// CleanText refuses text that a person did not type: control characters
// (NUL among them, which PostgreSQL cannot store) and over-long values.
// The API holds the other names it takes (deployments, jobs) to it too.
func CleanText(field, s string, maxLen int) *Error {
	if len(s) > maxLen {
		return invalid(field, "is longer than %d bytes", maxLen)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "is not valid UTF-8")
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return invalid(field, "holds a control character")
		}
	}
	return nil
}

// ValidID reports whether s can be an identifier at all; one that cannot
// is refused as missing without asking the store.
func ValidID(s string) bool {
	if s == "" || len(s) > 128 || !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if unicode.IsControl(c) || unicode.IsSpace(c) {
			return false
		}
	}
	return true
}

func checkCommand(cmd []string) *Error {
	if len(cmd) > maxCommandArgs {
		return invalid("command", "has more than %d arguments", maxCommandArgs)
	}
	total := 0
	for i, a := range cmd {
		total += len(a)
		if strings.ContainsRune(a, 0) {
			return invalid(fmt.Sprintf("command[%d]", i), "holds a NUL byte")
		}
	}
	if total > maxCommandLen {
		return invalid("command", "is longer than %d bytes", maxCommandLen)
	}
	return nil
}

func checkEnv(env map[string]string) *Error {
	if len(env) > maxEnvVars {
		return invalid("env", "has more than %d variables", maxEnvVars)
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if err := domain.CheckUserEnvName(k); err != nil {
			return invalid("env."+k, "%v", err)
		}
		if v := env[k]; len(v) > maxEnvValueLen || strings.ContainsRune(v, 0) {
			return invalid("env."+k, "must be at most %d bytes without NUL", maxEnvValueLen)
		}
		total += len(k) + len(env[k]) + 2
	}
	if total > maxEnvTotal {
		return invalid("env", "is %d bytes in all, more than %d", total, maxEnvTotal)
	}
	return nil
}

// checkImage refuses an image that no agent of the group could ever run:
// every agent there runs only the images of its catalog (the process
// runtime), and none has this one. An agent that pulls from registries
// (docker) may run any image, and a group without agents may yet get one
// that can, so neither is refused: only a certain failure is.
func checkImage(agents []domain.Agent, group, image string) *Error {
	if len(agents) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, a := range agents {
		if a.MayRun(image) {
			return nil
		}
		for _, c := range a.Catalog {
			known[c] = true
		}
	}
	names := make([]string, 0, len(known))
	for c := range known {
		names = append(names, strings.ReplaceAll(c, "*", "…"))
	}
	slices.Sort(names)
	return invalid("image", "no agent of resource group %s can run image %q: its agents run only the images they "+
		"know (%s)", group, image, strings.Join(names, ", "))
}

// fitsGroup refuses what the group's agents could never run, however long
// it waited: a fraction of a whole device, a kernel larger than every
// agent, a cluster no agent (or no set of agents) could hold at once.
func fitsGroup(reg *domain.Registry, agents []domain.Agent, group string, sess domain.Session) *Error {
	if e := wholeDevices(reg, agents, group, sess.Requested); e != nil {
		return e
	}
	shapes := shapesOf(reg, agents)
	if e := fitsSomeAgent(reg, shapes, group, sess.Requested); e != nil {
		return e
	}
	return clusterFits(shapes, group, sess.Requested, sess.ClusterSize, sess.ClusterMode)
}

// wholeDevices refuses a fraction of a slot that an agent of the group
// hands out as whole devices: a kernel cannot be given half of one, and
// placement would round it up to a whole device the quota never charged.
// Fractions are what cuda.shares is for.
func wholeDevices(reg *domain.Registry, agents []domain.Agent, group string, req domain.Vec) *Error {
	for _, a := range agents {
		for _, d := range a.Devices {
			id, ok := reg.Lookup(d.Slot)
			if !ok || reg.Type(id).Kind == domain.KindShares {
				continue
			}
			if q := req.At(id); q%domain.WholeShare != 0 {
				return invalid("resources."+d.Slot, "must be a whole number: resource group %s hands out %s as whole devices, "+
					"not %s (ask for cuda.shares to share a device)", group, d.Slot, reg.Format(id, q))
			}
		}
	}
	return nil
}

// fitsSomeAgent refuses a request when no agent of the group could ever
// hold one kernel of it, however long it waited: the scheduler would
// keep it PENDING behind "waiting for a larger agent" for ever. Capacity
// is the scheduler's: an agent's total, and for a slot it hands out as
// devices, one whole unit per device. TERMINATED agents never come back,
// so they count for nothing; a group with no other agents may yet get a
// large enough one, so it accepts the request to wait.
func fitsSomeAgent(reg *domain.Registry, live []shape, group string, req domain.Vec) *Error {
	if len(live) == 0 {
		return nil
	}
	// Slot by slot first, so the refusal names the slot and the largest
	// agent's amount of it.
	for i := range req {
		id := domain.SlotID(i)
		q := req.At(id)
		if q == 0 {
			continue
		}
		var largest domain.Quantity
		for _, c := range live {
			largest = max(largest, c.capacity.At(id))
		}
		if q > largest {
			return invalid("resources."+reg.Type(id).Name, "requests %s per kernel, more than any agent of resource group %s "+
				"has (largest: %s): no agent could ever hold one kernel; ask for less", reg.Format(id, q), group,
				reg.Format(id, largest))
		}
	}
	// Each slot fits somewhere, but one kernel needs them on one agent.
	for _, c := range live {
		if holds(c.capacity, req) {
			return nil
		}
	}
	return invalid("resources", "no agent of resource group %s has all of this per kernel, though each slot fits "+
		"on some agent: no agent could ever hold one kernel; ask for less", group)
}

// clusterFits refuses a session of several kernels that the group's
// agents could never hold all at once: a single-node cluster needs one
// agent with room for every kernel, a multi-node one the agents together.
// It counts what each agent could ever hold (its capacity and kernel
// cap), as fitsSomeAgent does one kernel; a group with no agents accepts
// the request to wait, as there.
func clusterFits(live []shape, group string, req domain.Vec, size int, mode domain.ClusterMode) *Error {
	if size <= 1 {
		return nil
	}
	most, total := 0, 0
	for _, c := range live {
		n := kernelsFit(c.capacity, req, size)
		if c.maxKernels > 0 {
			n = min(n, c.maxKernels)
		}
		most, total = max(most, n), total+n*c.count
	}
	switch {
	case len(live) == 0:
		return nil
	case mode == domain.SingleNode && most < size:
		return invalid("cluster_size", "a single-node session of %d kernels needs one agent with room for all of them, and "+
			"no agent of resource group %s could ever hold more than %d of these kernels: ask for fewer, smaller kernels, "+
			"or multi-node", size, group, most)
	case mode == domain.MultiNode && total < size:
		return invalid("cluster_size", "a multi-node session of %d kernels is larger than resource group %s: its agents "+
			"together could ever hold at most %d of these kernels; ask for fewer or smaller kernels", size, group, total)
	}
	return nil
}

// kernelsFit is how many kernels of req an agent of capacity c holds, up
// to limit.
func kernelsFit(c, req domain.Vec, limit int) int {
	n := limit
	for i := range req {
		q := req.At(domain.SlotID(i))
		if q > 0 {
			n = min(n, int(c.At(domain.SlotID(i))/q))
		}
	}
	return n
}

func holds(capacity, req domain.Vec) bool {
	for i := range req {
		if req.At(domain.SlotID(i)) > capacity.At(domain.SlotID(i)) {
			return false
		}
	}
	return true
}

// shape is what one or more live agents of a group could ever hold:
// their capacity (agentCapacity) and kernel cap. What fitsGroup decides
// depends on nothing else, so identical agents are weighed once and
// counted: a group of a thousand agents of one shape is one shape, not a
// thousand capacities worked out at every submission.
type shape struct {
	capacity   domain.Vec
	maxKernels int
	count      int
}

// shapesOf gives the shapes of the live (not TERMINATED) agents, in the
// order each shape first appears.
func shapesOf(reg *domain.Registry, agents []domain.Agent) []shape {
	var out []shape
	index := map[string]int{}
	var key []byte
	for _, a := range agents {
		if a.Status == domain.AgentTerminated {
			continue
		}
		// The key is what agentCapacity reads, so agents with one key
		// have one capacity; it costs no allocation for a known shape.
		key = key[:0]
		for i := range reg.Len() {
			key = binary.AppendVarint(key, int64(a.Capacity.At(domain.SlotID(i))))
		}
		key = binary.AppendVarint(key, int64(a.MaxKernels))
		for _, d := range a.Devices {
			key = append(append(key, d.Slot...), 0)
		}
		if i, ok := index[string(key)]; ok {
			out[i].count++
			continue
		}
		index[string(key)] = len(out)
		out = append(out, shape{capacity: agentCapacity(reg, a), maxKernels: a.MaxKernels, count: 1})
	}
	return out
}

// agentCapacity is what an agent could ever hold: its capacity, where a
// slot it reports devices of counts one whole unit per device, as
// placement hands them out.
func agentCapacity(reg *domain.Registry, a domain.Agent) domain.Vec {
	c := reg.NewVec()
	for i := range c {
		c[i] = a.Capacity.At(domain.SlotID(i))
	}
	devs := domain.DeviceCapacity(reg, a.Devices)
	seen := map[string]bool{}
	for _, d := range a.Devices {
		if id, ok := reg.Lookup(d.Slot); ok && !seen[d.Slot] {
			seen[d.Slot] = true
			c[id] = devs.At(id)
		}
	}
	return c
}

// dependencies resolves the sessions the request depends on, each once.
// A reference the resolver refuses is the submitter's to fix, at its
// field.
func dependencies(ctx context.Context, req Request) ([]domain.SessionID, error) {
	if len(req.DependsOn) > maxListItems {
		return nil, invalid("depends_on", "lists more than %d sessions", maxListItems)
	}
	out := make([]domain.SessionID, 0, len(req.DependsOn))
	if len(req.DependsOn) > 0 && req.Resolve == nil {
		return nil, errors.New("admit: a request with dependencies needs a resolver")
	}
	for i, ref := range req.DependsOn {
		f := fmt.Sprintf("depends_on[%d]", i)
		id, err := req.Resolve(ctx, ref)
		var e *Error
		if errors.As(err, &e) {
			return nil, invalid(f, "%s", e.Message)
		}
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, id) {
			return nil, invalid(f, "session %q (%s) is listed twice", ref, id)
		}
		out = append(out, id)
	}
	return out, nil
}

// designated checks the agents a request restricts placement to: each
// named once, existing, and in the session's group.
func (a *Admitter) designated(ctx context.Context, group string, ids []string) ([]domain.AgentID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > maxListItems {
		return nil, invalid("designated_agents", "lists more than %d agents", maxListItems)
	}
	want := make([]domain.AgentID, 0, len(ids))
	for i, id := range ids {
		f := fmt.Sprintf("designated_agents[%d]", i)
		if !ValidID(id) {
			return nil, invalid(f, "no such agent %q", id)
		}
		if slices.Contains(want, domain.AgentID(id)) {
			return nil, invalid(f, "agent %q is listed twice", id)
		}
		want = append(want, domain.AgentID(id))
	}
	found, err := a.store.ListAgents(ctx, store.AgentFilter{IDs: want})
	if err != nil {
		return nil, err
	}
	byID := make(map[domain.AgentID]domain.Agent, len(found))
	for _, ag := range found {
		byID[ag.ID] = ag
	}
	for i, id := range want {
		f := fmt.Sprintf("designated_agents[%d]", i)
		ag, ok := byID[id]
		if !ok {
			return nil, invalid(f, "no such agent %q", id)
		}
		if ag.ResourceGroup != group {
			return nil, invalid(f, "agent %s is in resource group %s, not %s", id, ag.ResourceGroup, group)
		}
	}
	return want, nil
}

// checkCommandRunnable refuses a command when the group has agents and none
// of them runs a session's own command: placed there, the session would be
// refused by its agent at start and cancelled, after the wait in the queue.
// A group with no agents yet accepts it, as it accepts any session to wait
// for agents.
func checkCommandRunnable(agents []domain.Agent, group string, cmd []string) *Error {
	if len(cmd) == 0 {
		return nil
	}
	if len(agents) == 0 || slices.ContainsFunc(agents, func(a domain.Agent) bool { return a.AllowsCommand }) {
		return nil
	}
	return invalid("command", "no agent of resource group %s runs a session's own command (an agent allows it "+
		"with `sokovan agent run --allow-command`); leave command out to run the image's own", group)
}

// policies returns the policies of the owner's user, project and domain
// that exist, in that order.
func (a *Admitter) policies(ctx context.Context, o domain.Owner) ([]domain.Policy, error) {
	var out []domain.Policy
	for _, c := range []struct {
		scope domain.PolicyScope
		name  string
	}{
		{domain.ScopeUser, o.User},
		{domain.ScopeProject, o.Project},
		{domain.ScopeDomain, o.Domain},
	} {
		if c.name == "" {
			continue
		}
		p, err := a.store.GetPolicy(ctx, c.scope, c.name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// pendingCaps returns the policies' max_pending_sessions as limits for the
// store to keep.
func pendingCaps(policies []domain.Policy) []store.PendingLimit {
	var caps []store.PendingLimit
	for _, p := range policies {
		if p.MaxPendingSessions > 0 {
			caps = append(caps, store.PendingLimit{Scope: p.Scope, Name: p.Name, Max: p.MaxPendingSessions})
		}
	}
	return caps
}

// hardLimits refuses a session that asks, all kernels together, for more
// of a slot than a policy over its owner allows at once: it could never
// be scheduled, however long it waited.
func (a *Admitter) hardLimits(sess domain.Session, policies []domain.Policy) *Error {
	total := sess.Requested.Scale(sess.ClusterSize)
	for _, p := range policies {
		for i := range min(len(total), len(p.MaxSlots)) {
			id := domain.SlotID(i)
			limit := p.MaxSlots.At(id)
			if limit == domain.MaxQuantity || total.At(id) <= limit {
				continue
			}
			t := a.slots.Type(id)
			all := ""
			if sess.ClusterSize > 1 {
				all = fmt.Sprintf(" (%d kernels × %s)", sess.ClusterSize, a.slots.Format(id, sess.Requested.At(id)))
			}
			return invalid("resources."+t.Name, "the session asks for %s %s in all%s, more than %s %s's policy allows "+
				"at once (max_slots %s=%s): it could never run; ask for less, or have an admin raise the limit",
				a.slots.Format(id, total.At(id)), t.Name, all, p.Scope, p.Name, t.Name, a.slots.Format(id, limit))
		}
	}
	return nil
}
