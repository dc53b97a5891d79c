package framework

// Plugin is what every extension point embeds: a stable name for
// configuration, metrics and explanations.
type Plugin interface {
	Name() string
}

// Validator decides whether a session may be placed in this round. It
// appends one blocker per reason it may not and returns the slice; an
// unchanged slice means the session passes. Validators read the round
// state, which already counts what this round has placed, so quotas hold
// across the sessions of one round.
type Validator interface {
	Plugin
	Validate(st *State, s *Session, out []Blocker) []Blocker
}

// Sequencer orders the sessions of one priority band.
type Sequencer interface {
	Plugin
	// Queue returns the band's sessions (indexes into State.Sessions) in the
	// order they are to be tried.
	Queue(st *State, band []int32) Queue
}

// Queue hands out sessions one at a time, so an order that depends on what
// has been placed (DRF) can change as the round goes.
type Queue interface {
	// Next returns the next session index, false when the band is done.
	Next() (int32, bool)
	// Placed tells the queue the session it last returned was placed.
	Placed(i int32)
}

// Selector picks an agent for one request among candidates.
type Selector interface {
	Plugin
	// Select returns the index (into State.Agents) of the agent to use from
	// candidates, which are in agent index order, or -1 when none fits.
	Select(st *State, candidates []int32, req *Request) int32
}

// Ranker is a Selector whose choice is the first agent that fits in an
// order of its own: by Rank, lower first, equal ranks by agent index. The
// round keeps its candidates in that order in an index with per-subtree
// maxima of free slots, so it finds that agent, or learns there is none,
// without visiting every candidate. Select stays the plain scan over a
// list and must choose the same agent; the round still calls it for lists
// too short or too specific to index (designated agents).
type Ranker interface {
	Selector
	// Rank is agent a's place in the order. It may read only a's own round
	// state (Free, Kernels, Util) and facts fixed for the round (Cap,
	// CapKey, AgentInfo), because the round re-ranks an agent only when it
	// reserves on it or gives back from it.
	Rank(st *State, a int32) Rank
	// FromCursor reports that the order starts at State.CursorIndex and
	// wraps around (round-robin). Such a selector's ranks are ignored: its
	// order is agent index order.
	FromCursor() bool
}

// Rank orders agents for a Ranker: lower Key first, then lower Tie.
type Rank struct {
	Key, Tie float64
}
