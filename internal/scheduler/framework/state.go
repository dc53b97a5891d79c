package framework

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sort"

	"github.com/sokovan-go/sokovan/internal/domain"
)

// Amount is one non-zero slot of a request.
type Amount struct {
	Slot domain.SlotID
	Q    domain.Quantity
}

// Request is what must fit on one agent: the non-zero slots only, because
// requests name two or three slots while agents carry all of them, and the
// fit test runs once per agent per session.
type Request struct {
	Amounts []Amount
	Kernels int32
	// Vec is the same request as a dense vector, for reservation.
	Vec domain.Vec
	// shape numbers the distinct (Amounts, Kernels) of the round: sessions
	// come in a few sizes, and the index remembers its answer per size.
	shape int32
}

// shapes numbers request shapes as the round's sessions are built.
type shapes struct {
	ids     map[string]int32
	key     []byte
	amounts slab[Amount]
}

func (sh *shapes) newRequest(v domain.Vec, kernels int32) Request {
	r := Request{Vec: v, Kernels: kernels}
	n := 0
	for _, q := range v {
		if q != 0 {
			n++
		}
	}
	r.Amounts = sh.amounts.take(n)[:0]
	sh.key = binary.LittleEndian.AppendUint32(sh.key[:0], uint32(kernels))
	for i, q := range v {
		if q != 0 {
			r.Amounts = append(r.Amounts, Amount{Slot: domain.SlotID(i), Q: q})
			sh.key = binary.LittleEndian.AppendUint32(sh.key, uint32(i))
			sh.key = binary.LittleEndian.AppendUint64(sh.key, uint64(q))
		}
	}
	id, ok := sh.ids[string(sh.key)]
	if !ok {
		id = int32(len(sh.ids))
		sh.ids[string(sh.key)] = id
	}
	r.shape = id
	return r
}

// AgentInfo is what the round knows of an agent besides its slots.
type AgentInfo struct {
	ID           domain.AgentID
	Architecture string
	Usable       bool // ALIVE and schedulable
	MaxKernels   int32
}

// owner accumulates one user's, project's or domain's holdings and limits
// over the round.
type owner struct {
	Name     string
	scope    string // "user:<name>" and so on, built once for blockers
	Occupied domain.Vec
	Active   int
	Limits   domain.Vec // nil when unlimited
	MaxConc  int
}

// Session is a pending session as the round sees it.
type Session struct {
	Index   int32
	Pending *PendingSession
	// Total is the sum of the kernels' requests, what quotas count.
	Total Request
	// PerKernel holds each kernel's own request (cluster index order).
	PerKernel []Request
	MultiNode bool
	User      *owner
	Project   *owner
	Domain    *owner
	// tiers are the candidate agents to try, in order.
	tiers []tier
	// eligible is the union of tiers, the agents a blocker speaks of.
	eligible *candidates
}

// candidates is a list of agent indexes with cached per-slot maxima. The
// maxima are recomputed only when the round's version moved on: once a
// group is saturated placements are rare, so a request that exceeds the
// most any candidate has free is rejected without scanning.
type candidates struct {
	idx     []int32
	maxFree domain.Vec
	maxCap  domain.Vec
	maxRoom int32 // most kernels any candidate can still take; -1 = no cap
	maxKCap int32 // largest kernel cap among candidates (when all are capped)
	version uint64
	valid   bool
	// custom lists are built for one session (strictly designated
	// agents) and are not worth caching maxima for.
	custom bool
	// indexes hold the set in the order of each Ranker that asked, built
	// on first use: a round normally runs one selector.
	indexes []*agentIndex
	// maxCap, maxKCap and allCapped do not change in a round; with an
	// index at hand they are all refresh still has to scan for, once.
	capsKnown bool
	allCapped bool
	// tiers is the single tier of a session with no designated or
	// avoided agents, shared by all of them.
	tiers []tier
	// misses are requests no candidate could take. Reservations only
	// shrink free slots, so a request at least as large in every slot it
	// names, and in kernels, cannot fit either: once a group is full, most
	// sessions are turned away here, whereas the maxima cannot tell "no
	// single agent has both the cpu and the memory". missGen is
	// State.given when they were taken; anything given back voids them.
	misses  []*Request
	missGen uint64
}

