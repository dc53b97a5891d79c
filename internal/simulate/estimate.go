package simulate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sokovan-go/sokovan/internal/domain"
	"github.com/sokovan-go/sokovan/internal/scheduler/framework"
	"github.com/sokovan-go/sokovan/internal/store"
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
	// Arrays are the capped (%N) arrays of the running and pending
	// sessions, so the replay holds each cap as the scheduler does; an
	// element of an array not here is replayed as a session of its own.
	Arrays []domain.Array
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

// setUpLive stores the group, its policies, jobs and agents, creates the
// running and pending sessions (the elements of each array with their
// array, so its cap holds), places the running ones where they run
// (through the plan applier, so occupancy is the store's own sum) and
// queues the pending ones with their creation times, so the queue keeps
// its order.
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
	alive, err := r.registerLive(ctx, live)
	if err != nil {
		return err
	}
	arrays := map[domain.ArrayID]bool{}
	for _, a := range live.Arrays {
		arrays[a.ID] = true
	}
	var (
		made   []store.NewSession
		places []framework.Placement
	)
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
		made = append(made, replayed(live.Group.Name, ls, ls.End.Sub(now), now, known, jobs, arrays))
		places = append(places, pl)
	}
	for _, ls := range live.Pending {
		if len(ls.Kernels) > 0 { // else nothing of it is queued
			made = append(made, replayed(live.Group.Name, ls, ls.Run, now, known, jobs, arrays))
		}
	}
	if err := r.createLive(ctx, live.Arrays, made); err != nil {
		return err
	}
	for _, pl := range places {
		res, err := r.st.ApplyPlan(ctx, framework.Plan{Group: live.Group.Name, Placements: []framework.Placement{pl}}, now)
		if err != nil {
			return fmt.Errorf("place running session %s: %w", pl.Session, err)
		}
		if len(res.Rejected) > 0 {
			return fmt.Errorf("place running session %s: %s", pl.Session, res.Rejected[0].Reason)
		}
	}
	r.start()
	return nil
}

// registerLive registers the group's ALIVE agents with the replay's store
// and fleet, and says which agents are alive.
func (r *runner) registerLive(ctx context.Context, live Live) (map[domain.AgentID]bool, error) {
	now := r.clock.Now()
	alive := map[domain.AgentID]bool{}
	for n, a := range live.Agents {
		alive[a.ID] = a.Status == domain.AgentAlive
		if a.Status != domain.AgentAlive {
			continue // it takes nothing new while it is not back
		}
		a.ResourceGroup, a.Address, a.Runtime = live.Group.Name, "sim", "sim"
		got, err := r.st.RegisterAgent(ctx, a, now)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.ID, err)
		}
		if !a.Schedulable {
			if err := r.st.SetAgentSchedulable(ctx, a.ID, false); err != nil {
				return nil, err
			}
		}
		if err := r.fleet.add(got.ID, got.Epoch, r.clock, uint64(n+1)*0x9e3779b97f4a7c15); err != nil {
			return nil, err
		}
	}
	return alive, nil
}

// replayed is ls as the replay stores it: a PENDING session of the group
// on the sim runtime that exits after run, with only what the replay
// holds of its dependencies, job and array.
func replayed(group string, ls LiveSession, run time.Duration, now time.Time, known map[domain.SessionID]bool,
	jobs map[domain.JobID]bool, arrays map[domain.ArrayID]bool) store.NewSession {
	s := ls.Session
	s.ResourceGroup, s.Status, s.Image = group, domain.SessionPending, "exit:0"
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
	if !arrays[s.Array] {
		s.Array, s.ArrayIndex = "", 0 // nor is its array: no cap to hold
	}
	ks := make([]domain.Kernel, len(ls.Kernels))
	for i, k := range ls.Kernels {
		ks[i] = domain.Kernel{ID: k.ID, SessionID: s.ID, ClusterRole: k.ClusterRole, ClusterIdx: k.ClusterIdx,
			Image: s.Image, Architecture: k.Architecture, Requested: k.Requested.Clone(),
			Status: domain.KernelPending, StatusChangedAt: s.CreatedAt}
	}
	s.ClusterSize = len(ks)
	return store.NewSession{Session: s, Kernels: ks}
}

// createLive stores the replay's sessions: each array's elements with
// their array, in one CreateArray as production stores them, the rest
// one by one. An array counts only its elements in the replay; the ended
// ones no longer count toward its cap.
func (r *runner) createLive(ctx context.Context, arrays []domain.Array, made []store.NewSession) error {
	elems := map[domain.ArrayID][]store.NewSession{}
	for _, ns := range made {
		if ns.Session.Array != "" {
			elems[ns.Session.Array] = append(elems[ns.Session.Array], ns)
			continue
		}
		if err := r.st.CreateSession(ctx, ns.Session, ns.Kernels); err != nil {
			return fmt.Errorf("session %s: %w", ns.Session.ID, err)
		}
	}
	for _, a := range arrays {
		es := elems[a.ID]
		if len(es) == 0 {
			continue
		}
		delete(elems, a.ID) // one row per array, however often it is listed
		a.Count = len(es)
		if err := r.st.CreateArray(ctx, a, es); err != nil {
			return fmt.Errorf("array %s: %w", a.ID, err)
		}
	}
	return nil
}
