package sqlstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store/internal/codec"
)

// The snapshot cache keeps, between LoadSnapshot calls, the part of a
// round's input that is the whole cluster's rather than the group's:
// every agent, every kernel that holds slots (with its session's owner,
// status and limit), and every session that counts toward its owner's
// concurrency. Re-reading them was most of a round's cost: a thousand
// agent rows and a sum over every running kernel's request, each round,
// although a round changes a few of them.
//
// It is kept exact, not approximately fresh, from what the database
// itself records in the same transaction as each change:
//   - every status change of a session or kernel, and every session made,
//     is a row of the change feed naming the session, the kernel and the
//     kernel's agent. Occupancy moves only with a kernel's status (into or
//     out of a holding status), and the columns kept of a holding session
//     (status, status_changed_at, preempted_by) move only with its status;
//     priority, preemptibility and limit never change after submission;
//   - every other change to an agent or a group (registration, status,
//     cordon, capacity, drain, retirement, configuration, policies) bumps
//     a group's generation.
//
// So a load reads the feed after the position the cache reflects, and
// re-reads by id the sessions, their holding kernels and the agents the
// new rows name; a moved generation, a feed pruned past that position or
// a long gap rebuilds it all. Re-reading current rows, rather than
// applying the feed's from/to, makes a row seen twice harmless: on
// PostgreSQL a change committed but not yet numbered is read too (the
// feed's rows without a position), and again once numbered.
//
// What it does not keep fresh: an agent's last heartbeat, which no round
// reads, stays as of the agent's last re-read.
type snapCache struct {
	mu    sync.Mutex
	valid bool
	// pos is the feed position the cache reflects; gens the groups'
	// generations.
	pos  int64
	gens map[string]int64

	agents      map[domain.AgentID]domain.Agent
	groupAgents map[string][]domain.AgentID // each sorted

	bySession map[domain.SessionID][]*heldKernel
	// groupHeld is each group's holding kernels (the group of the agent
	// they are on), sorted by kernel id as the uncached query orders them.
	groupHeld map[string][]*heldKernel
	usage     map[usageKey]*usageSum
	// holdTemplate is each group's holdings as last built; dropped when
	// the group's holding kernels change.
	holdTemplate map[string]*holdTemplate

	active map[domain.SessionID]owner
	counts map[owner]int

	// decay is the fair-share cache (decaycache.go), kept apart from what
	// rebuild resets: the change feed does not move it.
	decay decayCache
}

type holdTemplate struct {
	hs []framework.Holding
	// floating are the indexes of the holdings whose end moves with now.
	floating []int
}

// feedGap is how many feed rows past its position the cache catches up
// on by re-reading; past it, reading everything again is cheaper.
const feedGap = 20000

type owner struct{ user, project, domain string }

// usageKey is an owner inside one group (the session's group, which DRF's
// per-group usage counts).
type usageKey struct {
	owner
	group string
}

type usageSum struct {
	kernels int
	// keyed counts the kernels whose request names a slot: only those
	// yield rows in the uncached sum over the request's pairs, so only
	// they make an owner appear in the usage maps.
	keyed int
	slots domain.Vec
}

// heldKernel is a kernel in a holding status, as a round sees it.
type heldKernel struct {
	id      domain.KernelID
	owner   owner
	group   string // its session's
	held    string // its agent's group, where it holds slots
	keyed   bool   // its request names a slot
	devices []domain.DeviceGrant
	row     codec.HoldingRow
}

func newSnapCache() *snapCache { return &snapCache{} }