// tier is one preference level of agents for a session.
type tier struct {
	// list is the tier's agents in index order; for a tier drawn from a
	// whole candidate set it is filled only when a plain Selector needs it.
	list []int32
	// all, when set, makes the tier all of that candidate set but the
	// agents in except (sorted), which a Ranker's index answers directly.
	all    *candidates
	except []int32
}

// State is one round's mutable view of a Snapshot: free slots per agent
// shrink as sessions are reserved. Agents are kept in a flat array in ID
// order, which is also what makes every tie-break deterministic.
type State struct {
	Snap    *Snapshot
	N       int // slot types
	Agents  []AgentInfo
	Free    []domain.Quantity // len(Agents)*N
	Cap     []domain.Quantity // len(Agents)*N
	Kernels []int32
	// maxK mirrors AgentInfo.MaxKernels densely: the fit test runs for
	// every agent of every session and should not pull in agent structs.
	maxK     []int32
	Util     []float64 // mean utilisation over the agent's slots
	CapKey   []float64 // size: sum over slots of capacity ÷ the group's largest
	Sessions []Session
	// GroupCap is the capacity of the group's usable agents, DRF's divisor.
	GroupCap domain.Vec
	// GroupUse is what each user holds in this group, DRF's numerator.
	GroupUse map[string]domain.Vec
	// RoundUse is what each project and user placed this round, which
	// the fairshare sequencer charges on top of their history.
	RoundUse map[Association]domain.Vec
	// Cursor is the round-robin position: the last agent chosen.
	Cursor domain.AgentID
	// arrayRunning counts each capped array's elements that hold
	// resources, this round's placements included.
	arrayRunning map[domain.ArrayID]int

	version uint64
	// scope is the group's blocker scope, "group:<name>".
	scope string
	// placed holds the plan's kernel placements, handed out in blocks.
	placed slab[KernelPlacement]
	// blocked is capacityBlockers' answer, reused: the caller copies it.
	blocked []Blocker
	// maxSeen is the index's maxSeen, lowered by tests.
	maxSeen int
	// shapes is how many distinct request shapes the sessions have.
	shapes int
	// given counts Unreserve calls, which void every candidate set's misses.
	given uint64
	// indexes are every agentIndex of the round, which each reservation
	// keeps up to date.
	indexes  []*agentIndex
	byID     map[domain.AgentID]int32
	byArch   map[string]*candidates
	usable   int
	archSeen map[string]bool
	// devices holds each agent's device pools, nil when no agent of the
	// group reports devices.
	devices []devicePools
	// devDetails caches deviceDetail per candidate set and slot, valid
	// while the round's version stands.
	devDetails map[devDetailKey]devDetail
}

