package simulate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/store"
)

// record is what happened to one session of the workload.
type record struct {
	// req is one kernel's request after the group's defaults; total is
	// the session's whole request.
	req, total domain.Vec
	submitted  bool
	rejected   string
	start, end time.Duration // since the simulation began; -1 when not (yet)
	status     string
	limitHit   bool
	// cur is the session of its attempt now (a requeued attempt's own id;
	// "" for the first); run is when that attempt started running.
	cur domain.SessionID
	run time.Duration
	// agents are where its kernels were placed, in order of placement;
	// reason is why it ended, as its last status change says.
	agents []domain.AgentID
	reason string
}

// holdChange is a kernel taking (+1) or giving back (-1) its slots on
// agent.
type holdChange struct {
	at    time.Duration
	sess  int32
	delta int8
	agent domain.AgentID
}

// tracker follows the store's change feed — the record every status
// change leaves in the transaction that makes it — so what the report
// measures is what the production code wrote, not what the simulator
// believes it asked for.
type tracker struct {
	origin  time.Time
	idx     map[domain.SessionID]int
	recs    []record
	holds   []holdChange
	lastPos int64
	// ended counts sessions that reached an end (or were refused).
	ended int
	// started lists sessions that just reached RUNNING, for time limits.
	started []int
	// preempted counts preemptions and workLost the run time they threw
	// away, read from the victims' move to TERMINATING.
	preempted int
	workLost  time.Duration
	// preemptAt are the preemptions' times, for the budget's window.
	preemptAt []time.Duration
}

func newTracker(origin time.Time, n int) *tracker {
	t := &tracker{origin: origin, idx: make(map[domain.SessionID]int, n), recs: make([]record, n)}
	for i := range t.recs {
		t.recs[i].start, t.recs[i].end = -1, -1
	}
	return t
}

// read takes the changes made since the last read and reports how many.
func (t *tracker) read(ctx context.Context, st store.Store) (int, error) {
	changes, err := st.Changes(ctx, store.ChangeFilter{After: t.lastPos})
	if err != nil {
		return 0, fmt.Errorf("read the change feed: %w", err)
	}
	for _, ch := range changes {
		t.lastPos = ch.Pos
		i, ok := t.idx[ch.Session]
		if !ok {
			if i, ok, err = t.requeued(ctx, st, ch.Session); err != nil {
				return 0, err
			}
			if !ok {
				return 0, fmt.Errorf("change %d names session %s, which the simulation did not submit", ch.Pos, ch.Session)
			}
		}
		r := &t.recs[i]
		at := ch.At.Sub(t.origin)
		if ch.Kind != store.ChangeKernel && r.cur != "" && ch.Session != r.cur {
			// An earlier attempt, preempted and requeued: its end is not
			// the session's.
			continue
		}
		if ch.Kind == store.ChangeKernel {
			from, to := holds(ch.From), holds(ch.To)
			if to && ch.Agent != "" && !slices.Contains(r.agents, ch.Agent) {
				r.agents = append(r.agents, ch.Agent)
			}
			switch {
			case !from && to:
				t.holds = append(t.holds, holdChange{at: at, sess: int32(i), delta: 1, agent: ch.Agent})
			case from && !to:
				t.holds = append(t.holds, holdChange{at: at, sess: int32(i), delta: -1, agent: ch.Agent})
			}
			continue
		}
		switch ch.To {
		case domain.SessionRunning.String():
			r.run = at
			if r.start < 0 {
				r.start = at
				t.started = append(t.started, i)
			}
		case domain.SessionTerminating.String():
			if strings.HasPrefix(ch.Reason, "preempted by ") {
				t.preempted++
				t.workLost += at - r.run
				t.preemptAt = append(t.preemptAt, at)
				continue
			}
		}
		if s, err := domain.ParseSessionStatus(ch.To); err == nil && s.Terminal() && r.end < 0 {
			r.end, r.status, r.reason = at, ch.To, ch.Reason
			t.ended++
		}
	}
	return len(changes), nil
}

// preemptWake is the next instant after now at which preemption alone
// could decide otherwise: a running session reaches the minimum run time,
// or a preemption leaves the window and frees budget.
func (t *tracker) preemptWake(p domain.Preemption, now time.Duration) (time.Duration, bool) {
	var at time.Duration
	ok := false
	consider := func(d time.Duration) {
		if d > now && (!ok || d < at) {
			at, ok = d, true
		}
	}
	if p.MinRuntime > 0 {
		for i := range t.recs {
			if r := &t.recs[i]; r.start >= 0 && r.end < 0 {
				consider(r.run + p.MinRuntime)
			}
		}
	}
	if p.Window > 0 {
		for _, a := range t.preemptAt {
			consider(a + p.Window)
		}
	}
	return at, ok
}

// requeued finds the workload session of a session the simulation did
// not submit: a requeued attempt, linked to the attempt it came from,
// counts as that attempt's workload session and is its current attempt
// from then on. Its creation is its first change, in the transaction that
// preempted the attempt before, so no later change of that one is read
// before the new one is current.
func (t *tracker) requeued(ctx context.Context, st store.Store, id domain.SessionID) (int, bool, error) {
	s, err := st.GetSession(ctx, id)
	if err != nil {
		return 0, false, fmt.Errorf("read session %s of the change feed: %w", id, err)
	}
	i, ok := t.idx[s.Session.RequeuedFrom]
	if s.Session.RequeuedFrom == "" || !ok {
		return 0, false, nil
	}
	t.idx[id] = i
	t.recs[i].cur = id
	return i, true, nil
}

func holds(status string) bool {
	s, err := domain.ParseKernelStatus(status)
	return err == nil && s.HoldsResources()
}