// Queries of the cache. The held kernels carry their session's owner and
// group beside the holding columns.
const (
	selectGroupHolds = `SELECT reserve = 1 OR preempt = 1 FROM resource_groups WHERE name = $1`
	// Two subqueries, each walking one end of the position index: MIN
	// and MAX in one select would scan the feed on SQLite.
	selectFeedBounds = `SELECT
    COALESCE((SELECT {pos} FROM status_changes WHERE {pos} IS NOT NULL ORDER BY {pos} LIMIT 1), 0),
    COALESCE((SELECT {pos} FROM status_changes WHERE {pos} IS NOT NULL ORDER BY {pos} DESC LIMIT 1), 0)`
	selectFeedAfter = `SELECT session_id, agent_id FROM status_changes
WHERE {pos} > $1 AND {pos} <= $2`
	selectFeedUnnumbered = `SELECT session_id, agent_id FROM status_changes WHERE {pos} IS NULL`
	selectAllAgents      = `SELECT ` + codec.AgentColumns + ` FROM agents`
	selectAgentsByID     = `SELECT ` + codec.AgentColumns + ` FROM agents WHERE id {in $1}`
	heldKernelColumns    = `k.id, k.devices, s.owner_user, s.owner_project, s.owner_domain, s.resource_group, ` +
		codec.HoldingColumns
	selectAllHeldKernels = `SELECT ` + heldKernelColumns + `
FROM kernels k JOIN sessions s ON s.id = k.session_id
WHERE k.status IN ` + holdingKernelStatuses
	// CROSS JOIN keeps SQLite's planner to the sessions given, then their
	// kernels by session, rather than every holding kernel by status;
	// PostgreSQL plans it as the inner join it is.
	selectHeldKernelsOf = `SELECT ` + heldKernelColumns + `
FROM sessions s CROSS JOIN kernels k
WHERE s.id {in $1} AND k.session_id = s.id AND k.status IN ` + holdingKernelStatuses + `
ORDER BY k.id`
	selectActiveSessions = `SELECT id, owner_user, owner_project, owner_domain FROM sessions
WHERE status IN ` + holdingSessionStatuses
	selectActiveOf = `SELECT id, owner_user, owner_project, owner_domain FROM sessions
WHERE id {in $1} AND status IN ` + holdingSessionStatuses
)

// refresh brings the cache up to the transaction's view. On an error the
// cache is dropped, to be rebuilt by the next load.
func (c *snapCache) refresh(ctx context.Context, s *Store, tx txn) error {
	err := c.catchUp(ctx, s, tx)
	if err != nil {
		c.valid = false
	}
	return err
}