// NewState builds the round state. It copies everything it will change.
func NewState(snap *Snapshot) *State {
	n := snap.Slots.Len()
	st := &State{
		Snap:     snap,
		scope:    "group:" + snap.Group.Name,
		maxSeen:  maxSeen,
		N:        n,
		Cursor:   snap.Cursor,
		GroupCap: make(domain.Vec, n),
		GroupUse: make(map[string]domain.Vec),
		byID:     make(map[domain.AgentID]int32),
		byArch:   make(map[string]*candidates),
		archSeen: make(map[string]bool),
	}
	agents := make([]*domain.Agent, 0, len(snap.Agents))
	for i := range snap.Agents {
		a := &snap.Agents[i]
		if a.ResourceGroup != "" && a.ResourceGroup != snap.Group.Name {
			continue
		}
		agents = append(agents, a)
	}
	slices.SortFunc(agents, func(x, y *domain.Agent) int { return cmp.Compare(x.ID, y.ID) })
	na := len(agents)
	st.Agents = make([]AgentInfo, na)
	st.Free = make([]domain.Quantity, na*n)
	st.Cap = make([]domain.Quantity, na*n)
	st.Kernels = make([]int32, na)
	st.maxK = make([]int32, na)
	st.Util = make([]float64, na)
	st.CapKey = make([]float64, na)
	maxCap := make(domain.Vec, n)
	for i, a := range agents {
		usable := a.Status == domain.AgentAlive && a.Schedulable
		st.Agents[i] = AgentInfo{ID: a.ID, Architecture: a.Architecture, Usable: usable, MaxKernels: int32(a.MaxKernels)}
		st.byID[a.ID] = int32(i)
		st.Kernels[i] = int32(a.KernelCount)
		st.maxK[i] = int32(a.MaxKernels)
		for s := range n {
			c := a.Capacity.At(domain.SlotID(s))
			st.Cap[i*n+s] = c
			st.Free[i*n+s] = domain.SubSat(c, a.Occupied.At(domain.SlotID(s)))
			if usable {
				st.GroupCap[s] = domain.AddSat(st.GroupCap[s], c)
				maxCap[s] = max(maxCap[s], c)
			}
		}
		if usable {
			st.usable++
			st.archSeen[a.Architecture] = true
		}
		st.initDevices(i, a)
	}
	for i := range agents {
		var key float64
		for s := range n {
			if maxCap[s] > 0 {
				key += float64(st.Cap[i*n+s]) / float64(maxCap[s])
			}
		}
		st.CapKey[i] = key
		st.updateUtil(int32(i))
	}
	for u, v := range snap.Usage.GroupUsers {
		st.GroupUse[u] = padded(v, n)
	}
	st.buildSessions()
	return st
}

func padded(v domain.Vec, n int) domain.Vec {
	out := make(domain.Vec, n)
	copy(out, v)
	return out
}

func (st *State) buildSessions() {
	snap := st.Snap
	owners := func(prefix string, kind map[string]domain.Policy, use map[string]Use) func(string) *owner {
		m := make(map[string]*owner)
		return func(name string) *owner {
			if o, ok := m[name]; ok {
				return o
			}
			o := &owner{Name: name, scope: prefix + name, Occupied: st.Snap.Slots.NewVec()}
			if u, ok := use[name]; ok {
				copy(o.Occupied, u.Occupied)
				o.Active = u.Active
			}
			if p, ok := kind[name]; ok {
				o.MaxConc = p.MaxConcurrentSessions
				if len(p.MaxSlots) > 0 {
					o.Limits = domain.Unlimited(st.N)
					copy(o.Limits, p.MaxSlots)
				}
			}
			m[name] = o
			return o
		}
	}
	user := owners("user:", snap.Policies.Users, snap.Usage.Users)
	project := owners("project:", snap.Policies.Projects, snap.Usage.Projects)
	dom := owners("domain:", snap.Policies.Domains, snap.Usage.Domains)
	st.Sessions = make([]Session, len(snap.Pending))
	sh := shapes{ids: make(map[string]int32)}
	var vecs slab[domain.Quantity]
	var reqs slab[Request]
	for i := range snap.Pending {
		p := &snap.Pending[i]
		s := &st.Sessions[i]
		s.Index = int32(i)
		s.Pending = p
		s.MultiNode = p.Session.ClusterMode == domain.MultiNode
		total := domain.Vec(vecs.take(st.N))
		s.PerKernel = reqs.take(len(p.Kernels))
		for k := range p.Kernels {
			v := domain.Vec(vecs.take(st.N))
			copy(v, p.Kernels[k].Requested)
			total.Add(v)
			s.PerKernel[k] = sh.newRequest(v, 1)
		}
		s.Total = sh.newRequest(total, int32(len(p.Kernels)))
		s.User = user(p.Session.Owner.User)
		s.Project = project(p.Session.Owner.Project)
		s.Domain = dom(p.Session.Owner.Domain)
	}
	st.shapes = len(sh.ids)
}

