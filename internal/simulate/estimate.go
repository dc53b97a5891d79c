package simulate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
)

// Live is one resource group as it stands, what Estimate starts from.
type Live struct {
	Now   time.Time
	Slots *domain.Registry
	Group domain.ResourceGroup
	// Policies are the owners' limits (every one that may apply).
	Policies []domain.Policy
	// Agents are the group's agents with their capacity; their occupancy
	// is ignored: Running makes it again, kernel by kernel.
	Agents []domain.Agent
	// Running are the sessions holding resources, each kernel with its
	// agent; End is when each is expected to end.
	Running []LiveSession
	// Pending is the queue; Run is how long each is expected to run.
	Pending []LiveSession
	// Jobs are the jobs of the running and pending sessions, so their
	// gangs are replayed too.
	Jobs []domain.Job
}

// LiveSession is a session of Live with its kernels and what is expected
// of it.
type LiveSession struct {
	Session domain.Session
	Kernels []domain.Kernel
	// End: a running session's expected end. One already past is taken to
	// end in a second: overdue, it is the likeliest to end next.
	End time.Time
	// Run: a pending session's expected run time once started.
	Run time.Duration
}

// EstimateHorizon is how far ahead Estimate looks by default; a session
// that would start later gets no estimate.
const EstimateHorizon = 7 * 24 * time.Hour

// Estimate replays the group forward from live through the production
// coordinator, scheduler and a temporary store, as Run does, and returns
// when each pending session starts (reaches RUNNING). A session missing
// from the result has no estimate: it cannot start (larger than every
// agent, a failed dependency), or not within horizon (zero: the default).
// The estimate is only as good as the expected ends and run times it is
// given, and assumes no new submission jumps the queue.
func Estimate(ctx context.Context, live Live, horizon time.Duration) (map[domain.SessionID]time.Time, error) {
	if horizon <= 0 {
		horizon = EstimateHorizon
	}
	// The replay's store keeps microseconds: from a finer origin, a
	// session that starts at once would seem to start a little before
	// the replay did, and get no estimate.
	live.Now = live.Now.Truncate(time.Microsecond)
	in := slices.Concat(live.Running, live.Pending)
	w := Workload{Sessions: make([]Session, len(in))}
	known := make(map[domain.SessionID]bool, len(in))
	for i, ls := range in {
		s := ls.Session
		known[s.ID] = true
		prio := s.Priority
		w.Sessions[i] = Session{ID: string(s.ID), User: s.Owner.User, Project: s.Owner.Project, Type: string(s.Type),
			ClusterSize: max(len(ls.Kernels), 1), Priority: &prio}
	}
	su := setup{group: live.Group, policies: live.Policies}
	r, closeRun, err := openRun(ctx, w, live.Slots, su, live.Now, Options{Horizon: horizon})
	if err != nil {
		return nil, err
	}
	defer closeRun()
	if err := r.setUpLive(ctx, live, known); err != nil {
		return nil, err
	}
	r.next = len(w.Sessions) // all in the store already
	stopped, err := r.loop(ctx)
	if err != nil {
		return nil, err
	}
	if stopped != "" {
		// Cut off: sessions it did not reach would read as never starting.
		return nil, fmt.Errorf("estimate %s", stopped)
	}
	out := map[domain.SessionID]time.Time{}
	for i := len(live.Running); i < len(in); i++ {
		if st := r.tr.recs[i].start; st >= 0 {
			out[in[i].Session.ID] = live.Now.Add(st)
		}
	}
	return out, nil
}