func (c *snapCache) catchUp(ctx context.Context, s *Store, tx txn) error {
	gens := map[string]int64{}
	var first, last int64
	var sessions []string
	var agents []string
	stmts := []Stmt{
		{SQL: selectGenerations, Row: func(sc codec.Scanner) error {
			var name string
			var gen int64
			err := sc.Scan(&name, &gen)
			gens[name] = gen
			return err
		}},
		{SQL: selectFeedBounds, Row: func(sc codec.Scanner) error { return sc.Scan(&first, &last) }},
	}
	if _, numbered := s.eng.(ChangeNumberer); numbered {
		stmts = append(stmts, Stmt{SQL: selectFeedUnnumbered, Row: func(sc codec.Scanner) error {
			var sid, aid string
			err := sc.Scan(&sid, &aid)
			sessions, agents = append(sessions, sid), appendAgent(agents, aid)
			return err
		}})
	}
	if err := tx.batch(ctx, stmts...); err != nil {
		return err
	}
	if !c.valid || !maps.Equal(gens, c.gens) || (first > c.pos+1) || last-c.pos > feedGap || last < c.pos {
		return c.rebuild(ctx, s, tx, gens, last)
	}
	if last > c.pos {
		err := tx.query(ctx, selectFeedAfter, []any{c.pos, last}, func(sc codec.Scanner) error {
			var sid, aid string
			err := sc.Scan(&sid, &aid)
			sessions, agents = append(sessions, sid), appendAgent(agents, aid)
			return err
		})
		if err != nil {
			return err
		}
	}
	if len(sessions) == 0 && len(agents) == 0 {
		c.pos = last
		return nil
	}
	slices.Sort(sessions)
	sessions = slices.Compact(sessions)
	slices.Sort(agents)
	agents = slices.Compact(agents)

	var (
		fresh  []domain.Agent
		held   []*heldKernel
		active = map[domain.SessionID]owner{}
	)
	err := tx.batch(ctx,
		Stmt{SQL: selectAgentsByID, Args: []any{List(agents)}, Row: func(sc codec.Scanner) error {
			a, err := s.agents.Scan(sc)
			fresh = append(fresh, a)
			return err
		}},
		Stmt{SQL: selectHeldKernelsOf, Args: []any{List(sessions)}, Row: func(sc codec.Scanner) error {
			k, err := scanHeldKernel(s.reg, sc)
			held = append(held, k)
			return err
		}},
		Stmt{SQL: selectActiveOf, Args: []any{List(sessions)}, Row: func(sc codec.Scanner) error {
			id, o, err := scanActive(sc)
			active[id] = o
			return err
		}},
	)
	if err != nil {
		return err
	}
	for _, a := range fresh {
		old, ok := c.agents[a.ID]
		if !ok || old.ResourceGroup != a.ResourceGroup {
			// A new agent, or one that moved, bumps a generation, so
			// this cannot be; if it were, reading all is what is safe.
			return c.rebuild(ctx, s, tx, gens, last)
		}
		c.agents[a.ID] = a
	}
	newHeld := map[domain.SessionID][]*heldKernel{}
	for _, k := range held {
		if _, ok := c.agents[k.row.Agent]; !ok {
			return c.rebuild(ctx, s, tx, gens, last)
		}
		newHeld[k.row.Session] = append(newHeld[k.row.Session], k)
	}
	for _, id := range sessions {
		sid := domain.SessionID(id)
		// Most sessions named are named for a change that leaves what
		// they hold as it was (a kernel moving on from PREPARING, say):
		// then the group's holdings stay as built.
		if !sameKernels(c.bySession[sid], newHeld[sid]) {
			for _, k := range c.bySession[sid] {
				c.drop(k)
			}
			delete(c.bySession, sid)
			for _, k := range newHeld[sid] {
				c.add(k)
			}
		}
		if o, ok := c.active[sid]; ok {
			c.uncount(o)
			delete(c.active, sid)
		}
		if o, ok := active[sid]; ok {
			c.active[sid] = o
			c.counts[o]++
		}
	}
	c.pos = last
	return nil
}

// sameKernels reports whether two lists of a session's holding kernels,
// each in the order read, hold the same.
func sameKernels(a, b []*heldKernel) bool {
	return slices.EqualFunc(a, b, func(x, y *heldKernel) bool {
		return x.id == y.id && x.owner == y.owner && x.group == y.group && x.keyed == y.keyed &&
			slices.Equal(x.devices, y.devices) && x.row.Agent == y.row.Agent && x.row.Session == y.row.Session &&
			slices.Equal(x.row.Slots, y.row.Slots) && x.row.Named == y.row.Named && x.row.Status == y.row.Status &&
			x.row.Changed.Equal(y.row.Changed) && x.row.Limit == y.row.Limit && x.row.Priority == y.row.Priority &&
			x.row.Preemptible == y.row.Preemptible && x.row.PreemptedBy == y.row.PreemptedBy
	})
}

// rebuild reads the whole cluster's part again.
func (c *snapCache) rebuild(ctx context.Context, s *Store, tx txn, gens map[string]int64, pos int64) error {
	// Field by field: the struct holds the lock this load is under.
	c.gens, c.pos = gens, pos
	c.agents = map[domain.AgentID]domain.Agent{}
	c.groupAgents = map[string][]domain.AgentID{}
	c.bySession = map[domain.SessionID][]*heldKernel{}
	c.groupHeld = map[string][]*heldKernel{}
	c.usage = map[usageKey]*usageSum{}
	c.holdTemplate = map[string]*holdTemplate{}
	c.active = map[domain.SessionID]owner{}
	c.counts = map[owner]int{}
	c.valid = false
	var held []*heldKernel
	err := tx.batch(ctx,
		Stmt{SQL: selectAllAgents, Row: func(sc codec.Scanner) error {
			a, err := s.agents.Scan(sc)
			c.agents[a.ID] = a
			c.groupAgents[a.ResourceGroup] = append(c.groupAgents[a.ResourceGroup], a.ID)
			return err
		}},
		Stmt{SQL: selectAllHeldKernels, Row: func(sc codec.Scanner) error {
			k, err := scanHeldKernel(s.reg, sc)
			held = append(held, k)
			return err
		}},
		Stmt{SQL: selectActiveSessions, Row: func(sc codec.Scanner) error {
			id, o, err := scanActive(sc)
			c.active[id] = o
			c.counts[o]++
			return err
		}},
	)
	if err != nil {
		return err
	}
	for _, ids := range c.groupAgents {
		slices.Sort(ids)
	}
	slices.SortFunc(held, func(a, b *heldKernel) int { return cmp.Compare(a.id, b.id) })
	for _, k := range held {
		c.add(k)
	}
	c.valid = true
	return nil
}