// Owners returns the user, project and domain accumulators in that order,
// with the scope label each blocker uses.
func (s *Session) Owners() [3]OwnerView {
	return [3]OwnerView{
		{Scope: s.User.scope, o: s.User},
		{Scope: s.Project.scope, o: s.Project},
		{Scope: s.Domain.scope, o: s.Domain},
	}
}

// OwnerView exposes an owner's round totals to validators.
type OwnerView struct {
	Scope string
	o     *owner
}

// Occupied is what the owner holds, including this round's placements.
func (v OwnerView) Occupied() domain.Vec { return v.o.Occupied }

// Active is how many sessions the owner holds resources for.
func (v OwnerView) Active() int { return v.o.Active }

// Limits is the owner's slot limits, nil when it has none.
func (v OwnerView) Limits() domain.Vec { return v.o.Limits }

// MaxConcurrent is the owner's session cap, zero when it has none.
func (v OwnerView) MaxConcurrent() int { return v.o.MaxConc }

// AgentIndex finds an agent by ID.
func (st *State) AgentIndex(id domain.AgentID) (int32, bool) {
	i, ok := st.byID[id]
	return i, ok
}

// Fits reports whether req fits on agent a right now.
func (st *State) Fits(a int32, req *Request) bool {
	base := int(a) * st.N
	free := st.Free[base : base+st.N]
	for _, am := range req.Amounts {
		if am.Q > free[am.Slot] {
			return false
		}
	}
	if mk := st.maxK[a]; mk > 0 && st.Kernels[a]+req.Kernels > mk {
		return false
	}
	return true
}

// fitsWork is Fits over a working copy of agent a's free slots and
// kernel count, in int64 so that a copy may go below zero as it is taken
// from.
func (st *State) fitsWork(free []int64, kernels int64, a int32, req *Request) bool {
	for _, am := range req.Amounts {
		if int64(am.Q) > free[am.Slot] {
			return false
		}
	}
	mk := st.maxK[a]
	return mk <= 0 || kernels+int64(req.Kernels) <= int64(mk)
}

// Reserve takes req from agent a. It does not check that req fits.
func (st *State) Reserve(a int32, req *Request) {
	base := int(a) * st.N
	for _, am := range req.Amounts {
		st.Free[base+int(am.Slot)] = domain.SubSat(st.Free[base+int(am.Slot)], am.Q)
	}
	st.Kernels[a] += req.Kernels
	st.updateUtil(a)
	st.version++
	for _, ix := range st.indexes {
		ix.update(a)
	}
}

// Unreserve gives back what Reserve took.
func (st *State) Unreserve(a int32, req *Request) {
	st.given++
	st.unreserve(a, req)
}

// unreserve undoes a partial gang; the caller keeps the misses true.
func (st *State) unreserve(a int32, req *Request) {
	base := int(a) * st.N
	for _, am := range req.Amounts {
		st.Free[base+int(am.Slot)] = domain.AddSat(st.Free[base+int(am.Slot)], am.Q)
	}
	st.Kernels[a] -= req.Kernels
	st.updateUtil(a)
	st.version++
	for _, ix := range st.indexes {
		ix.update(a)
	}
}

func (st *State) updateUtil(a int32) {
	base := int(a) * st.N
	var sum float64
	var n int
	for s := range st.N {
		c := st.Cap[base+s]
		if c <= 0 {
			continue
		}
		sum += float64(c-st.Free[base+s]) / float64(c)
		n++
	}
	if n > 0 {
		st.Util[a] = sum / float64(n)
	} else {
		st.Util[a] = 0
	}
}