// setUpLive stores the group, its policies and agents, places the running
// sessions where they run (through the plan applier, so occupancy is the
// store's own sum) and queues the pending ones with their creation times,
// so the queue keeps its order.
func (r *runner) setUpLive(ctx context.Context, live Live, known map[domain.SessionID]bool) error {
	if err := r.st.PutResourceGroup(ctx, live.Group); err != nil {
		return err
	}
	for _, p := range live.Policies {
		if err := r.st.PutPolicy(ctx, p); err != nil {
			return err
		}
	}
	now := r.clock.Now()
	jobs := map[domain.JobID]bool{}
	for _, j := range live.Jobs {
		if err := r.st.CreateJob(ctx, j); err != nil {
			return fmt.Errorf("job %s: %w", j.ID, err)
		}
		jobs[j.ID] = true
	}
	for n, a := range live.Agents {
		if a.Status != domain.AgentAlive {
			continue // it takes nothing new while it is not back
		}
		a.ResourceGroup, a.Address, a.Runtime = live.Group.Name, "sim", "sim"
		got, err := r.st.RegisterAgent(ctx, a, now)
		if err != nil {
			return fmt.Errorf("agent %s: %w", a.ID, err)
		}
		if !a.Schedulable {
			if err := r.st.SetAgentSchedulable(ctx, a.ID, false); err != nil {
				return err
			}
		}
		if err := r.fleet.add(got.ID, got.Epoch, r.clock, uint64(n+1)*0x9e3779b97f4a7c15); err != nil {
			return err
		}
	}
	alive := map[domain.AgentID]bool{}
	for _, a := range live.Agents {
		alive[a.ID] = a.Status == domain.AgentAlive
	}
	add := func(ls LiveSession, run time.Duration) error {
		s := ls.Session
		s.ResourceGroup, s.Status, s.Image = live.Group.Name, domain.SessionPending, "exit:0"
		if s.CreatedAt.IsZero() || s.CreatedAt.After(now) {
			s.CreatedAt = now
		}
		s.StatusChangedAt = s.CreatedAt
		s.Env = map[string]string{"SOKOVAN_EXIT_AFTER": strconv.FormatFloat(max(run, time.Second).Seconds(), 'f', -1, 64)}
		s.Command = nil
		// Ended dependencies are not in the replay; had one failed, the
		// session would have been cancelled already.
		s.DependsOn = slices.DeleteFunc(slices.Clone(s.DependsOn), func(d domain.SessionID) bool { return !known[d] })
		if !jobs[s.Job] {
			s.Job = "" // its job is not in the replay: replayed as a plain session
		}
		// Nor are arrays: an element is replayed as a session of its own,
		// its array's cap (%N) not held.
		s.Array, s.ArrayIndex = "", 0
		ks := make([]domain.Kernel, len(ls.Kernels))
		for i, k := range ls.Kernels {
			ks[i] = domain.Kernel{ID: k.ID, SessionID: s.ID, ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx,
				Image: s.Image, Architecture: k.Architecture, Requested: k.Requested.Clone(),
				Status: domain.KernelPending, StatusChangedAt: s.CreatedAt}
		}
		if len(ks) == 0 {
			return nil // nothing of it is held or queued
		}
		s.ClusterSize = len(ks)
		if err := r.st.CreateSession(ctx, s, ks); err != nil {
			return fmt.Errorf("session %s: %w", s.ID, err)
		}
		return nil
	}
	for _, ls := range live.Running {
		pl := framework.Placement{Session: ls.Session.ID}
		placeable := true
		for _, k := range ls.Kernels {
			placeable = placeable && alive[k.Agent]
			pl.Kernels = append(pl.Kernels, framework.KernelPlacement{Kernel: k.ID, Agent: k.Agent, Slots: k.Requested.Clone(),
				Devices: k.Devices})
		}
		if !placeable || len(ls.Kernels) == 0 {
			continue // on a lost agent, or holding nothing: the replay has no room for it
		}
		if err := add(ls, ls.End.Sub(now)); err != nil {
			return err
		}
		res, err := r.st.ApplyPlan(ctx, framework.Plan{Group: live.Group.Name, Placements: []framework.Placement{pl}}, now)
		if err != nil {
			return fmt.Errorf("place running session %s: %w", ls.Session.ID, err)
		}
		if len(res.Rejected) > 0 {
			return fmt.Errorf("place running session %s: %s", ls.Session.ID, res.Rejected[0].Reason)
		}
	}
	for _, ls := range live.Pending {
		if err := add(ls, ls.Run); err != nil {
			return err
		}
	}
	r.start()
	return nil
}