func appendAgent(agents []string, id string) []string {
	if id == "" {
		return agents
	}
	return append(agents, id)
}

func scanActive(sc codec.Scanner) (domain.SessionID, owner, error) {
	var id string
	var o owner
	err := sc.Scan(&id, &o.user, &o.project, &o.domain)
	return domain.SessionID(id), o, err
}

// prefixed is a Scanner that fills dest after the leading columns pre.
type prefixed struct {
	sc  codec.Scanner
	pre []any
}

func (p prefixed) Scan(dest ...any) error { return p.sc.Scan(append(p.pre, dest...)...) }

func scanHeldKernel(reg *domain.Registry, sc codec.Scanner) (*heldKernel, error) {
	var id, devices string
	k := &heldKernel{}
	row, err := codec.ScanHoldingRow(reg, prefixed{sc, []any{&id, &devices, &k.owner.user, &k.owner.project,
		&k.owner.domain, &k.group}})
	if err != nil {
		return nil, err
	}
	k.id, k.row, k.keyed = domain.KernelID(id), row, row.Named
	if err := codec.DecodeDevices("kernels", id, devices, &k.devices); err != nil {
		return nil, err
	}
	return k, nil
}

// add takes in a holding kernel: its slots into its owner's usage, it into
// its group's list.
func (c *snapCache) add(k *heldKernel) {
	k.held = c.agents[k.row.Agent].ResourceGroup
	c.bySession[k.row.Session] = append(c.bySession[k.row.Session], k)
	list := c.groupHeld[k.held]
	i, _ := slices.BinarySearchFunc(list, k.id, func(x *heldKernel, id domain.KernelID) int { return cmp.Compare(x.id, id) })
	c.groupHeld[k.held] = slices.Insert(list, i, k)
	delete(c.holdTemplate, k.held)
	key := usageKey{k.owner, k.group}
	u := c.usage[key]
	if u == nil {
		u = &usageSum{}
		c.usage[key] = u
	}
	u.kernels++
	if k.keyed {
		u.keyed++
	}
	if len(u.slots) < len(k.row.Slots) {
		u.slots = append(u.slots, make(domain.Vec, len(k.row.Slots)-len(u.slots))...)
	}
	u.slots.Add(k.row.Slots)
}

// drop undoes add.
func (c *snapCache) drop(k *heldKernel) {
	list := c.groupHeld[k.held]
	if i, ok := slices.BinarySearchFunc(list, k.id, func(x *heldKernel, id domain.KernelID) int { return cmp.Compare(x.id, id) }); ok {
		c.groupHeld[k.held] = slices.Delete(list, i, i+1)
		delete(c.holdTemplate, k.held)
	}
	key := usageKey{k.owner, k.group}
	u := c.usage[key]
	u.kernels--
	if k.keyed {
		u.keyed--
	}
	u.slots.Sub(k.row.Slots)
	if u.kernels == 0 {
		delete(c.usage, key)
	}
}

func (c *snapCache) uncount(o owner) {
	if c.counts[o]--; c.counts[o] <= 0 {
		delete(c.counts, o)
	}
}