// Commit records that session s was placed: owners' holdings and the
// user's group share grow by its total.
func (st *State) Commit(s *Session) {
	if a := s.Pending.Session.Array; a != "" {
		if _, capped := st.Snap.Arrays[a]; capped {
			if st.arrayRunning == nil {
				st.arrayRunning = make(map[domain.ArrayID]int)
			}
			st.arrayRunning[a]++
		}
	}
	for _, o := range []*owner{s.User, s.Project, s.Domain} {
		o.Occupied.Add(s.Total.Vec)
		o.Active++
	}
	u := s.Pending.Session.Owner.User
	g, ok := st.GroupUse[u]
	if !ok {
		g = make(domain.Vec, st.N)
		st.GroupUse[u] = g
	}
	g.Add(s.Total.Vec)
	a := Association{Project: s.Pending.Session.Owner.Project, User: u}
	r, ok := st.RoundUse[a]
	if !ok {
		if st.RoundUse == nil {
			st.RoundUse = map[Association]domain.Vec{}
		}
		r = make(domain.Vec, st.N)
		st.RoundUse[a] = r
	}
	r.Add(s.Total.Vec)
}

// ArrayRunning is how many elements of a capped array hold resources,
// counting this round's placements; ok is false for an element of no
// capped array.
func (st *State) ArrayRunning(a domain.ArrayID) (info ArrayInfo, running int, ok bool) {
	info, ok = st.Snap.Arrays[a]
	if !ok || a == "" {
		return info, 0, false
	}
	return info, info.Running + st.arrayRunning[a], true
}

// DominantShare is the user's largest share of any slot of the group's
// usable capacity, counting this round's placements.
func (st *State) DominantShare(user string) float64 {
	use := st.GroupUse[user]
	var share float64
	for s, q := range use {
		if c := st.GroupCap[s]; c > 0 && q > 0 {
			share = max(share, float64(q)/float64(c))
		}
	}
	return share
}

// Usable is the number of ALIVE, schedulable agents in the group.
func (st *State) Usable() int { return st.usable }

// HasArchitecture reports whether a usable agent has the architecture.
func (st *State) HasArchitecture(arch string) bool { return arch == "" || st.archSeen[arch] }

// archCandidates returns the usable agents of an architecture ("" = any).
func (st *State) archCandidates(arch string) *candidates {
	if c, ok := st.byArch[arch]; ok {
		return c
	}
	c := &candidates{}
	for i, a := range st.Agents {
		if a.Usable && (arch == "" || a.Architecture == arch) {
			c.idx = append(c.idx, int32(i))
		}
	}
	c.tiers = []tier{{list: c.idx, all: c}}
	st.byArch[arch] = c
	return c
}

// index returns c in r's order, building the index on first use.
func (st *State) index(c *candidates, r Ranker) *agentIndex {
	name := r.Name()
	for _, ix := range c.indexes {
		if ix.name == name {
			return ix
		}
	}
	ix := newAgentIndex(st, c.idx, r)
	ix.name = name
	c.indexes = append(c.indexes, ix)
	st.indexes = append(st.indexes, ix)
	return ix
}

// refresh recomputes the candidates' maxima if the round moved on.
func (st *State) refresh(c *candidates) {
	if c.valid && c.version == st.version {
		return
	}
	n := st.N
	if c.maxFree == nil {
		c.maxFree = make(domain.Vec, n)
		c.maxCap = make(domain.Vec, n)
	}
	if len(c.indexes) > 0 {
		st.refreshFromIndex(c, c.indexes[0])
		return
	}
	for s := range n {
		c.maxFree[s] = 0
		c.maxCap[s] = 0
	}
	c.maxRoom, c.maxKCap = 0, 0
	for _, a := range c.idx {
		base := int(a) * n
		for s := range n {
			c.maxFree[s] = max(c.maxFree[s], st.Free[base+s])
			c.maxCap[s] = max(c.maxCap[s], st.Cap[base+s])
		}
		if c.maxRoom >= 0 {
			if mk := st.Agents[a].MaxKernels; mk > 0 {
				c.maxRoom = max(c.maxRoom, mk-st.Kernels[a])
				c.maxKCap = max(c.maxKCap, mk)
			} else {
				c.maxRoom = -1
			}
		}
	}
	c.version = st.version
	c.valid = true
}

// refreshFromIndex reads the free maxima off the index's root, and scans
// only once for the capacities, which a round does not change.
func (st *State) refreshFromIndex(c *candidates, ix *agentIndex) {
	n := st.N
	if !c.capsKnown {
		c.allCapped = true
		for _, a := range c.idx {
			base := int(a) * n
			for s := range n {
				c.maxCap[s] = max(c.maxCap[s], st.Cap[base+s])
			}
			if mk := st.Agents[a].MaxKernels; mk > 0 {
				c.maxKCap = max(c.maxKCap, mk)
			} else {
				c.allCapped = false
			}
		}
		c.capsKnown = true
	}
	room := ix.maxima(c.maxFree)
	if c.allCapped {
		c.maxRoom = max(room, 0)
	} else {
		c.maxRoom = -1
	}
	c.version = st.version
	c.valid = true
}

// cannotFit reports, from the cached maxima, that no candidate can take
// req. It never says so wrongly: stale maxima are refreshed before a no.
func (st *State) cannotFit(c *candidates, req *Request) bool {
	exceeds := func() bool {
		for _, am := range req.Amounts {
			if am.Q > c.maxFree[am.Slot] {
				return true
			}
		}
		return c.maxRoom >= 0 && req.Kernels > c.maxRoom
	}
	if !c.valid {
		st.refresh(c)
		return exceeds()
	}
	if !exceeds() {
		// A stale "maybe" only costs a scan; a "no" is always confirmed on
		// fresh maxima below, because a rolled-back gang can raise free slots.
		return false
	}
	st.refresh(c)
	return exceeds()
}

// searchID returns the index of the first agent whose ID is after id.
func (st *State) searchID(id domain.AgentID) int32 {
	return int32(sort.Search(len(st.Agents), func(i int) bool { return st.Agents[i].ID > id }))
}

// CursorIndex is the agent index round-robin starts from: the first agent
// after the cursor, in ID order.
func (st *State) CursorIndex() int32 { return st.searchID(st.Cursor) }

// liveMisses returns c's misses, first dropping those of an earlier
// generation (before an Unreserve): they may no longer hold.
func (st *State) liveMisses(c *candidates) []*Request {
	if c.missGen != st.given {
		c.misses, c.missGen = c.misses[:0], st.given
	}
	return c.misses
}

// missed reports that req covers a request none of c could take.
func (st *State) missed(c *candidates, req *Request) bool {
	for _, m := range st.liveMisses(c) {
		if covers(req, m) {
			return true
		}
	}
	return false
}

// covers reports whether req asks for at least what m does: kernels, and
// every slot m names. A slot m leaves at zero is never checked for m, so
// req may ask anything of it.
func covers(req, m *Request) bool {
	if req.Kernels < m.Kernels {
		return false
	}
	for _, am := range m.Amounts {
		if q := req.Vec[am.Slot]; q == 0 || q < am.Q {
			return false
		}
	}
	return true
}

// slab hands out small slices carved from large blocks, so a round over
// 100k sessions makes a few hundred allocations where it made one or more
// per session. Each slice is capped at its length, so appending to one
// never runs into the next.
type slab[T any] struct{ block []T }

const slabBlock = 4096

func (s *slab[T]) take(n int) []T {
	if cap(s.block)-len(s.block) < n {
		s.block = make([]T, 0, max(slabBlock, n))
	}
	start := len(s.block)
	s.block = s.block[:start+n]
	return s.block[start : start+n : start+n]
}