// fill puts the cluster's part for group into snap, as the uncached
// queries would give it: agents in id order, usage over every group, the
// group's held devices and, when the group reserves or preempts, its
// holdings in kernel order.
func (c *snapCache) fill(snap *framework.Snapshot, group string, holds bool, now time.Time) {
	if ids := c.groupAgents[group]; len(ids) > 0 {
		snap.Agents = make([]domain.Agent, len(ids))
		// The scheduler only reads these, but a caller may change what
		// it is given, as it may with the uncached read's: the vectors
		// are copies, out of one allocation.
		n := snap.Slots.Len()
		vecs := make(domain.Vec, 0, 2*n*len(ids))
		clone := func(v domain.Vec) domain.Vec {
			if len(v) > n {
				return v.Clone()
			}
			vecs = append(vecs, v...)
			return vecs[len(vecs)-len(v) : len(vecs) : len(vecs)]
		}
		for i, id := range ids {
			a := c.agents[id]
			a.Capacity, a.Occupied = clone(a.Capacity), clone(a.Occupied)
			snap.Agents[i] = a
		}
	}
	u := framework.Usage{
		Users:      map[string]framework.Use{},
		Projects:   map[string]framework.Use{},
		Domains:    map[string]framework.Use{},
		GroupUsers: map[string]domain.Vec{},
	}
	n := snap.Slots.Len()
	use := func(m map[string]framework.Use, key string) framework.Use {
		x, ok := m[key]
		if !ok {
			x = framework.Use{Occupied: make(domain.Vec, n)}
		}
		return x
	}
	for key, sum := range c.usage {
		if sum.keyed == 0 {
			continue
		}
		for _, t := range []struct {
			m   map[string]framework.Use
			key string
		}{{u.Users, key.user}, {u.Projects, key.project}, {u.Domains, key.domain}} {
			x := use(t.m, t.key)
			x.Occupied.Add(sum.slots)
			t.m[t.key] = x
		}
		if key.group == group {
			v, ok := u.GroupUsers[key.user]
			if !ok {
				v = make(domain.Vec, n)
				u.GroupUsers[key.user] = v
			}
			v.Add(sum.slots)
		}
	}
	for o, count := range c.counts {
		for _, t := range []struct {
			m   map[string]framework.Use
			key string
		}{{u.Users, o.user}, {u.Projects, o.project}, {u.Domains, o.domain}} {
			x := use(t.m, t.key)
			x.Active += count
			t.m[t.key] = x
		}
	}
	snap.Usage = u
	held := c.groupHeld[group]
	for _, k := range held {
		if len(k.devices) > 0 && len(c.agents[k.row.Agent].Devices) > 0 {
			if snap.DeviceHeld == nil {
				snap.DeviceHeld = map[domain.AgentID]map[string]domain.Quantity{}
			}
			m := snap.DeviceHeld[k.row.Agent]
			if m == nil {
				m = map[string]domain.Quantity{}
				snap.DeviceHeld[k.row.Agent] = m
			}
			for _, g := range k.devices {
				m[g.Device] += g.Share
			}
		}
	}
	if holds && len(held) > 0 {
		snap.Holdings = c.holdings(group, held, now)
	}
}

// holdings is the group's holdings as of now. Only those not RUNNING have
// an end that moves with now, so the rest are kept from one load to the
// next until the group's holding kernels change: a copy and a few ends
// worked out again, instead of thousands of holdings built afresh.
func (c *snapCache) holdings(group string, held []*heldKernel, now time.Time) []framework.Holding {
	t, ok := c.holdTemplate[group]
	if !ok {
		t = &holdTemplate{hs: make([]framework.Holding, len(held))}
		for i, k := range held {
			t.hs[i] = k.row.At(now)
			if k.row.Status != domain.SessionRunning {
				t.floating = append(t.floating, i)
			}
		}
		c.holdTemplate[group] = t
	}
	out := slices.Clone(t.hs)
	for _, i := range t.floating {
		out[i].Ends = held[i].row.At(now).Ends
	}
	return out
}
